"""protocol.behaviour: what a workspace's functions do near their public tests, probed in the real sandbox."""

from __future__ import annotations

import time

import rollout
import sandbox
import tasks
from protocol import behaviour

OK = "def f(a, b):\n    return a + b\n"
OK2 = "def f(a, b):\n    s = b\n    s += a\n    return s\n"
ESCAPED = "def f(a, b):\n    return a + b if a < 3 else a * b\n"  # passes f(2, 3) == 5, not f(3, 3) == 6
PUBLIC = [tasks.Test("assert", "assert f(2, 3) == 5")]


def probe(code: str, tests=PUBLIC, fn_name=None):
    return behaviour.probe(sandbox.GradeJob(code=code, tests=tests, fn_name=fn_name), rollout._probe)


def test_versions_that_behave_alike_and_apart():
    """Two implementations agree on every probed input; a bug that passes the public test differs on one near it."""
    ok, ok2, bad = (probe(c)["f"] for c in (OK, OK2, ESCAPED))
    assert len(ok) >= 9 and ok.keys() == ok2.keys() == bad.keys()  # (2, 3) with a, then b, moved: one key each
    assert not behaviour.differ(ok, ok2) and behaviour.differ(ok, bad) and behaviour.differ(bad, ok2)
    assert not behaviour.differ(ok, {"other input": "x"})  # compared on common inputs only


def test_seeds_come_from_every_kind_of_test():
    """A stdio program's functions are probed from the arguments its own code passes them; a `call` test's from
    its JSON arguments; a function no test reaches, and one nested in another, are not probed."""
    glue = "import sys\nfor line in sys.stdin:\n    a, b = map(int, line.split())\n    print(f(a, b))\n"
    stdio = probe(OK + "\n\ndef unused(x):\n    return x\n\n" + glue, [tasks.Test("stdio", "2 3\n", "5\n")])
    assert set(stdio) == {"f"} and not behaviour.differ(stdio["f"], probe(OK)["f"])
    call = probe(OK + "\n\ndef g(a, b):\n    def inner(x):\n        return x\n    return inner(f(a, b))\n",
                 [tasks.Test("call", "2\n3", "5")], fn_name="g")
    assert set(call) == {"f", "g"}


def test_the_probe_survives_what_a_program_does():
    """A hang on a probed input costs CALL_S; output, exits and crashes of the program leave a result or None."""
    t = time.perf_counter()
    hang = probe("def f(a, b):\n    while a == 0:\n        pass\n    return a + b\n")
    assert "f" in hang and time.perf_counter() - t < behaviour.WALL_S
    assert behaviour.differ(hang["f"], probe(OK)["f"])  # f(0, 3) timed out
    noisy = probe("import sys\nprint('{\"f\": {\"x\": \"y\"}}')\n" + OK.replace("return", "print('z'); return"))
    assert not behaviour.differ(noisy["f"], probe(OK)["f"]) and "x" not in noisy["f"]
    for code in ("import os\nos._exit(3)\n", "raise SystemExit(1)\n", "def f(:\n", "import sys\nsys.stdout.close()\n"):
        got = probe(code)
        assert got is None or got == {}, code
