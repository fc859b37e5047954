"""bench/credit.py keeps running: a small run of one scenario with the partial-credit reward replays its
trajectories twice (graded and fraction), checks one against the other, and prints its table; bad flags are
one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/credit.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_a_small_fraction_run_prints_its_table():
    r = _run("--only", "helper", "--groups", "2", "--seeds", "0", "--pool", "32", "--rewards", "fraction")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^(helper WF fra G=(?:8|32))\s+\d+%(.*)$", r.stdout, re.M)}
    assert set(rows) == {"helper WF fra G=8", "helper WF fra G=32"}, r.stdout
    assert len(re.findall(r"\d\.\d\d/\d\.\d\d", rows["helper WF fra G=8"])) == 7  # six estimators and exact
    assert " bin " not in r.stdout and " gra " not in r.stdout   # only the reward asked for
    assert "goal (didpo ridge" in r.stdout


def test_bad_flags_are_one_line():
    for args, flag in ((("--rewards", "binary,partial"), "--rewards"), (("--pool", "16"), "--pool")):
        r = _run(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and flag in lines[0], r.stderr
