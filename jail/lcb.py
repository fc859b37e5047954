"""LiveCodeBench's grader, reproduced (lcb_runner/evaluation/testing_util.py), run inside our sandbox.

    python -m pytest tests/test_sandbox.py -q -k lcb

`lcb_child(path, job, timeout)` runs all tests of one program in one process, as LCB's run_test does, and writes
one record per test on fd 3 ({"k": i, "lcb": True | -1 | -2 | -3 | -4, "msg": ...}, LCB's codes), so numbers
compare with published results. It departs from judge mode as LCB does: LCB's imports and recursion limit, stdio
programs wrapped in a function called once per test in one process (SystemExit swallowed), LCB's mocks of stdin,
stdout and open, its reliability_guard, plain == on call results (a top-level tuple made a list), a per-test
SIGALRM and LCB's global timeout, numpy preloaded where the source names it. tests/test_sandbox.py's GOLDEN:
it agrees with LCB's own run_test on all 45 tricky programs there, judge mode differs on 16.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import sys

from jail.graders import stdio_mismatch, write_all

_LCB_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
                "itertools", "functools", "operator", "io", "sys", "json")
_LCB_IMPORTS = ("".join(f"from {m} import *\n" for m in (*_LCB_MODULES, "builtins", "typing"))
                + "".join(f"import {m}\n" for m in _LCB_MODULES) + "sys.setrecursionlimit(50000)\n")


def _lcb_unwrap_main(code: str) -> str:
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


def lcb_child(path: str, job: dict, timeout: float) -> None:
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
        # LCB's process imported numpy before its guard (importing it after fails); ~130 ms, so only where it matters.
        try:
            import numpy  # noqa: F401
        except ImportError:
            pass

    def report(k, code, msg=""):
        write_all(3, (json.dumps({"k": k, "lcb": code, "msg": msg}) + "\n").encode())

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
        if (method := getattr(sol, job["fn_name"] if call else "wrapped_function", None)) is None:
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
