"""The jail: where sandbox.py runs untrusted programs, and how they are kept in.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite

Backend "local": a fork server per worker thread (host.py, server.py) in its own network, pid and mount
namespaces; a scratch dir and a uid per call; per test case a child, PID 1 of a fresh pid namespace (leftovers die
with it), that confines itself before it reads the solution (confine.py):
  1. mounts: /proc of its pid namespace only, a /dev/shm of its own (no other process's memory or files);
  2. rlimits: address space, CPU, processes of the uid, open files, file size (no exhaustion of the host);
  3. Landlock: writes only beneath scratch, reads only beneath scratch and the interpreter's trees (never the
     checkout, other sandboxes, HOME or confine.DATA_PACKAGES: no copied tests), no TCP, no signals outside;
  4. setresuid/setresgid to the call's uid, no groups (no capabilities, no other call's processes);
  5. no_new_privs and seccomp (x86_64): no ptrace, mount, namespaces, bpf, keyctl, io_uring, modules, kexec or
     non-AF_UNIX sockets (no escape through the kernel's larger surfaces).
A layer this machine lacks is skipped with one warning and named in `ExecResult.fallbacks`. Not claimed: kernel
exploits, a bound on memory across processes, secrecy of earlier jobs' bytes in the server's memory; installed
packages and the names along a carved-out path stay readable; as PID 1 a program ignores its own signals. Where
that matters: "docker" or "fusion" (remote.py), with the same graders (graders.py, strict.py, lcb.py).
"""

import os

# The project root: on the sandbox side's sys.path, taken off it before a program runs.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
