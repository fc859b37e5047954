"""The caller's side of the jail: start a sandbox for one job and stream its records back.

    python -m pytest tests/test_sandbox.py -q

`launch(files, job, lim, backend, deadline, on_record)` runs one job and returns a `Run` (records, what held, a
fatal error); `on_record` returning False stops it. "local" takes an idle fork server from the pool and gives it
back (one that missed its deadline or died is replaced); "docker" and "fusion": remote.py.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field

from jail import ROOT
from jail.remote import docker_run, fusion_run
from jail.server import run_env

_WARNED: set[str] = set()
_UID_COUNTER = iter(range(1 << 62))
_ZYGOTES: list[_Zygote] = []  # idle fork servers
_ZLOCK = threading.Lock()
_SCRATCH: list[str] = []
_SCRATCH_LOCK = threading.Lock()


@dataclass
class Run:
    records: list = field(default_factory=list)
    isolation: dict = field(default_factory=dict)
    fallbacks: list = field(default_factory=list)
    fatal: str = ""
    diag: str = ""
    timed_out: bool = False
    wall_s: float = 0.0


def _warn_once(msg: str) -> None:
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(f"sandbox: {msg}", RuntimeWarning, stacklevel=3)


@functools.cache
def _probe_unshare() -> tuple[list[str], list[str]]:
    """The unshare flags this machine allows (probed once), and what is missing."""
    exe = shutil.which("unshare")
    flags: list[str] = []
    missing: list[str] = []
    base = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    for f in ("--net", "--pid", "--mount"):
        ok = exe and subprocess.run([exe, *base, f, "--fork", "true"], capture_output=True).returncode == 0
        (flags if ok else missing).append(f)
    if exe and flags and base:
        flags = base + flags
    names = {"--net": "network namespace", "--pid": "pid namespace", "--mount": "mount namespace"}
    return ([exe, *flags, "--fork", "--kill-child"] if exe and flags else [],
            [f"unshare(1) cannot make a {names[f]} for the fork server" for f in missing] if exe else
            ["unshare(1) not found: the fork server shares the host's network, pid and mount namespaces"])


def launch(files: dict, job: dict, lim: dict, backend: str, deadline: float, on_record=None) -> Run:
    name = backend.split(":", 1)[0]
    if name == "local":
        return _launch_local(files, job, lim, deadline, on_record)
    payload = {"job": job, "limits": lim, "files": files}
    if name == "docker":
        lines, diag, timed_out = docker_run(payload, lim, deadline)
    else:
        lines, diag, timed_out = fusion_run(payload, lim, deadline, backend)
    run = Run(diag=diag, timed_out=timed_out)
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and not _take_record(run, rec, on_record):
            break
    run.isolation.setdefault("backend", name)
    return run


def _take_record(run: Run, rec: dict, on_record) -> bool:
    if rec.get("t") == "iso":
        run.isolation, run.fallbacks = rec["applied"], rec["fallbacks"]
        for f in run.fallbacks:
            _warn_once(f)
        return True
    if rec.get("t") == "fatal":
        run.fatal = str(rec.get("msg"))
        return True
    run.records.append(rec)
    return on_record(rec) if on_record else True


class _Zygote:
    """A fork server (server.zygote) in its own namespaces, started once per worker: a job costs a fork, not the
    ~60 ms of interpreter start, imports and namespace setup."""

    def __init__(self):
        prefix, self.missing = _probe_unshare()
        mountns = "--mount" in prefix
        boot = f"import sys; sys.path.insert(0, {ROOT!r}); from jail import server; server.zygote({mountns})"
        self.proc = subprocess.Popen([*prefix, sys.executable, "-I", "-B", "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd="/", env=run_env("/"), start_new_session=True)
        self.buf, self.jobs = b"", 0
        self.ready = self._read_until(lambda rec: rec.get("t") == "ready", time.monotonic() + 60)
        if self.ready is None:
            self.kill()
            raise RuntimeError("sandbox: the local fork server did not start (its error is printed above)")

    def _read_until(self, pred, deadline, each=None):
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and pred(rec):
                    return rec
                if each and isinstance(rec, dict):
                    each(rec)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            if not (data := os.read(fd, 1 << 16)):
                return None
            self.buf += data

    def run(self, payload: dict, deadline: float, on_record) -> Run:
        run, t0 = Run(), time.monotonic()
        self.jobs += 1
        jid = payload["id"] = self.jobs
        body = json.dumps(payload).encode()
        stopped = False

        def each(rec):
            nonlocal stopped
            if not _take_record(run, rec, on_record) and not stopped:
                stopped = True
                self._send({"op": "stop", "id": jid})

        self._send({"op": "job", "id": jid, "len": len(body)}, body)
        done = self._read_until(lambda r: r.get("t") == "done" and r.get("id") == jid, t0 + deadline, each)
        run.wall_s = time.monotonic() - t0
        if done is None:  # deadline, or the server died: throw it away, the next call starts a new one
            run.timed_out = self.proc.poll() is None
            if not run.timed_out and not run.fatal:
                run.fatal = f"sandbox fork server exited with {self.proc.returncode}"
            self.kill()
        elif not run.isolation and not run.fatal:
            run.fatal = "the sandbox finished the job without reporting its setup"
        for f in self.missing:
            _warn_once(f)
        run.fallbacks = self.missing + run.fallbacks
        return run

    def _send(self, head: dict, body: bytes = b"") -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.write(json.dumps(head).encode() + b"\n" + body)
            self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        # Killing unshare's group takes PID 1 of the namespace (--kill-child) and everything in it.
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()


@atexit.register
def _close_zygotes() -> None:
    while _ZYGOTES:
        _ZYGOTES.pop().kill()


def _forget_zygotes() -> None:
    # A forked host process must not talk to its parent's fork servers over the shared pipes.
    global _ZLOCK
    _ZYGOTES.clear()
    _ZLOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_zygotes)


def scratch_root() -> str:
    """This process's directory of scratch dirs only, which Landlock's reads layer grants whole: the temp dir itself
    may hold a checkout or a venv, so it is never granted."""
    with _SCRATCH_LOCK:
        if not _SCRATCH or not os.path.isdir(_SCRATCH[0]):
            d = tempfile.mkdtemp(prefix="didpo-scratch-")
            os.chmod(d, 0o711)  # a sandbox's uid may pass through to its own scratch, never list the others
            pid = os.getpid()  # a forked child that exits through atexit must not remove its parent's
            atexit.register(lambda: os.getpid() == pid and shutil.rmtree(d, True))
            _SCRATCH[:] = [d]
        return _SCRATCH[0]


def _launch_local(files, job, lim: dict, deadline: float, on_record) -> Run:
    with _ZLOCK:
        z = _ZYGOTES.pop() if _ZYGOTES else None
    z = z if z and z.alive() else _Zygote()
    root = os.geteuid() == 0
    # A uid per execution (RLIMIT_NPROC counts per uid; leftovers are found by uid), unique among live processes.
    uid = 1_000_000 + (os.getpid() % (1 << 20)) * 1024 + next(_UID_COUNTER) % 1024 if root else 0
    scratch = tempfile.mkdtemp(prefix="didpo-sbx-", dir=scratch_root())
    try:
        os.makedirs(os.path.join(scratch, ".tmp"))
        for rel, text in files.items():
            path = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(text.encode() if isinstance(text, str) else text)
        if uid:
            for d, dirs, fs in os.walk(scratch):
                for p in [d] + [os.path.join(d, x) for x in dirs + fs]:
                    os.chown(p, uid, uid)
        payload = {"job": job, "limits": lim, "scratch": scratch, "uid": uid, "env": run_env(scratch)}
        try:
            run = z.run(payload, deadline, on_record)
        except BaseException:
            z.kill()
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if z.alive():
        with _ZLOCK:
            _ZYGOTES.append(z)
    return run
