"""What each top-level function of a workspace does on inputs near its public tests' (AlphaCode's clustering idea).

    probe_many(jobs, execute) -> [{function: {input: output}} or None]   one sandboxed run per public-test job
    python -m pytest tests/test_behaviour.py -q

The probe runs the public tests as the grader does, records each top-level function's arguments, calls it on
nearby inputs (`near`, one argument changed at a time; 0.2 s a call, 2 s in all) and keeps short hashes of the
outputs. Two versions of f that differ on an input both saw are not both correct, unless the input is outside the
task's domain (verdict.APART).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

PROBE = "_probe.py"
SEEDS = 3          # seeds kept per function (the first distinct argument tuples it was called with)
INPUTS = 40        # inputs per function at most
CALL_S, TOTAL_S = 0.2, 2.0
WALL_S = TOTAL_S + 8.0  # the sandbox's limit on one probe (the tests run once more, then the calls)

# Runs inside the sandbox beside the entry file; prints one JSON line: {function: {input hash: output hash}}.
_SCRIPT = r'''
import copy, hashlib, io, json, os, runpy, signal, sys, time, types
spec = json.loads(sys.stdin.read())
entry, out_fd = os.path.abspath(spec["entry"]), os.dup(1)
seeds, devnull = {}, open(os.devnull, "w")

def h(s):
    return hashlib.blake2b(s.encode("utf-8", "replace"), digest_size=6).hexdigest()

def record(frame, event, arg):
    code = frame.f_code
    if event != "call" or code.co_filename != entry or getattr(code, "co_qualname", "<") != code.co_name \
            or code.co_name[:1] == "<":  # a top-level def only: not a method, a nested def, a lambda, a genexpr
        return
    if code.co_flags & 0x0C or len(got := seeds.setdefault(code.co_name, [])) >= SEEDS:  # *args, **kwargs; enough
        return
    try:
        args = copy.deepcopy(tuple(frame.f_locals[n] for n in code.co_varnames[:code.co_argcount]))
        if repr(args) not in map(repr, got):
            got.append(args)
    except Exception:
        pass

def run(thunk, stdin=""):
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), devnull, devnull
    sys.setprofile(record)
    try:
        return thunk()
    except BaseException:
        return None
    finally:
        sys.setprofile(None)

g = {}
for t in spec["tests"]:
    if t["kind"] == "stdio":
        g = run(lambda: runpy.run_path(entry, run_name="__main__"), t["input"]) or g
    else:
        g = g or run(lambda: runpy.run_path(entry, run_name="solution")) or {}
        if t["kind"] == "assert":
            run(lambda: exec(compile(t["input"], "<test>", "exec"), g))
        elif callable(fn := g.get(spec["fn_name"] or "")):
            run(lambda: fn(*[json.loads(x) for x in t["input"].splitlines() if x.strip()]))
if not g:
    g = run(lambda: runpy.run_path(entry, run_name="solution")) or {}

def near(x):
    if isinstance(x, bool) or x is None:
        return [x]
    if isinstance(x, int):
        return [x, 0, 1, -1, x - 1, x + 1, -x, 2 * x, 10]
    if isinstance(x, float):
        return [x, 0.0, -x, x + 1, x / 2]
    if isinstance(x, str):
        return [x, "", x[:1], x[1:], x[::-1], x.upper(), " " + x + " ", x + " " + x, "  "]
    if isinstance(x, (list, tuple)):
        t, xs = type(x), list(x)
        out = [x, t(), t(xs[:1]), t(xs[1:]), t(xs[:-1]), t(xs[::-1]), t(xs + xs[:1]), t(xs * 2)]
        for i, e in enumerate(xs[:3]):
            out += [t(xs[:i] + [v] + xs[i + 1:]) for v in near(e)[1:4]]
        return out
    return [x]

def canon(v):
    if isinstance(v, float):
        return format(v, ".9g")
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + "(" + ",".join(canon(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ",".join(sorted(canon(k) + ":" + canon(x) for k, x in v.items())) + "}"
    return repr(v)[:10000]

class Late(BaseException):
    pass

def late(signum, frame):
    raise Late()

signal.signal(signal.SIGALRM, late)
result, start = {}, time.monotonic()
for name, ss in sorted(seeds.items()):
    fn = g.get(name)
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_filename != entry:
        continue
    inputs, seen = [], set()
    for s in ss:
        for i, a in enumerate(s):
            for v in near(a):
                args = s[:i] + (v,) + s[i + 1:]
                if (k := repr(args)) not in seen and len(inputs) < INPUTS:
                    seen.add(k)
                    inputs.append((k, args))
    out = {}
    for k, args in inputs:
        if time.monotonic() - start > TOTAL_S:
            break
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), devnull, devnull
        try:
            signal.setitimer(signal.ITIMER_REAL, CALL_S)
            got = canon(fn(*copy.deepcopy(args)))
        except Late:
            got = "!timeout"
        except BaseException as e:
            got = "!" + type(e).__name__
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out[h(k)] = h(got)
    result[name] = out
os.write(out_fd, ("\n" + json.dumps(result) + "\n").encode())
'''


def script() -> str:
    return f"SEEDS, INPUTS, CALL_S, TOTAL_S = {SEEDS}, {INPUTS}, {CALL_S}, {TOTAL_S}\n" + _SCRIPT


def probe(job, execute, entry: str = "solution.py") -> dict[str, dict[str, str]] | None:
    """{top-level function: {input hash: output hash}} of a public-test job's code (sandbox.GradeJob), or None if the
    probe failed; execute(files, stdin) runs `python PROBE` sandboxed among `files` and returns its stdout."""
    spec = {"entry": entry, "fn_name": job.fn_name, "tests": [{"kind": t.kind, "input": t.input} for t in job.tests]}
    try:
        got = json.loads(execute({entry: job.code, PROBE: script()}, json.dumps(spec)).rstrip("\n").rsplit("\n", 1)[-1])
    except (ValueError, IndexError):
        return None
    ok = isinstance(got, dict) and all(isinstance(f, str) and isinstance(io, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in io.items()) for f, io in got.items())
    return got if ok else None


def probe_many(jobs: list, execute, workers: int | None = None) -> list[dict | None]:
    """probe() of each job, in parallel threads (each waits on its own sandboxed process); results in order."""
    with ThreadPoolExecutor(workers or len(os.sched_getaffinity(0))) as ex:
        return list(ex.map(lambda j: probe(j, execute), jobs))


def differ(a: dict[str, str], b: dict[str, str], skip: set = frozenset()) -> bool:
    """Two versions' records of one function differ on an input both were called with (not in skip)."""
    return any(b.get(k, v) != v and k not in skip for k, v in a.items())
