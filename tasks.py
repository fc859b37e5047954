"""Tasks: the `Task` and `Test` records every module shares, and our own JSONL task format.

    python -c "import tasks; print(len(tasks.load('data/tasks.jsonl')))"       # the shipped task set

benchmarks/ reads each published benchmark into these records; the row reading they share is here (`read_rows`,
`collect`: a malformed row is skipped with one `MalformedRowWarning`, or raises with strict=True). `public_tests`
are the tests the agent may see; only they and the statement reach a prompt, an observation or the workspace.
`hidden_tests` is the benchmark's whole grading set, which eval.py and the final reward grade.
"""

from __future__ import annotations

import gzip
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

TEST_KINDS = ("stdio", "call", "assert")
Row = tuple[str, object]  # (where, row): "file.jsonl:12" and the parsed object (or the parse error)


@dataclass
class Test:
    """One test. "stdio": stdin -> expected stdout. "call": one JSON argument per input line -> the JSON return value
    of the task's `fn_name` (a function or `class Solution` method). "assert": test code run after the solution."""
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
        if missing := [k for k in ("id", "prompt") if k not in row]:
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
        return Task(str(row["id"]), str(row["prompt"]), dict(files), entry, tests["public_tests"],
                    tests["hidden_tests"], row.get("fn_name"), dict(row.get("meta") or {}))


class MalformedRowWarning(UserWarning):
    """Rows of a benchmark file that could not be turned into a Task (skipped)."""


def read_rows(path: Path) -> Iterator[Row]:
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


def collect(bench: str, items: Iterable[tuple[str, object, Callable]], strict: bool) -> list[Task]:
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
        except Exception as e:  # untrusted rows of many shapes: any failure is that row's, named by its location
            reason = (f"missing field {e}" if isinstance(e, KeyError) else str(e) if isinstance(e, ValueError)
                      else f"{type(e).__name__}: {e}")
            if strict:
                raise ValueError(f"{bench}: {where}: {reason}") from None
            bad.append(f"{where}: {reason[:160]}")
            continue
        seen[task.id] = where
        out.append(task)
    if bad:
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        warnings.warn(f"{bench}: skipped {len(bad)} malformed row(s): {'; '.join(bad[:5])}{more} "
                      "(strict=True / --strict makes this an error)", MalformedRowWarning, stacklevel=3)
    return out


def with_convert(rows: Iterable[Row], convert: Callable) -> Iterator[tuple[str, object, Callable]]:
    return ((where, row, convert) for where, row in rows)


def choices(value, allowed: tuple[str, ...] | None, name: str) -> set[str] | None:
    """'easy,medium' or ['easy', 'medium'] -> {'easy', 'medium'}, checked against `allowed`."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    chosen = {str(v).strip().lower() for v in items if str(v).strip()}
    if allowed and chosen - set(allowed):
        raise ValueError(f"unknown {name} {', '.join(sorted(chosen - set(allowed)))}; accepted: {', '.join(allowed)}")
    return chosen


def keep(tasks: list[Task], key: str, chosen: set[str] | None) -> list[Task]:
    return tasks if chosen is None else [t for t in tasks if str(t.meta.get(key, "")).lower() in chosen]


def load(path: str | Path, strict: bool = False, difficulty=None, platform=None, split=None) -> list[Task]:
    """Our own format: one `Task.to_json()` object per line; filters on meta's difficulty, platform, split."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"task file {path} does not exist; pass an existing .jsonl file")
    tasks = collect("jsonl", with_convert(read_rows(Path(path)), Task.from_json), strict)
    tasks = keep(tasks, "difficulty", choices(difficulty, None, "difficulty"))
    tasks = keep(tasks, "split", choices(split, None, "split"))
    return keep(tasks, "platform", choices(platform, None, "platform"))
