"""bench/learn.py keeps running: --smoke trains every algorithm on the tiny model and writes a JSON and a
PNG whose numbers are those of the runs' own metrics.jsonl; the window statistics are checked by hand."""

from __future__ import annotations

import importlib.util
import json
import math
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


def test_two_level_by_hand():
    """Held-out tasks as the inner level: one seed of per-task differences 0 and 1 pools to 0.5 and resamples
    to 0, 0.5 or 1; two seeds whose tasks agree resample to the seeds' own means only."""
    one = learn.two_level(np.array([[0.0, 1.0]]))
    assert one["diff"] == 0.5 and one["ci95"] == [0.0, 1.0] and one["seeds"] == 1
    two = learn.two_level(np.array([[0.25] * 4, [0.75] * 4]))
    assert two["diff"] == 0.5 and two["ci95"] == [0.25, 0.75]


@pytest.mark.parametrize("name", ["pairs", "triples", "quads"])
def test_combo_tiers_hold_out_combinations_and_functions(tmp_path, name):
    """Every task asks for the tier's number of functions, labelled by their own hidden tests; held-out combinations
    are never trained on, held-out functions appear in no training task, every training function is in the
    held-out combinations' pool, and every seed evaluates the same held-out tasks."""
    import tasks as tasklib

    tier = learn.TIERS[name]
    train_p, held_p, held = learn.combo_tier(name, 0, tmp_path)
    tr, he = tasklib.load(train_p), tasklib.load(held_p)
    assert [t.id for t in he] == held and len(he) == 40 == tier.held * tier.held_orders + tier.fresh * tier.fresh_orders
    n_sets = math.comb(len(learn.PAIR_POOL), tier.size)
    want = {"pairs": 32, "triples": 150, "quads": 648}[name]
    assert len(tr) == math.factorial(tier.size) * (n_sets - tier.held) == want
    assert len({t.id for t in tr + he}) == len(tr) + len(he)
    combos = lambda ts: {frozenset(t.meta["functions"]) for t in ts}  # noqa: E731
    assert not combos(tr) & combos(he) and all(len(t.meta["functions"]) == tier.size for t in tr + he)
    fresh = {t.meta["split"]: set() for t in he}
    for t in he:
        fresh[t.meta["split"]] |= set(t.meta["functions"])
    trained = {f for t in tr for f in t.meta["functions"]}
    assert not fresh["heldout_functions"] & trained and fresh["heldout_combos"] <= trained == set(learn.PAIR_POOL)
    for t in tr[:3] + he[:3]:  # each function owns its own tests, which together are the task's
        idx = [i for ix in t.meta["functions"].values() for i in ix]
        assert sorted(idx) == list(range(len(t.hidden_tests)))
    other = tmp_path / "s1"
    other.mkdir()
    assert learn.combo_tier(name, 1, other)[2] == held
    assert [t.id for t in tasklib.load(other / "train_tasks.jsonl")] != [t.id for t in tr]


def _seed_run(d: Path, seed: int, curves: dict[str, list[float]], per_task: dict[str, dict[str, float]]) -> str:
    d.mkdir(parents=True)
    res = dict(model="m", seed=seed, heldout=["a", "b"], pass1_before=0.25,
               settings=dict(steps=4, tasks_per_step=1, group_size=8, tier="pairs"),
               algos={x: dict(rewards=c, pass_rate=c, pass1_after=float(np.mean(list(per_task[x].values()))),
                              heldout_after=dict(per_task=per_task[x], function_pass=0.5), step_s=[2.0] * 4,
                              heldout_mid=dict(step=2, per_task={t: v / 2 for t, v in per_task[x].items()}),
                              peak_rss_gb=3.0 + seed) for x, c in curves.items()})
    (d / "learn.json").write_text(json.dumps(res))
    return str(d)


def test_pool_reports_didpo_minus_each_baseline_over_seeds(tmp_path, capsys):
    s0 = _seed_run(tmp_path / "s0", 0, {"didpo": [0, 0, 1, 1], "grpo": [0, 0, 0, 1]},
                   {"didpo": {"a": 1.0, "b": 0.5}, "grpo": {"a": 0.5, "b": 0.5}})
    s1 = _seed_run(tmp_path / "s1", 1, {"didpo": [0, 0, 0.5, 0.5], "grpo": [0, 0, 0.5, 0.5]},
                   {"didpo": {"a": 0.25, "b": 0.25}, "grpo": {"a": 0.25, "b": 0.25}})
    assert learn.main(["--pool", s0, s1, "--out", str(tmp_path / "p")]) == 0
    res = json.loads((tmp_path / "p" / "learn.json").read_text())
    assert res["algos"]["didpo"]["curve"] == [0, 0, 0.75, 0.75] and res["algos"]["grpo"]["peak_rss_gb"] == 4.0
    v = res["didpo_vs"]["grpo"]
    assert v["heldout_pass1"]["diff"] == pytest.approx(0.125)  # seed 0: +0.5, 0; seed 1: 0, 0
    # By hand: 0 whenever both drawn seeds are seed 1 (1/4); 0.5 needs seed 0 twice and its +0.5 task four times
    # (1/4 x 1/16 < 2.5%), 0.375 three times of four (1/4 x 4/16 = 6%): the interval is [0, 0.375].
    assert v["heldout_pass1"]["ci95"] == [0.0, 0.375]
    assert v["heldout_mid"]["step"] == 2 and v["heldout_mid"]["diff"] == pytest.approx(0.0625)  # half of each
    assert v["last_window"]["diff"] == pytest.approx(0.25) and v["last_window"]["window"] == 2
    assert (tmp_path / "p" / "learn.png").read_bytes()[:4] == b"\x89PNG"
    assert "didpo - grpo: held-out pass@1 after step 2 +0.062" in capsys.readouterr().out
    assert learn.main(["--pool", s0, s0, "--out", str(tmp_path / "q")]) == 2  # one seed twice


