"""The shipped task set data/tasks.jsonl: shape, tiers, no hidden-test leaks, and graded references.

    .venv/bin/python -m pytest tests/test_data.py -q

The grading test runs every reference solution (data/solutions.jsonl) on all of
its task's tests, every starter on the hidden tests, and a few deliberately
sloppy solutions, in one `sandbox.grade_many` call.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import tasks

DATA = Path(__file__).resolve().parents[1] / "data"
TIERS = ("trivial", "easy", "medium", "hard")
TASKS = tasks.load(DATA / "tasks.jsonl", strict=True)
BY_ID = {t.id: t for t in TASKS}
SOLUTIONS = {row["id"]: row["code"] for row in map(json.loads, (DATA / "solutions.jsonl").read_text().splitlines())}

# Plausible wrong answers: each passes its task's public tests and must fail a hidden one.
SLOPPY = {
    "didpo/max_of_list": "def max_of_list(nums):\n    best = 0\n    for x in nums:\n        best = max(best, x)\n"
                         "    return best\n",
    "didpo/count_vowels": "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
    "didpo/last_element": "def last_element(items):\n    return items[-1]\n",
    "didpo/fibonacci": "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "didpo/capitalize_words": "def capitalize_words(s):\n    return s.title()\n",
    "didpo/remove_duplicates": "def remove_duplicates(items):\n    return sorted(set(items))\n",
    "didpo/second_largest": "def second_largest(nums):\n    return sorted(nums)[-2]\n",
    "didpo/max_subarray_sum": "def max_subarray_sum(nums):\n    best = cur = 0\n    for x in nums:\n"
                              "        cur = max(0, cur + x)\n        best = max(best, cur)\n    return best\n",
    "didpo/coin_change": "def coin_change(coins, amount):\n    n = 0\n    for c in sorted(coins, reverse=True):\n"
                         "        n += amount // c\n        amount %= c\n    return n if amount == 0 else -1\n",
    "didpo/evaluate": "def evaluate(expr):\n    return int(eval(expr))\n",
    "didpo/max_min": "input()\nnums = input().split()\nprint(max(nums), min(nums))\n",  # compares strings
}


def _leak_probes(task: tasks.Task, test: tasks.Test) -> list[str]:
    """Strings that must not occur in the prompt for this hidden test to stay hidden."""
    if test.kind == "assert":
        lines = [ln.strip() for ln in test.input.splitlines() if ln.strip()]
        asserts = [ln for ln in lines if ln.startswith("assert ")]
        if len(asserts) < len(lines):
            # a stateful script (LRUCache): a bare `c.get(1)` means nothing outside its setup
            return asserts + [test.input.strip()]
        # the whole assert, and the expression under test (left of the comparison)
        return asserts + [re.split(r" == | is ", ln[len("assert "):])[0] for ln in asserts]
    if test.kind == "call":
        return [f"{task.fn_name}({', '.join(test.input.splitlines())})"]
    # stdin shorter than 4 chars ("0", "1 2") is ordinary prose in any statement
    return [test.input.strip()] if len(test.input.strip()) >= 4 else []


def test_shape_ids_and_tiers():
    assert len(TASKS) >= 40
    ids = [t.id for t in TASKS]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    assert set(SOLUTIONS) == set(ids), "data/solutions.jsonl must hold exactly one reference per task"
    for t in TASKS:
        assert 2 <= len(t.public_tests) <= 3, t.id
        assert len(t.hidden_tests) >= 5, t.id
        assert t.meta["difficulty"] in TIERS and t.meta["source"] == "didpo", t.id
        assert t.entry == "solution.py" and set(t.files) == {"solution.py"}, t.id
        ast.parse(t.files["solution.py"])  # the starter is valid Python
        ast.parse(SOLUTIONS[t.id])
        kinds = {x.kind for x in t.public_tests + t.hidden_tests}
        assert len(kinds) == 1, f"{t.id} mixes test kinds {kinds}"
        if kinds != {"stdio"}:
            assert t.fn_name and t.fn_name in t.prompt and t.fn_name in t.files["solution.py"], t.id
        for x in t.public_tests + t.hidden_tests:
            if x.kind == "call":
                [json.loads(line) for line in x.input.splitlines()]
                json.loads(x.output)
    tiers = Counter(t.meta["difficulty"] for t in TASKS)
    assert tiers["trivial"] >= 12 and all(tiers[k] >= 3 for k in TIERS), tiers
    kinds = Counter(t.public_tests[0].kind for t in TASKS)
    assert all(kinds[k] >= 3 for k in tasks.TEST_KINDS), kinds
    assert tasks.load(str(DATA / "tasks.jsonl"))[0].id == TASKS[0].id


def test_hidden_tests_never_in_prompt_and_distinct_from_public():
    for t in TASKS:
        public = {x.input for x in t.public_tests}
        for x in t.hidden_tests:
            assert x.input not in public, f"{t.id}: hidden test duplicates a public one: {x.input!r}"
            for probe in _leak_probes(t, x):
                assert probe not in t.prompt, f"{t.id}: prompt shows hidden test input {probe!r}"
                assert probe not in t.files["solution.py"], f"{t.id}: starter shows hidden test input {probe!r}"


def test_jsonl_files_match_build_script():
    spec = importlib.util.spec_from_file_location("data_build", DATA / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    task_rows, sol_rows = build.rows()
    msg = "data/*.jsonl are stale; regenerate with `python data/build.py`"
    assert (DATA / "tasks.jsonl").read_text().splitlines() == task_rows, msg
    assert (DATA / "solutions.jsonl").read_text().splitlines() == sol_rows, msg


def test_references_pass_and_starters_and_sloppy_fail():
    sandbox = pytest.importorskip("sandbox", reason="sandbox.py is not written yet")
    jobs, labels = [], []
    for t in TASKS:
        # stop_on_first_failure=False so a broken reference reports every failing test
        jobs.append(sandbox.GradeJob(SOLUTIONS[t.id], t.public_tests + t.hidden_tests, t.fn_name,
                                     stop_on_first_failure=False))
        labels.append(("reference", t))
        jobs.append(sandbox.GradeJob(t.files["solution.py"], t.hidden_tests, t.fn_name))
        labels.append(("starter", t))
    for tid, code in SLOPPY.items():
        t = BY_ID[tid]
        jobs.append(sandbox.GradeJob(code, t.public_tests, t.fn_name, stop_on_first_failure=False))
        labels.append(("sloppy-public", t))
        jobs.append(sandbox.GradeJob(code, t.hidden_tests, t.fn_name))
        labels.append(("sloppy-hidden", t))

    results = sandbox.grade_many(jobs)

    problems = []
    for (role, t), job, verdicts in zip(labels, jobs, results, strict=True):
        passed = len(verdicts) == len(job.tests) and all(v.passed for v in verdicts)
        if role in ("reference", "sloppy-public") and not passed:
            bad = [(i, v.status, v.detail[:200]) for i, v in enumerate(verdicts) if not v.passed]
            problems.append(f"{role} {t.id} failed: {bad or 'stopped early'}")
        if role in ("starter", "sloppy-hidden") and passed:
            problems.append(f"{role} {t.id} passed every hidden test")
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- the multi tier (data/multi.py)

MULTI = tasks.load(DATA / "multi.jsonl", strict=True)
MULTI_SOLUTIONS = {row["id"]: row["code"]
                   for row in map(json.loads, (DATA / "multi_solutions.jsonl").read_text().splitlines())}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_multi_tier_is_in_sync_and_its_held_out_splits_never_train():
    multi = _module(DATA / "multi.py", "data_multi")
    lines, sols = multi.rows()
    assert (DATA / "multi.jsonl").read_text().splitlines() == lines, "run python data/multi.py"
    assert (DATA / "multi_solutions.jsonl").read_text().splitlines() == sols, "run python data/multi.py"
    by_split = {s: [t for t in MULTI if t.meta["split"] == s] for s in ("train", "heldout_combos", "heldout_functions")}
    assert [len(v) for v in by_split.values()] == [multi.TRAIN, multi.HELDOUT, multi.HELDOUT]
    trained = {frozenset(t.meta["functions"]) for t in by_split["train"]}
    seen = set().union(*trained)
    assert not seen & set(multi.HELD_OUT_FUNCTIONS)
    assert all(frozenset(t.meta["functions"]) not in trained and set(t.meta["functions"]) <= seen
               for t in by_split["heldout_combos"])
    assert all(set(t.meta["functions"]) <= set(multi.HELD_OUT_FUNCTIONS) for t in by_split["heldout_functions"])
    assert all(2 <= len(t.meta["functions"]) <= 4 and t.meta["difficulty"] == "multi" for t in MULTI)


def test_each_multi_label_is_its_functions_own():
    """Every hidden test names its own function and no other; the reference passes every function, and a
    reference with one function left as its stub fails that function alone (bench/credit_live.labels)."""
    multi = _module(DATA / "multi.py", "data_multi")
    live = _module(DATA.parent / "bench" / "credit_live.py", "bench_credit_live")
    pool = multi.functions()
    for t in MULTI:
        for name, idx in t.meta["functions"].items():
            for i in idx:
                called = set(re.findall(r"\b([a-z_]+)\(", t.hidden_tests[i].input)) & set(t.meta["functions"])
                assert called == {name}, (t.id, t.hidden_tests[i].input)
    sample = MULTI[::19]  # 20 tasks, every split
    items = [(t, MULTI_SOLUTIONS[t.id]) for t in sample]
    knocked = []
    for t in sample:
        names = list(t.meta["functions"])
        out = names[len(t.id) % len(names)]
        code = "\n\n".join(pool[n]["stub"] if n == out else pool[n]["solution"] for n in names)
        items.append((t, code))
        knocked.append(out)
    marks = live.labels(items)
    assert all(all(m.values()) for m in marks[: len(sample)])
    for m, out in zip(marks[len(sample):], knocked):
        assert [n for n, ok in m.items() if not ok] == [out], m


def test_function_spans_find_each_written_function_body():
    live = _module(DATA.parent / "bench" / "credit_live.py", "bench_credit_live")
    r = "Here:\n```python\ndef add(a, b):\n    return a + b\n\ndef add(a, b):\n    return b + a\n\ndef sub(a, b):\n" \
        "    return a - b\n```\ndef mul(a, b):"
    spans = live.function_spans(r, ["add", "sub", "mul", "div"])
    assert {n: r[s:e] for n, (s, e) in spans.items()} == {  # the last def counts; no body, no span
        "add": "def add(a, b):\n    return b + a\n\n", "sub": "def sub(a, b):\n    return a - b\n"}


def test_credit_live_scores_saved_groups_apart_by_whether_rewards_differ(tmp_path, tiny_tokenizer, monkeypatch):
    """--runs: the groups a learn run saved, labelled per function; a group with a winner is scored with the
    others whose rewards differ, one with no winner apart, where A^E is 0 for all and only the verdict (here the
    public tests each function has) ranks a response's correct function above its stub."""
    import rollout

    multi = _module(DATA / "multi.py", "data_multi")
    live = _module(DATA.parent / "bench" / "credit_live.py", "bench_credit_live")
    pool = multi.functions()
    task = next(t for t in MULTI if len(t.meta["functions"]) == 2 and t.meta["split"] == "train")
    a, b = task.meta["functions"]

    def response(ok_a: bool, ok_b: bool) -> str:
        code = "\n\n".join(pool[n]["solution" if ok else "stub"] for n, ok in ((a, ok_a), (b, ok_b)))
        return f"Here it is.\n```python\n{code}\n```\n"

    run = tmp_path / "run"
    (run / "didpo" / "groups").mkdir(parents=True)
    (run / "train_tasks.jsonl").write_text(json.dumps(task.to_json()) + "\n")
    steps = {1: [(1, 1), (1, 0), (0, 1), (0, 0)], 2: [(1, 0), (0, 1), (1, 0), (0, 0)]}  # a winner; none
    for step, combos in steps.items():
        group = [rollout.replay(task, [response(*c)], tiny_tokenizer, max_turns=1) for c in combos]
        assert [tr.reward for tr in group] == [float(c == (1, 1)) for c in combos]
        for i, tr in enumerate(group):  # one episode each: numbered within the group, as one rollout numbers them
            tr.meta["episode"] = i
        (run / "didpo" / "groups" / f"step_{step}.jsonl").write_text("".join(tr.to_json() + "\n" for tr in group))
    out = tmp_path / "live.json"
    monkeypatch.setattr(sys, "argv", ["credit_live.py", "--runs", str(run), "--json", str(out)])
    assert live.main() == 0
    res = json.loads(out.read_text())
    assert (res["groups_scored"], res["mixed_responses"], res["equal_groups"], res["equal_mixed_responses"]) == \
        (1, 2, 1, 3)
    assert res["per_function"] == {a: [4, 8], b: [3, 8]} and res["all_pass"] == 1 / 8
    # 5 of 8 responses hold one of their two functions; independent at 7/16: 2 x 7/16 x 9/16
    assert res["mixed_share"] == 5 / 8 and res["mixed_if_independent"] == pytest.approx(2 * 7 / 16 * 9 / 16)
    assert res["estimators"]["grpo"]["accuracy"] == 0.5 == res["equal_estimators"]["grpo"]["accuracy"]
    assert res["estimators"]["didpo (default)"]["accuracy"] == 1.0
    assert res["equal_estimators"]["didpo (default)"]["accuracy"] == 1.0
    for est in res["estimators"].values():  # one group scored: the mean over groups is its pooled AUC
        assert est["group_auc"] == pytest.approx(est["auc"]) and 0.5 < est["auc"] <= 1.0
    apart = res["apart_from_grpo"]  # grpo against itself: no token apart; the verdict moves the default off grpo
    assert apart["grpo"] == {"token_share": 0.0, "cosine": pytest.approx(1.0)}
    assert apart["didpo (default)"]["token_share"] > 0 and apart["didpo (default)"]["cosine"] < 0.999
    monkeypatch.setattr(sys, "argv", ["credit_live.py", "--runs", str(tmp_path / "none")])
    with pytest.raises(SystemExit, match="needs train_tasks.jsonl"):
        live.main()
