"""The jail: where sandbox.py runs untrusted programs, and how they are kept in.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite

Backend "local": each worker thread owns a fork server (host.py, server.py) under `unshare --net --pid --mount`;
each call a scratch dir and a uid of its own; each test case a child, PID 1 of a fresh pid namespace (leftovers
die with it), that confines itself before it reads the solution (confine.py):
  1. mounts: /proc of its pid namespace only, a /dev/shm of its own, emptied after each case;
  2. rlimits: address space, CPU (SIGKILL), processes of the uid, open files, file size, no core;
  3. Landlock: writes only beneath scratch; reads only beneath scratch and the interpreter's trees, never the
     checkout (tasks), the temp dir (other sandboxes), HOME (datasets) or confine.DATA_PACKAGES; no TCP, no
     signals or abstract sockets outside;
  4. setresuid/setresgid to the call's uid, no groups: no capabilities;
  5. no_new_privs and seccomp (x86_64): ptrace, mount, namespaces, bpf, keyctl, io_uring, modules, kexec and
     sockets other than AF_UNIX fail.
A layer this machine lacks is skipped with one warning and named in `ExecResult.fallbacks`. Not claimed: kernel
exploits, a bound on memory across processes, secrecy of earlier jobs' bytes in the server's memory; installed
packages and the names along a carved-out path stay readable; as PID 1 a program ignores the signals it sends
itself. Where that matters use "docker" (a container per call, no network) or "fusion" (SandboxFusion at
SANDBOX_FUSION_URL or backend="fusion:URL"): remote.py, with the same graders (graders.py: judge semantics;
strict.py: grading out of the solution's reach; lcb.py: LiveCodeBench's run_test).
"""

import os

# The project root: on the sandbox side's sys.path, taken off it before a program runs.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
