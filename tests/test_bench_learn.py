"""bench/learn.py keeps running: --smoke trains every algorithm on the tiny model and writes a JSON and a
PNG whose numbers are those of the runs' own metrics.jsonl; the window statistics are checked by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import learn  # noqa: E402


def test_window_and_bootstrap_by_hand():
    assert [learn.window(n) for n in (1, 3, 5, 9, 12, 19, 20, 50)] == [1, 1, 2, 4, 6, 9, 10, 10]
    s = learn.curve_stats([0.0, 0.5, 0.25, 1.0, 0.75])  # window 2: first [0, .5], last [1, .75]
    assert s["window"] == 2 and s["first_mean"] == 0.25 and s["last_mean"] == 0.875
    assert s["diff"] == pytest.approx(0.625)
    # Resampled means of two 2-step windows: the difference lies in [1 - .5, .75 - 0] ... [.75 - .5, 1 - 0].
    assert 0.25 <= s["ci95"][0] < s["diff"] < s["ci95"][1] <= 1.0
    flat = learn.curve_stats([0.3] * 6)
    assert flat["window"] == 3
    assert flat["diff"] == 0.0 and flat["ci95"] == [0.0, 0.0]
    assert learn.curve_stats([0.0, 1.0, 1.0])["ci95"] is None  # one step per window: nothing to resample


def test_split_is_disjoint_and_from_the_tier(tmp_path):
    train_p, held_p, held = learn.split_tasks(ROOT / "data" / "tasks.jsonl", "trivial", 5, 0, tmp_path)
    tr = [json.loads(x) for x in train_p.read_text().splitlines()]
    he = [json.loads(x) for x in held_p.read_text().splitlines()]
    assert [r["id"] for r in he] == held and len(he) == 5 and len(tr) == 10
    assert not {r["id"] for r in tr} & set(held)
    assert {r["meta"]["difficulty"] for r in tr + he} == {"trivial"}


def test_smoke_writes_json_and_png_from_the_runs(tmp_path):
    out = tmp_path / "learn"
    r = subprocess.run([sys.executable, "bench/learn.py", "--smoke", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "learn.json").read_text())
    assert set(res["algos"]) == {"didpo", "grpo", "gigpo"}
    assert 0.0 <= res["pass1_before"] <= 1.0 and len(res["heldout"]) == 2
    for algo, s in res["algos"].items():
        rows = [json.loads(x) for x in (Path(s["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
        rewards = [row["reward"] for row in rows if "reward" in row]
        assert s["rewards"] == rewards and len(rewards) == 6 and s["window"] == 3, algo
        assert s["first_mean"] == pytest.approx(np.mean(rewards[:3]))
        assert s["last_mean"] == pytest.approx(np.mean(rewards[-3:]))
        assert len(s["step_s"]) == 6 and min(s["step_s"]) > 0, algo
        assert s["diff"] == pytest.approx(s["last_mean"] - s["first_mean"])
        assert s["ci95"][0] <= s["diff"] <= s["ci95"][1]
        assert 0.0 <= s["pass1_after"] <= 1.0
        results = json.loads((out / f"eval-{algo}" / "results.json").read_text())
        assert s["pass1_after"] == results["overall"]["pass@1"]
        assert results["config"]["model"].endswith(f"{algo}/export")
    assert (out / "learn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "reward per step:" in r.stdout and "pass@1 after" in r.stdout
    # A second run into the same dir refuses in one line instead of mixing two runs.
    again = subprocess.run([sys.executable, "bench/learn.py", "--smoke", "--out", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and again.stderr.startswith("error: --out")


def test_paired_last_by_hand():
    p = learn.paired_last([0.0, 0.0, 0.5, 1.0], [0.5, 0.5, 0.25, 0.5])  # window 2: differences [.25, .5]
    assert p["window"] == 2 and p["diff"] == pytest.approx(0.375)
    assert 0.25 <= p["ci95"][0] <= p["diff"] <= p["ci95"][1] <= 0.5


def _fake_run(d: Path, algo: str, rewards: list[float], lr: float = 5e-5) -> str:
    d.mkdir(parents=True)
    res = dict(command=f"learn.py --algos {algo}", model="m", seed=0, heldout=["a", "b"], pass1_before=0.25,
               settings=dict(steps=len(rewards), tasks_per_step=2, group_size=8, max_turns=1, max_response_tokens=100,
                             lr=lr, temperature=0.7, difficulty="trivial", eval_n=4, threads=1),
               algos={algo: dict(rewards=rewards, pass1_after=0.5, step_s=[1.0] * len(rewards),
                                 **learn.curve_stats(rewards))})
    (d / "learn.json").write_text(json.dumps(res))
    return str(d)


def test_merge_joins_single_algorithm_runs_and_refuses_mixed_settings(tmp_path, capsys):
    d = _fake_run(tmp_path / "d", "didpo", [0.0, 0.0, 0.5, 1.0])
    g = _fake_run(tmp_path / "g", "grpo", [0.5, 0.5, 0.25, 0.5])
    assert learn.main(["--merge", d, g, "--out", str(tmp_path / "m")]) == 0
    res = json.loads((tmp_path / "m" / "learn.json").read_text())
    assert list(res["algos"]) == ["didpo", "grpo"] and res["pass1_before_runs"] == [0.25, 0.25]
    assert res["didpo_vs"]["grpo"]["diff"] == pytest.approx(0.375)
    assert (tmp_path / "m" / "learn.png").read_bytes()[:4] == b"\x89PNG"
    assert "didpo - grpo, last 2 steps (paired by step): +0.375" in capsys.readouterr().out
    x = _fake_run(tmp_path / "x", "gigpo", [0.0] * 4, lr=1e-5)
    assert learn.main(["--merge", d, x, "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --merge") and "differs" in err and "in lr;" in err
    assert learn.main(["--merge", d, d, "--out", str(tmp_path / "m3")]) == 2


def test_pooled_paired_resamples_seeds_and_steps_by_hand():
    """Known inputs, known intervals: a constant difference has no spread; two seeds, one of differences 0 and
    one of 1, pool to 0.5, and resampling the seeds draws 0, 0.5 or 1 (1/4, 1/2, 1/4): the interval is [0, 1].
    A single seed's interval is the steps' alone."""
    flat = learn.pooled_paired([[0.5] * 10] * 3, [[0.25] * 10] * 3)
    assert flat["diff"] == 0.25 and flat["ci95"] == [0.25, 0.25] and flat["seeds"] == 3 and flat["window"] == 5
    two = learn.pooled_paired([[1.0] * 20, [1.0] * 20], [[1.0] * 20, [0.0] * 20])
    assert two["diff"] == 0.5 and two["ci95"] == [0.0, 1.0]
    one = learn.pooled_paired([[0.0] * 10 + [1.0, 0.0] * 5], [[0.0] * 20])  # last window: 1, 0, 1, 0, ...
    assert one["diff"] == 0.5 and 0.0 < one["ci95"][0] < 0.5 < one["ci95"][1] < 1.0
