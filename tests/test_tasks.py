"""tasks.py: every loader and filter on fixtures in each benchmark's real format."""

from __future__ import annotations

import base64
import json
import pickle
import re
import shutil
import zlib
from pathlib import Path

import pytest

import benchmarks
import tasks
from benchmarks import livecodebench
from benchmarks.livecodebench import decode_private_tests, release_files
from tasks import MalformedRowWarning
from tasks import Test as Case  # not Test*: pytest would try to collect it

FIX = Path(__file__).parent / "fixtures"
LCB = FIX / "lcb"


def ids(ts):
    return [t.id for t in ts]


def quiet_load(*args, **kw):
    with pytest.warns(MalformedRowWarning):  # every fixture file holds malformed rows on purpose
        return benchmarks.load(*args, **kw)


# ---------------------------------------------------------------- LiveCodeBench


def test_release_files_match_the_official_cumulative_files():
    assert release_files("release_v1") == ["test.jsonl"]
    assert release_files("release_v3") == ["test.jsonl", "test2.jsonl", "test3.jsonl"]
    assert release_files("release_v6") == release_files("release_latest") == [
        "test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]
    assert release_files("v1") == ["test.jsonl"]
    assert release_files("v5") == ["test5.jsonl"]
    assert release_files("v1_v3") == ["test.jsonl", "test2.jsonl", "test3.jsonl"]
    assert release_files("v4_v6") == ["test4.jsonl", "test5.jsonl", "test6.jsonl"]
    for bad in ("release_v7", "release_v0", "v3_v2", "v2_v2", "v0", "latest", "v1_v7"):
        with pytest.raises(ValueError, match="unknown release"):
            release_files(bad)


@pytest.mark.parametrize("release, expected", [
    ("release_v1", ["abc300_a", "3000"]),
    ("release_v2", ["abc300_a", "3000", "1900A"]),
    ("release_v3", ["abc300_a", "3000", "1900A", "3100"]),
    (None, ["abc300_a", "3000", "1900A", "3100"]),  # a local snapshot without release: every file it has
    ("v2", ["1900A"]),
    ("v3", ["3100"]),
    ("v1_v2", ["abc300_a", "3000", "1900A"]),
    ("v2_v3", ["1900A", "3100"]),
])
def test_lcb_release_filter_on_a_snapshot_dir(release, expected):
    ts = quiet_load("livecodebench", LCB, release=release)
    assert ids(ts) == expected
    assert {t.meta["release"] for t in ts} <= {"v1", "v2", "v3"}


def test_lcb_release_needs_its_files():
    with pytest.raises(FileNotFoundError, match="test4.jsonl.*release_v4"):
        benchmarks.load("livecodebench", LCB, release="release_v4")
    with pytest.raises(FileNotFoundError, match="lacks test4.jsonl, test5.jsonl, test6.jsonl"):
        benchmarks.load("livecodebench", LCB, release="release_latest")  # explicit: all six official files


def test_lcb_rows_become_tasks():
    by = {t.id: t for t in quiet_load("livecodebench", LCB)}
    fn = by["3000"]  # functional, `class Solution`, compressed private tests
    assert fn.fn_name == "maxSum"
    assert fn.public_tests == [Case("call", "[1, 2, 3, 4]\n2", "7")]
    assert fn.hidden_tests == fn.public_tests + [Case("call", "[5, -1, 3]\n1", "5"), Case("call", "[1, 1, 1]\n3", "3")]
    starter = "class Solution:\n    def maxSum(self, nums: List[int], k: int) -> int:\n        "
    assert fn.files == {"solution.py": starter}
    assert "class Solution" in fn.prompt and "starter code" in fn.prompt
    assert fn.meta == {
        "source": "livecodebench", "platform": "leetcode", "difficulty": "medium",
        "contest_date": "2023-09-03T00:00:00", "contest_id": "weekly-contest-360", "title": "max-window-sum",
        "system": livecodebench.LCB_SYSTEM, "release": "v1",
        "question_content": "Given nums and k, return the maximum sum of k consecutive elements.",
    }
    io = by["abc300_a"]  # stdin, JSON private tests
    assert io.fn_name is None and {t.kind for t in io.hidden_tests} == {"stdio"}
    assert [t.output for t in io.hidden_tests] == ["3\n", "30\n", "0\n"]
    assert "Read the inputs from stdin" in io.prompt and io.files == {"solution.py": ""}
    assert by["1900A"].hidden_tests[1:] == [Case("stdio", "x y\n", "y x\n"), Case("stdio", "one\n", "one\n")]


def test_lcb_date_difficulty_platform_filters():
    def load(**f):
        return ids(quiet_load("livecodebench", LCB, **f))

    assert load(start_date="2023-09-03") == ["3000", "1900A", "3100"]  # inclusive start
    assert load(end_date="2024-04-15") == ["abc300_a", "3000", "1900A"]  # inclusive end (midnight)
    assert load(start_date="2023-09-04", end_date="2024-06-19") == ["1900A"]
    assert load(difficulty="easy") == ["abc300_a", "3100"]
    assert load(difficulty="Medium,hard") == ["3000", "1900A"]
    assert load(platform="leetcode") == ["3000", "3100"]
    assert load(platform=["atcoder", "codeforces"], difficulty="hard") == ["1900A"]
    with pytest.raises(ValueError, match="unknown difficulty meduim; accepted: easy, medium, hard"):
        benchmarks.load("livecodebench", LCB, difficulty="meduim")
    with pytest.raises(ValueError, match="unknown platform"):
        benchmarks.load("livecodebench", LCB, platform="topcoder")
    with pytest.raises(ValueError, match="start_date='2024/01/01' is not a date; use YYYY-MM-DD"):
        benchmarks.load("livecodebench", LCB, start_date="2024/01/01")


def test_lcb_malformed_rows_are_counted_and_named_or_strict():
    with pytest.warns(MalformedRowWarning) as rec:
        benchmarks.load("livecodebench", LCB)
    msg = str(rec[0].message)
    assert "skipped 5 malformed row(s)" in msg
    for where, why in [("test.jsonl:3", "not valid JSON"), ("test2.jsonl:2", "missing field 'question_id'"),
                       ("test2.jsonl:3", "neither JSON nor base64"), ("test3.jsonl:2", "refused to load builtins.str"),
                       ("test3.jsonl:3", "difficulty 'impossible'")]:
        assert re.search(rf"/{re.escape(where)}: [^;]*{re.escape(why)}", msg), where
    with pytest.raises(ValueError, match=r"livecodebench: .*test\.jsonl:3: not valid JSON"):
        benchmarks.load("livecodebench", LCB, strict=True)


def _compress(obj) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


def test_private_tests_decode_json_and_compressed():
    cases = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    assert decode_private_tests(json.dumps(cases)) == cases
    assert decode_private_tests(_compress(json.dumps(cases))) == cases


def test_private_tests_refuse_pickles_that_build_objects(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            import os

            return (os.system, (f"touch {marker}",))

    with pytest.raises(ValueError, match="refused to load (posix|os).system"):
        decode_private_tests(_compress(Evil()))
    assert not marker.exists()
    with pytest.raises(ValueError, match="only a str is accepted"):  # plain values, but not a str
        decode_private_tests(_compress(["not", "a", "string"]))
    with pytest.raises(ValueError, match="neither JSON nor"):
        decode_private_tests("%%% not base64 %%%")


def _valid_rows(path: Path) -> list[dict]:
    return [r for r in (json.loads(x) for x in path.read_text().splitlines() if x.startswith('{"question_title"'))]


def test_lcb_parquet_json_list_and_saved_dataset(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _valid_rows(LCB / "test.jsonl")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "lcb.parquet")
    (tmp_path / "lcb.json").write_text(json.dumps(rows))
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    for p in ("lcb.parquet", "lcb.json", "saved"):
        ts = benchmarks.load("livecodebench", tmp_path / p)
        assert ids(ts) == ["abc300_a", "3000"], p
        assert ts[1].hidden_tests[-1] == Case("call", "[1, 1, 1]\n3", "3")
    with pytest.raises(ValueError, match="release selects among the official files"):
        benchmarks.load("livecodebench", tmp_path / "lcb.parquet", release="release_v1")


def test_lcb_hub_path_reads_the_release_files(monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(*args, **kw):
        calls.append((args, kw))
        name = kw["data_files"].rsplit("/", 1)[1]
        return [r for _, r in tasks.read_rows(LCB / name) if isinstance(r, dict)]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    with pytest.warns(MalformedRowWarning):
        ts = benchmarks.load("livecodebench", release="release_v2")
    assert ids(ts) == ["abc300_a", "3000", "1900A"]
    assert [kw["data_files"] for _, kw in calls] == [
        "hf://datasets/livecodebench/code_generation_lite/test.jsonl",
        "hf://datasets/livecodebench/code_generation_lite/test2.jsonl"]
    assert all(args == ("json",) and kw["split"] == "train" for args, kw in calls)

    def offline(*args, **kw):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ValueError, match=r"could not load .*ConnectionError: no network.*pass path="):
        benchmarks.load("livecodebench", release="v1")


# ---------------------------------------------------------------- HumanEval, MBPP, APPS


def _run(code: str, test: Case) -> None:
    """Execute trusted fixture code in-process: the solution, then the assert test."""
    ns: dict = {}
    exec(code, ns)
    exec(test.input, ns)


def test_humaneval_offline_from_the_package():
    ts = benchmarks.load("humaneval")
    assert len(ts) == 164 and ts[0].id == "HumanEval/0"
    t = ts[0]
    assert t.prompt.startswith("from typing import List") and t.files == {"solution.py": t.prompt}
    assert t.public_tests == [] and len(t.hidden_tests) == 1 and t.hidden_tests[0].kind == "assert"
    assert t.hidden_tests[0].input.rstrip().endswith("check(has_close_elements)")


def test_humaneval_plus_jsonl(tmp_path):
    ts = quiet_load("humaneval", FIX / "humanevalplus.jsonl")
    assert ids(ts) == ["HumanEval/9000", "HumanEval/9001"]
    rows = {r["task_id"]: r for r in map(json.loads, (FIX / "humanevalplus.jsonl").read_text().splitlines())}
    for t in ts:
        good = rows[t.id]["prompt"] + rows[t.id]["canonical_solution"]
        _run(good, t.hidden_tests[0])  # the canonical solution passes
        with pytest.raises(AssertionError):
            _run(good.replace("return", "return 1 +"), t.hidden_tests[0])
    assert ts[0].hidden_tests[0].input.count("check(add)") == 1
    # evalplus rows without `test` are checked against the reference on base_input + plus_input
    assert "1e-09" in ts[1].hidden_tests[0].input


def test_mbpp_full_and_sanitized_rows():
    with pytest.warns(MalformedRowWarning, match="skipped 2 malformed.*mbpp.jsonl:3.*mbpp.jsonl:4"):
        ts = benchmarks.load("mbpp", FIX / "mbpp.jsonl")
    add, isqrt = ts
    assert ids(ts) == ["601", "602"]
    assert add.public_tests == add.hidden_tests[:1] and len(add.hidden_tests) == 3
    assert "assert add(1, 2) == 3" in add.prompt and "assert add(-1, 1)" not in add.prompt
    assert isqrt.hidden_tests[1].input == "import math\nassert isqrt_floor(16) == math.isqrt(16)\n"
    for t in isqrt.hidden_tests:
        _run("import math\ndef isqrt_floor(n):\n    return math.isqrt(n)", t)
    with pytest.raises(ValueError, match="unknown mbpp subset"):
        benchmarks.load("mbpp", FIX / "mbpp.jsonl", subset="tiny")


def test_apps_rows_and_difficulty_filter():
    with pytest.warns(MalformedRowWarning, match=r"skipped 3 .*apps\.jsonl:4: input_output.*apps\.jsonl:5.*"
                                                  r"apps\.jsonl:6: missing field 'question'"):
        ts = benchmarks.load("apps", FIX / "apps.jsonl")
    io, call, lines = ts
    assert [t.input for t in io.public_tests] == ["3\n1 2 3\n", "1\n5\n"]  # the statement's two examples
    assert len(io.hidden_tests) == 3 and io.fn_name is None and "Use Standard Input format" in io.prompt
    assert call.fn_name == "double" and call.public_tests == []
    assert call.hidden_tests == [Case("call", "2", "4"), Case("call", "5", "10")]  # APPS' [[4]] unwrapped
    assert call.files == {"solution.py": "def double(x):\n\t"} and "Use Call-Based format" in call.prompt
    assert lines.hidden_tests == [Case("stdio", "a\nb", "b\na")]
    assert ids(quiet_load("apps", FIX / "apps.jsonl", difficulty="interview,competition")) == ["4001", "4003"]
    with pytest.raises(ValueError, match="accepted: introductory, interview, competition"):
        benchmarks.load("apps", FIX / "apps.jsonl", difficulty="easy")


def test_hidden_tests_never_reach_the_prompt():
    every = (quiet_load("livecodebench", LCB) + quiet_load("apps", FIX / "apps.jsonl")
             + quiet_load("mbpp", FIX / "mbpp.jsonl"))
    checked = 0
    for t in every:
        for h in t.hidden_tests:
            if h not in t.public_tests and len(h.input.strip()) >= 3:  # a 1-char input occurs in any text
                assert h.input.strip() not in t.prompt and h.input.strip() not in "".join(t.files.values())
                checked += 1
    assert checked >= 10


# ---------------------------------------------------------------- our JSONL and the registry


def test_jsonl_loader_and_filters(tmp_path):
    ts = benchmarks.load(str(FIX / "tasks.jsonl"))
    assert ids(ts) == ["ours/add", "ours/echo"] and ts[1].public_tests == [Case("stdio", "hi\n", "hi\n")]
    assert ids(benchmarks.load("jsonl", FIX / "tasks.jsonl", difficulty="hard")) == ["ours/echo"]
    with pytest.raises(ValueError, match=r"tasks_bad\.jsonl:2: missing field\(s\) prompt"):
        tasks.load(FIX / "tasks_bad.jsonl", strict=True)
    with pytest.warns(MalformedRowWarning, match=r"skipped 2 .*tasks_bad\.jsonl:2.*tasks_bad\.jsonl:3: not valid JSON"):
        assert ids(benchmarks.load("jsonl", FIX / "tasks_bad.jsonl")) == ["ours/add"]
    dup = tmp_path / "dup.jsonl"
    shutil.copy(FIX / "tasks.jsonl", dup)
    dup.write_text(dup.read_text() * 2)
    with pytest.raises(ValueError, match="duplicate id 'ours/add'"):
        tasks.load(dup, strict=True)


def test_registry_errors_are_clear():
    assert benchmarks.list_benchmarks() == ["livecodebench", "humaneval", "mbpp", "apps", "jsonl"]
    assert benchmarks.filters_of("livecodebench") == ["release", "start_date", "end_date", "difficulty", "platform"]
    with pytest.raises(ValueError, match="unknown benchmark 'humaneva'; accepted: livecodebench, humaneval"):
        benchmarks.load("humaneva")
    with pytest.raises(ValueError, match="humaneval has no filter release; accepted: none"):
        benchmarks.load("humaneval", release="v1")
    with pytest.raises(ValueError, match="needs a path"):
        benchmarks.load("jsonl")
    with pytest.raises(FileNotFoundError, match="nope.jsonl does not exist"):
        benchmarks.load("mbpp", "nope.jsonl")
