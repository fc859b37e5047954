"""APPS: rows -> Tasks with stdio or call tests.

    python -c "import benchmarks; print(len(benchmarks.load('apps', 'tests/fixtures/apps.jsonl')))"

Filters difficulty, split. Public tests: those the statement shows; the prompt is the APPS paper's.
"""

from __future__ import annotations

import json
import re

from benchmarks.rows import hub_rows, jsonish, local_rows, text, text_id
from tasks import Task, Test, choices, collect, keep, with_convert

APPS_REPO = "codeparrot/apps"
APPS_DIFFICULTIES = ("introductory", "interview", "competition")


def _norm(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip().splitlines())


def _statement_examples(question: str) -> set[tuple[str, str]]:
    """(input, output) pairs the statement shows, e.g. 'Input\\n3\\n\\nOutput\\n6' (Codeforces, CodeChef style)."""
    pat = (r"(?:^|\n)\s*-*\s*(?:Sample )?Input[^\n]*:?\s*\n(.*?)"
           r"\n\s*-*\s*(?:Sample )?Output[^\n]*:?\s*\n(.*?)(?=\n\s*\n|\n\s*-{3,}|\Z)")
    return {(_norm(i), _norm(o)) for i, o in re.findall(pat, question, re.S)}


def _apps_task(row: dict) -> Task:
    io_spec = jsonish(row["input_output"], "input_output")
    if not isinstance(io_spec, dict) or not io_spec.get("inputs") or len(io_spec["inputs"]) != len(io_spec["outputs"]):
        raise ValueError("input_output needs equally long non-empty inputs and outputs")
    fn_name, question = io_spec.get("fn_name") or None, text(row["question"], "question")
    ins, outs = io_spec["inputs"], io_spec["outputs"]
    if fn_name:  # APPS wraps each expected value in a one-element list; its grader accepts either form
        outs = [o[0] if isinstance(o, list) and len(o) == 1 else o for o in outs]
        tests = [Test("call", "\n".join(json.dumps(a) for a in (i if isinstance(i, list) else [i])), json.dumps(o))
                 for i, o in zip(ins, outs)]
        public = []
    else:
        tests = [Test("stdio", text(i, "input"), text(o, "output")) for i, o in zip(ins, outs)]
        shown = _statement_examples(question)
        public = [t for t in tests if (_norm(t.input), _norm(t.output)) in shown]
    starter = row.get("starter_code") or ""
    fmt = "Use Call-Based format" if fn_name else "Use Standard Input format"  # the APPS paper's prompt
    meta = {"source": "apps", "difficulty": str(row.get("difficulty", "")).lower(), "url": row.get("url", "")}
    return Task(text_id(row["problem_id"], "problem_id"), f"\nQUESTION:\n{question}\n{starter}\n{fmt}\nANSWER:\n",
                {"solution.py": starter}, public_tests=public, hidden_tests=tests, fn_name=fn_name, meta=meta)


def load(path=None, *, strict=False, difficulty=None, split="test") -> list[Task]:
    chosen = choices(difficulty, APPS_DIFFICULTIES, "difficulty")
    if path is None:  # codeparrot/apps is a loading script, which datasets no longer runs: read its JSONL
        url = f"hf://datasets/{APPS_REPO}/{split}.jsonl"
        rows = hub_rows(f"{APPS_REPO} {split}", "json", data_files=url, split="train")
    else:
        rows = local_rows(path, split)
    return keep(collect("apps", with_convert(rows, _apps_task), strict), "difficulty", chosen)
