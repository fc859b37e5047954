"""bench/lcb.py: our LCB-exact grading gives LiveCodeBench's own verdicts on the bench's 80 samples.

    python -m pytest tests/test_bench_lcb.py -q

LIVECODEBENCH is what lcb_runner (LiveCodeBench 28fef95, evaluate_generations, 6 s per test) said of each sample,
recorded once with `python bench/lcb.py --lcb DIR` (its code is not ours to ship): 1 = every test passed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIVECODEBENCH = "11000101011100011000110010001111010010011100001001110001101011000110011100110110"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_lcb", ROOT / "bench" / "lcb.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_our_lcb_grading_gives_livecodebenchs_verdicts(tmp_path):
    import json

    import benchmarks

    bench = _bench()
    problems, gens = bench.rows()
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in problems))
    by_id = {t.id: t for t in benchmarks.load("livecodebench", tmp_path)}
    got = bench.ours([by_id[r["question_id"]] for r in problems], gens, workers=2, timeout=6)
    assert "".join("1" if x else "0" for x in got) == LIVECODEBENCH


def test_without_a_checkout_the_bench_says_so_in_one_line():
    r = subprocess.run([sys.executable, "bench/lcb.py"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.count("\n") == 1 and "pass --lcb DIR" in r.stdout
