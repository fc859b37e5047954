"""The sandbox side: the local fork server's loop, and one confined child per test case.

    python -m pytest tests/test_sandbox.py -q

`zygote(mountns)`: the local fork server, jobs on stdin, JSON records on stdout ({"t": "iso"}, then "case" per test
or "exec", "fatal", "done"); `boot(payload)`: one job in docker or SandboxFusion. Per case a child confines itself
(confine.py) before it runs the grader; nothing here reads a file untrusted code could touch while we are root.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import importlib
import json
import math
import os
import selectors
import signal
import time

from jail import confine as jc
from jail.graders import error_detail, judge_case, put_result, write_all
from jail.lcb import lcb_child
from jail.strict import strict_case

_Z: dict = {"isolate": False, "applied": {}, "fallbacks": [], "inbuf": bytearray(), "job": None}
_CLONE_NEWPID = 0x20000000


def _emit(fd: int, rec: dict) -> None:
    write_all(fd, (json.dumps(rec) + "\n").encode())


def boot(payload_path: str, report_fd: int = 1) -> None:
    """Entry point inside a docker container or a SandboxFusion run: they isolate; we limit and run."""
    try:
        with open(payload_path, "rb") as f:
            cfg = json.loads(f.read())
        cfg["scratch"] = scratch = cfg.get("scratch") or os.path.join(os.getcwd(), "w")
        os.makedirs(os.path.join(scratch, ".tmp"), exist_ok=True)
        for rel, text in (cfg.get("files") or {}).items():
            path = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        cfg.setdefault("env", {"HOME": scratch, "TMPDIR": os.path.join(scratch, ".tmp"), "PATH": os.environ.get(
            "PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"})
        _serve(cfg, lambda rec: _emit(report_fd, rec))
    except BaseException as e:
        _emit(report_fd, {"t": "fatal", "msg": f"{type(e).__name__}: {e}"})
    os._exit(0)


def zygote(mountns: bool) -> None:
    """The local fork server, PID 1 of its pid namespace: set up once, then serve jobs from stdin."""
    applied = {"backend": "local", "net": "network namespace" if jc.netns_is_empty() else "none (host network)"}
    fallbacks: list = []
    lc = jc.libc()
    lc.prctl(36, ctypes.c_long(1), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))  # CHILD_SUBREAPER
    if mountns:
        try:
            # Once for the whole server: a mount namespace per case would cost more than the rest of the confinement.
            applied["mounts"] = jc.private_mounts(os.getpid() == 1, 64, jc.expose_paths())
        except OSError as e:
            fallbacks.append(f"cannot set up the server's private mounts ({e})")
            mountns = False
    _Z.update(isolate=True, applied=applied, fallbacks=fallbacks, mountns=mountns,
              reachable=jc.reachable_by_others(), own_pidns=os.open("/proc/self/ns/pid", os.O_RDONLY),
              roots=jc.read_roots(), reads={})
    _Z["carved"] = jc.readable_paths(_Z["roots"])
    # Everything a case needs, imported once here and inherited by every fork (unittest.mock: lcb mode's patch of
    # stdin, 25-50 ms to import, per case otherwise).
    for m in ("atexit", "bisect", "decimal", "faulthandler", "unittest.mock"):
        importlib.import_module(m)
    jc.seccomp_prog()
    gc.freeze()  # the server's objects: never traversed by a child's GC, so their pages stay shared
    _emit(1, {"t": "ready"})
    while True:
        cfg = _next_job()
        _Z["job"], _Z["stopped"] = cfg["id"], False
        if mountns:  # Landlock: the reads layer once per scratch root, the job's layer per job (confine.py)
            parent = os.path.dirname(cfg["scratch"].rstrip("/"))
            _Z["rulesets"] = jc.landlock_layers(cfg["scratch"], _Z["roots"], _Z["carved"], _Z["reads"].get(parent))
            _Z["reads"][parent] = _Z["rulesets"][0]
        try:
            _serve(cfg, lambda rec: _emit(1, rec))
        except Exception as e:
            _emit(1, {"t": "fatal", "msg": f"{type(e).__name__}: {e}"})
        finally:
            if _Z.get("rulesets") and _Z["rulesets"][1][0] >= 0:
                os.close(_Z.pop("rulesets")[1][0])
        _emit(1, {"t": "done", "id": cfg["id"]})


def _next_job() -> dict:
    buf = _Z["inbuf"]
    while True:
        while b"\n" not in buf:
            _fill_inbuf()
        i = buf.index(b"\n")
        head = json.loads(bytes(buf[:i]))
        del buf[: i + 1]
        if head.get("op") != "job":
            continue  # a stop request for a job that already ended
        while len(buf) < head["len"]:
            _fill_inbuf()
        body = bytes(buf[: head["len"]])
        del buf[: head["len"]]
        return dict(json.loads(body), id=head["id"])


def _fill_inbuf() -> None:
    if not (data := os.read(0, 1 << 20)):  # the host is gone: so are we, and our namespace with us
        os._exit(0)
    _Z["inbuf"] += data


def _check_stop() -> bool:
    """Read pending host messages; True if the host asked to stop the current job."""
    _fill_inbuf()
    buf = _Z["inbuf"]
    while b"\n" in buf:
        i = buf.index(b"\n")
        head = json.loads(bytes(buf[:i]))
        del buf[: i + 1]
        if head.get("op") == "stop" and head.get("id") == _Z["job"]:
            _Z["stopped"] = True
    return _Z.get("stopped", False)


def _serve(cfg: dict, emit) -> None:
    """Run one job: each test case in a fresh confined child; one record per case."""
    job, lim = cfg["job"], cfg["limits"]
    iso_sent = False

    def case(run, stdin: bytes, wall: float, cpu: float) -> dict:
        nonlocal iso_sent
        rec = _case(cfg, run, stdin, wall, cpu)
        if not iso_sent:
            if "iso" not in rec:
                emit({"t": "fatal", "msg": f"sandbox setup failed: {rec['err'].strip()[-300:]}"})
                return {}
            iso_sent = True
            emit({"t": "iso", **rec["iso"]})
        rec.pop("iso", None)
        return rec

    if job["kind"] == "exec":
        argv = job["argv"]
        rec = case(lambda: os.execvpe(argv[0], argv, dict(os.environ)), job["stdin"].encode("latin-1"),
                   lim["wall_s"], lim["cpu_s"])
        if rec:
            rec.pop("res_lines")
            emit({"t": "exec", **rec})
        return
    cases, path = job["cases"], os.path.join(cfg["scratch"], job["entry"])
    if job["mode"] == "lcb" and {c["kind"] for c in cases} - {"assert"}:
        n = len(cases)
        rec = case(lambda: lcb_child(path, job, lim["wall_s"]), b"", (lim["wall_s"] + 1.0) * n + 5.0,
                   lim["cpu_s"] * n + 1)  # LCB's global timeout
        if not rec:
            return
        got = 0
        for d in rec["res_lines"]:
            if d.get("k") == got:
                emit({"t": "case", "k": got, "lcb": d.get("lcb"), "msg": str(d.get("msg", ""))})
                got += 1
        if got < n and not (got and job["stop"]) and not _Z.get("stopped"):
            why = "global timeout" if rec["timed_out"] else f"process died ({error_detail({**rec, 'res': {}})})"
            emit({"t": "case", "k": got, "lcb": -1, "msg": why})
        return
    for k, c in enumerate(cases):
        strict = job["mode"] == "strict" and c["kind"] != "stdio"  # stdio: stdout and exit code are the verdict
        rec = case(lambda: (strict_case if strict else judge_case)(c, path, job.get("fn_name")),  # noqa: B023
                   c["input"].encode() if c["kind"] == "stdio" else b"", lim["wall_s"], lim["cpu_s"])
        if not rec or _Z.get("stopped"):
            return
        lines = [d for d in rec.pop("res_lines") if "iso" not in d]
        res = lines[-1] if lines else {}
        if strict and "urc" in res:  # written by H, out of the solution's reach: U's exit status
            rec["rc"] = res.pop("urc")
        emit({"t": "case", "k": k, "res": res, **rec})
        # The host decides pass or wrong; a process that failed on its own is already a failure.
        if _Z.get("stopped") or job["stop"] and (rec["rc"] != 0 or rec["timed_out"] or rec["output_limit"]):
            return


def _case(cfg: dict, run, stdin: bytes, wall: float, cpu: float) -> dict:
    """Fork one confined child for `run`; it is PID 1 of a fresh pid namespace where the kernel allows."""
    pidns = False
    if _Z["isolate"]:
        lc = jc.libc()
        # Reset pid_for_children to our own namespace, then unshare: the next fork is PID 1 of a new one.
        pidns = lc.setns(_Z["own_pidns"], _CLONE_NEWPID) == 0 and lc.unshare(_CLONE_NEWPID) == 0

    def target():
        if _Z["isolate"]:
            iso = jc.confine(cfg, pidns, cpu, _Z)
        else:
            jc.set_rlimits(cfg["limits"], cpu)
            iso = {"applied": {}, "fallbacks": []}
        os.chdir(cfg["scratch"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        put_result({"iso": iso})
        run()

    rec = _run_child(target, stdin, cfg["limits"], wall, cpu, watch_host=_Z["isolate"])
    if _Z["isolate"] and _Z["mountns"]:
        jc.empty_dir("/dev/shm")  # the server's private /dev/shm: nothing carries over to the next case
    if _Z["isolate"] and not pidns:
        if cfg["uid"]:
            _sweep_uid(cfg["uid"])  # no pid namespace: find the leftovers by their uid
        end = time.monotonic() + 1.0  # and reap them: as child subreaper, orphans are ours
        while time.monotonic() < end:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    time.sleep(0.005)
            except ChildProcessError:
                break
    lines = []
    for line in rec.pop("res").splitlines():
        try:
            d = json.loads(line)
        except Exception:  # anything the program wrote there itself
            continue
        if isinstance(d, dict):
            lines.append(d)
    if lines and isinstance(lines[0].get("iso"), dict):
        rec["iso"] = lines[0]["iso"]
    rec["res_lines"] = lines[1:] if "iso" in rec else lines
    return rec


def _run_child(target, stdin: bytes, lim: dict, wall: float, cpu: float, watch_host: bool = False) -> dict:
    """Fork `target` with stdin, stdout, stderr and a result pipe on fd 3; enforce wall clock and output caps."""
    fin = os.memfd_create("stdin")
    write_all(fin, stdin)
    os.lseek(fin, 0, 0)
    pipes = [os.pipe() for _ in range(3)]
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            os.dup2(fin, 0)
            for fd, (_, w) in zip((1, 2, 3), pipes):
                os.dup2(w, fd)
            # The job's Landlock rulesets, moved to fds 4, 5 by way of fds >= 100 (none overwrites another).
            keep = [(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) if fd >= 0 else -1, what)
                    for fd, what in _Z.get("rulesets", [])]
            for k, (fd, _) in enumerate(keep):
                if fd >= 0:
                    os.dup2(fd, 4 + k, inheritable=False)
            _Z["rulesets"] = [(4 + k if fd >= 0 else -1, what) for k, (fd, what) in enumerate(keep)]
            os.closerange(4 + len(keep), 1 << 16)  # the host channel and everything else of the server
            target()
        except BaseException as e:
            os.write(2, f"sandbox: cannot run the program: {type(e).__name__}: {e}\n".encode())
        os._exit(127)
    os.close(fin)
    for _, w in pipes:
        os.close(w)
    cap = int(lim["output_bytes"])
    bufs = {r: bytearray() for r, _ in pipes}
    trunc = {r: False for r, _ in pipes}
    sel = selectors.DefaultSelector()
    for r, _ in pipes:
        sel.register(r, selectors.EVENT_READ)
    pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    if watch_host:
        sel.register(0, selectors.EVENT_READ)  # the host may ask us to stop (its first failure is known)
    killed, status, ru = "", None, None

    def kill(why):
        nonlocal killed
        killed = killed or why
        for target_pid in (-pid, pid):
            with contextlib.suppress(OSError):
                os.kill(target_pid, signal.SIGKILL)

    while status is None:
        left = t0 + wall - time.monotonic()
        if left <= 0 and not killed:
            kill("wall")
        events = sel.select(0.01 if killed else max(0.0, left) if pidfd is not None else max(0.0, min(left, 0.02)))
        for key, _ in events:
            if key.fd == pidfd:
                continue
            if key.fd == 0:
                if _check_stop():
                    kill("stop")
                continue
            if not (data := os.read(key.fd, 1 << 16)):
                sel.unregister(key.fd)
                continue
            b = bufs[key.fd]
            b += data
            if len(b) > cap:
                del b[cap:]
                trunc[key.fd] = True
                kill("output")
        p, st, ru = os.wait4(pid, os.WNOHANG)
        if p:
            status = st
    wall_used = time.monotonic() - t0
    with contextlib.suppress(OSError):
        os.kill(-pid, signal.SIGKILL)  # the rest of its process group
    # Drain what is already written; processes that escaped the group may hold the pipes open.
    for key, _ in sel.select(0):
        if key.fd not in (0, pidfd) and len(bufs[key.fd]) <= cap:
            with contextlib.suppress(OSError):
                bufs[key.fd] += os.read(key.fd, cap + 1 - len(bufs[key.fd]) or 1)
    for r, _ in pipes:
        if len(bufs[r]) > cap:
            del bufs[r][cap:]
            trunc[r] = True
        os.close(r)
    # Closed now: left to the GC, its epoll fd would be closed in some later child, where the number is reused.
    sel.close()
    if pidfd is not None:
        os.close(pidfd)
    rc = os.waitstatus_to_exitcode(status)
    (o, _), (e, _), (r3, _) = pipes
    dec = lambda fd: bufs[fd].decode("utf-8", "replace")  # noqa: E731
    used = ru.ru_utime + ru.ru_stime
    # Killed by RLIMIT_CPU (rusage lags the kill a little), not by us and not for memory.
    cpu_limit = not killed and rc in (-signal.SIGKILL, -signal.SIGXCPU) and used >= 0.9 * math.ceil(cpu)
    return {"rc": rc, "out": dec(o), "err": dec(e), "res": dec(r3), "out_trunc": trunc[o], "err_trunc": trunc[e],
            "output_limit": killed == "output", "timed_out": killed == "wall" or cpu_limit, "cpu_limit": cpu_limit,
            "wall": round(wall_used, 4), "cpu": round(used, 4)}


def run_env(scratch: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": os.path.join(scratch, ".tmp"),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


def _sweep_uid(uid: int) -> None:
    """Kill every process of `uid`: kill(-1) sent as that uid reaches exactly its processes."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(5):  # a few rounds catch processes forked while the first one ran
                os.kill(-1, signal.SIGKILL)  # ESRCH ends it early; killed zombies still count as found
                time.sleep(0.001)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
