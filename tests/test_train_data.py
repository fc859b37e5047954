"""trainer/data.py: training sources in the benchmarks' own formats, filters, the contamination guard, epoch order.

    python -m pytest tests/test_train_data.py -q

The sources are the small local files in each hub format under tests/fixtures (the hub is unreachable here;
the loaders are the real ones eval.py uses)."""

from __future__ import annotations

import json
import random
import warnings

import pytest

from tasks import Task
from tasks import Test as Case  # not "Test": pytest would try to collect it
from trainer import data

FIX = "tests/fixtures"
MIXED = f"{FIX}/tasks.jsonl+livecodebench@{FIX}/lcb+apps@{FIX}/apps.jsonl:difficulty=introductory"


@pytest.fixture(autouse=True)
def _quiet_malformed_fixture_rows():
    with warnings.catch_warnings():  # the fixtures hold malformed rows on purpose (tests/test_tasks.py)
        warnings.simplefilter("ignore")
        yield


def test_sources_parse_and_mix():
    assert data.parse("data/tasks.jsonl") == [("jsonl", "data/tasks.jsonl", {})]
    assert data.parse(f"livecodebench:release=release_v5,end_date=2024-07-31+apps@{FIX}/apps.jsonl+mbpp@a/b") == [
        ("livecodebench", None, {"release": "release_v5", "end_date": "2024-07-31"}), ("apps", f"{FIX}/apps.jsonl", {}),
        ("mbpp", "a/b", {})]  # a/b: a hub dataset id
    ids = [t.id for t in data.load(MIXED)]
    assert ids == ["ours/add", "ours/echo", "abc300_a", "3000", "1900A", "3100", "4002"]


@pytest.mark.parametrize("spec, needle", [("", "empty source"),
                                          (f"{FIX}/tasks.jsonl++{FIX}/tasks.jsonl", "empty source"),
                                          ("leetcode", "unknown source 'leetcode'"),
                                          ("apps:difficulty", "not key=value"),
                                          (f"apps@{FIX}/apps.jsonl:level=3", "apps has no filter level")])
def test_a_bad_source_is_one_clear_line(spec, needle):
    with pytest.raises(ValueError, match=needle) as e:
        data.load(spec)
    assert "\n" not in str(e.value)


def test_the_guard_removes_held_out_problems_across_sources_and_says_why(tmp_path):
    """The evaluation's problem abc300_a reappears in the training set as a task of our own format under another
    id (other whitespace and case): it is removed. LiveCodeBench's cutoff removes what was released after it."""
    lcb = {t.id: t for t in data.load(f"livecodebench@{FIX}/lcb")}
    copy = Task(id="mine/a-plus-b", prompt="  " + lcb["abc300_a"].prompt.upper().replace(" ", "   ") + "\n",
                files={"main.py": ""}, entry="main.py", public_tests=lcb["abc300_a"].public_tests,
                hidden_tests=lcb["abc300_a"].hidden_tests, meta={"source": "mine"})
    empty = Task(id="mine/untested", prompt="Write anything.", files={"main.py": ""}, entry="main.py",
                 public_tests=[], hidden_tests=[])
    twin = Task(id="mine/twin", prompt=lcb["3000"].prompt, files={"main.py": ""}, entry="main.py",
                public_tests=[], hidden_tests=[Case("stdio", "1\n", "1\n")])
    mine = tmp_path / "mine.jsonl"
    mine.write_text("".join(json.dumps(t.to_json()) + "\n" for t in (copy, twin)))
    holdout = f"livecodebench@{FIX}/lcb:start_date=2023-06-01,end_date=2023-06-30"  # abc300_a alone
    kept, dropped, line = data.training_set(f"livecodebench@{FIX}/lcb+{mine}", holdout=holdout, cutoff="2024-06-01")
    assert [t.id for t in kept] == ["3000", "1900A"]
    assert {d["id"]: d["why"] for d in dropped} == {
        "abc300_a": "the held-out problem abc300_a", "3100": "released 2024-06-20, on or after the cutoff 2024-06-01",
        "mine/a-plus-b": "the held-out problem abc300_a", "mine/twin": "a copy of 3000"}
    assert line.startswith("data: 2 of 6 tasks") and "removed 4" in line and "\n" not in line
    assert data.select([empty])[1] == [{"id": "mine/untested", "source": "", "why": "no hidden tests"}]
    path = data.write_excluded(tmp_path, dropped)
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [d["id"] for d in dropped]


def test_filters_and_the_empty_set_error():
    kept, dropped, _ = data.training_set(MIXED, difficulty="easy,hard", max_prompt_chars=200)
    assert {t.meta.get("difficulty") for t in kept} <= {"easy", "hard"}
    assert any("chars >" in d["why"] for d in dropped) or all(len(t.prompt) <= 200 for t in data.load(MIXED))
    with pytest.raises(ValueError, match="pass --difficulty '' to keep every level"):
        data.training_set(f"livecodebench@{FIX}/lcb", difficulty="trivial")
    with pytest.raises(ValueError, match="--cutoff 'soon' is not a date"):
        data.training_set(f"livecodebench@{FIX}/lcb", cutoff="soon")


def test_epochs_reshuffle_with_the_seed_and_epoch_zero_is_the_old_order():
    tasks = [Task(id=str(k), prompt=str(k), files={}, public_tests=[], hidden_tests=[]) for k in range(7)]
    old = list(tasks)
    random.Random(3).shuffle(old)  # what train.py did before: one shuffle, then wrap around
    walk = [data.order(tasks, 3, k).id for k in range(21)]
    assert walk[:7] == [t.id for t in old]
    for e in range(3):
        assert sorted(walk[7 * e: 7 * e + 7]) == sorted(t.id for t in tasks)  # each task once per epoch
    assert walk[7:14] != walk[:7] and walk[14:21] != walk[7:14]
    assert [data.order(tasks, 3, k).id for k in (15, 2, 9)] == [walk[15], walk[2], walk[9]]  # any position, any time