def test_smoke_on_the_pairs_tier_scores_functions_and_memory(tmp_path):
    """--tier pairs end to end on the tiny model: GRPO on the fraction reward trains with that reward, held-out
    pass@1 comes per split and per function from the eval's own samples, and each run's peak memory is read.
    --eval-at 1 reads held-out after step 1 too, and the run goes on from its step-1 checkpoint."""
    out = tmp_path / "pairs"
    r = subprocess.run([sys.executable, "bench/learn.py", "--smoke", "--tier", "pairs", "--algos", "didpo,grpo-frac",
                        "--steps", "2", "--eval-at", "1", "--out", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "learn.json").read_text())
    assert len(res["heldout"]) == 40 and res["settings"]["tier"] == "pairs"
    assert json.loads((out / "grpo-frac" / "config.json").read_text())["config"]["reward"] == "fraction"
    assert json.loads((out / "didpo" / "config.json").read_text())["config"]["reward"] == "binary"
    for s in res["algos"].values():
        h = s["heldout_after"]
        assert set(h) >= {"pass1", "per_task", "function_pass", "heldout_combos", "heldout_functions"}
        assert sorted(h["per_task"]) == sorted(res["heldout"]) and 0.0 <= h["function_pass"] <= 1.0
        assert len(s["pass_rate"]) == 2 and 0.1 < s["peak_rss_gb"] < 20
        assert s["heldout_mid"]["step"] == 1 and sorted(s["heldout_mid"]["per_task"]) == sorted(res["heldout"])
        rows = [json.loads(x) for x in (Path(s["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
        assert [x["step"] for x in rows] == [1, 2]  # resumed at step 2, not trained again from the start
    assert learn.main(["--tier", "pairs", "--steps", "4", "--eval-at", "4", "--out", str(tmp_path / "x")]) == 2


def test_merge_compares_all_pass_rates_not_a_fraction_reward(tmp_path, capsys):
    """grpo-frac's reward is the share of tests passed: didpo - grpo-frac reads each step's all-pass rate."""
    d = _fake_run(tmp_path / "d", "didpo", [0.0, 0.0, 0.5, 1.0])
    f = _fake_run(tmp_path / "f", "grpo-frac", [0.5, 0.5, 0.75, 0.75])
    res = json.loads(Path(f, "learn.json").read_text())
    res["algos"]["grpo-frac"]["pass_rate"] = [0.0, 0.0, 0.0, 0.5]
    Path(f, "learn.json").write_text(json.dumps(res))
    assert learn.main(["--merge", d, f, "--out", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "learn.json").read_text())["didpo_vs"]["grpo-frac"]["diff"] == 0.5


def test_base_eval_is_reused_only_from_the_same_tasks_and_seed(tmp_path):
    held = tmp_path / "held.jsonl"
    held.write_text('{"id": "a"}\n')
    src = tmp_path / "old" / "eval-base"
    src.mkdir(parents=True)
    (src / "samples.jsonl").write_text('{"task_id": "a"}\n')
    (src / "config.json").write_text(json.dumps({"bench": str(held), "seed": 3, "out": str(src), "n": 2}))
    assert "seed 3" in learn.reuse_base_eval(src.parent, held, tmp_path / "d1", seed=4)
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "b"}\n')
    assert "differ" in learn.reuse_base_eval(src, other, tmp_path / "d2", seed=3)
    assert "no config.json" in learn.reuse_base_eval(tmp_path, held, tmp_path / "d3", seed=3)
    assert "--stop [], this run's is" in learn.reuse_base_eval(src, held, tmp_path / "d4", seed=3, stop=["\n```\n"])
    assert "--sampler hf, this run's is vllm" in learn.reuse_base_eval(src, held, tmp_path / "d5", 3, sampler="vllm")
    new_held = tmp_path / "run" / "heldout_tasks.jsonl"
    new_held.parent.mkdir()
    new_held.write_text(held.read_text())
    dest = tmp_path / "run" / "eval-base"
    assert learn.reuse_base_eval(src.parent, new_held, dest, seed=3) is None
    assert (dest / "samples.jsonl").read_text() == '{"task_id": "a"}\n'
    want = {"bench": str(new_held), "seed": 3, "out": str(dest), "n": 2}
    assert json.loads((dest / "config.json").read_text()) == want
    assert not any((tmp_path / d).exists() for d in ("d1", "d2", "d4", "d5"))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_sampler_without_vllm_is_one_line_naming_the_venv(tmp_path):
    r = subprocess.run([sys.executable, "bench/learn.py", "--sampler", "vllm", "--out", str(tmp_path / "o")], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: --sampler vllm") and ".venv-vllm" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
