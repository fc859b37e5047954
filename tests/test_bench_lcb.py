"""bench/lcb.py: our LCB-exact grading gives LiveCodeBench's own verdicts on the bench's 80 samples.

    python -m pytest tests/test_bench_lcb.py -q

LIVECODEBENCH is what lcb_runner (LiveCodeBench 28fef95, evaluate_generations, 6 s per test) said of each sample,
recorded once with `python bench/lcb.py --lcb DIR` (its code is not ours to ship): 1 = every test passed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_our_lcb_files_hold_livecodebenchs_verdicts_and_our_pass_at_1(tmp_path):
    """bench/lcb_scores.py's samples run without LiveCodeBench's code: the eval_all file that its compute_scores
    reads holds, sample by sample, the verdicts its runner gave (LIVECODEBENCH), and the pass@1 compute_scores
    takes from it (the mean of the problems' "pass@1") is the one results.json reports."""
    import json

    spec = importlib.util.spec_from_file_location("bench_lcb_scores", ROOT / "bench" / "lcb_scores.py")
    scores = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scores)
    problems, gens = _bench().rows()
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in problems))
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": q, "code": c}) + "\n" for q, cs in gens.items() for c in cs))
    result, codegen, eval_all = scores.eval_run(["--path", str(tmp_path), "--samples", str(samples)], tmp_path / "o")
    graded = json.loads(eval_all.read_text())
    assert [g["question_id"] for g in graded] == [p["question_id"] for p in problems]
    assert "".join("1" if x else "0" for g in graded for x in g["graded_list"]) == LIVECODEBENCH
    assert [g["code_list"] for g in json.loads(codegen.read_text())] == [gens[p["question_id"]] for p in problems]
    assert sum(g["pass@1"] for g in graded) / len(graded) == pytest.approx(result["overall"]["pass@1"], abs=1e-12)
    assert result["overall"]["pass@1"] == pytest.approx(39 / 80)


def test_without_a_checkout_the_scores_bench_says_so_in_one_line():
    r = subprocess.run([sys.executable, "bench/lcb_scores.py"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.count("\n") == 1 and "pass --lcb DIR" in r.stdout
