"""Benchmark and task loading: the `Task` and `Test` records every module shares.

    from tasks import load
    tasks = load("data/tasks.jsonl")          # our own JSONL format

A task's *public* tests are what the agent may see (statement examples,
LiveCodeBench public cases); everything else is hidden and never reaches a
prompt, an observation or the workspace.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

TEST_KINDS = ("stdio", "call", "assert")


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


def load_jsonl(path: str | Path) -> list[Task]:
    """Our own format: one `Task.to_json()` object per line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"task file {path} does not exist; pass an existing .jsonl file")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(Task.from_json(json.loads(line)))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{n}: {e}") from None
    return out


def load(name: str, path: str | Path | None = None, **filters) -> list[Task]:
    """Load a benchmark by name, or a JSONL task file by path."""
    if name == "jsonl" or name.endswith(".jsonl"):
        return load_jsonl(path or name)
    raise ValueError(f"unknown task set {name!r}; accepted: jsonl or a path ending in .jsonl")
