"""Judge semantics inside the case child: run one test of a program as a real judge would.

    python -m pytest tests/test_sandbox.py -q -k "stdio or call or exit or syntax"

`judge_case(case, path, fn_name)`, in the confined child: stdio runs the file as __main__; call imports it as
"solution" and writes fn_name's JSON result on fd 3; assert runs the test in its namespace and writes {"ok": true}.
"""

from __future__ import annotations

import json
import os
import sys

from jail import ROOT

JUDGE_CALL_PRELUDE = "".join(f"from {m} import *\n" for m in (
    "typing", "collections", "heapq", "bisect", "itertools", "functools", "math")) + (
    "import collections, heapq, bisect, itertools, functools, math, string, re\n")
_KEEP: list = []


def write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


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


def error_detail(rec: dict) -> str:
    res = rec.get("res") or {}
    if res.get("exc") == "SystemExit":
        return f"SystemExit({res.get('msg', '')}) before the tests finished"
    if res.get("exc"):
        msg = res.get("msg", "")
        return f"{res['exc']}: {msg}"[:300] if msg else res["exc"]
    lines = [s for s in rec["err"].strip().splitlines() if s.strip()]
    return (f"exit code {rec['rc']}" + (f": {lines[-1].strip()}" if lines else ""))[:300]


def fresh_stdio() -> None:
    import io
    # A fresh interpreter's streams (UTF-8, not a tty); the old ones kept alive: collecting them would close fds 0-2.
    _KEEP.append((sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                                   encoding="utf-8")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                                   encoding="utf-8", errors="backslashreplace", line_buffering=True)


def put_result(d: dict) -> None:
    try:
        write_all(3, (json.dumps(d) + "\n").encode())
    except Exception:
        pass


def flush() -> int:
    rc = 0
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            rc = 120
    return rc


def judge_case(case: dict, path: str, fn_name: str | None) -> None:
    """One test in a fresh forked process, with a real judge's semantics."""
    import builtins
    import traceback
    import types
    fresh_stdio()
    sys.path[:] = [os.path.dirname(path)] + [p for p in sys.path if p != ROOT]
    kind = case["kind"]
    name = "__main__" if kind == "stdio" else "solution"  # call/assert: imported, so main blocks don't run
    mod = types.ModuleType(name)
    mod.__file__, mod.__builtins__ = path, builtins
    sys.modules[name], sys.argv, g = mod, [path], mod.__dict__
    rc = 0
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
        if kind == "stdio":
            exec(code, g)
        elif kind == "call":
            exec(JUDGE_CALL_PRELUDE, g)
            exec(code, g)
            fn = getattr(g["Solution"](), fn_name, None) if isinstance(g.get("Solution"), type) else g.get(fn_name)
            if not callable(fn):
                raise NameError(f"no function or Solution method named {fn_name!r}")
            ret = fn(*[json.loads(s) for s in case["input"].split("\n") if s.strip()])
            try:
                text = json.dumps(ret)
            except (TypeError, ValueError) as e:
                raise TypeError(f"return value is not JSON-serializable ({type(ret).__name__}): {e}") from None
            put_result({"ret": text})
            os._exit(flush())
        else:
            exec(code, g)
            exec(compile(case["input"], "<test>", "exec", dont_inherit=True), g)
            put_result({"ok": True})
            os._exit(flush())
    except SystemExit as e:
        c = e.code
        rc = 0 if c is None else c if isinstance(c, int) else 1
        if not isinstance(c, (int, type(None))):
            print(c, file=sys.stderr)
        if kind != "stdio":
            put_result({"exc": "SystemExit", "msg": repr(c)})
    except BaseException as e:
        put_result({"exc": type(e).__name__, "msg": str(e)[:300]})
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
    flushed = flush()
    os._exit((rc & 0xFF) or flushed)
