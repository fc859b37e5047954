"""MBPP: rows (full or sanitized config) -> Tasks with assert tests.

    python -c "import benchmarks; print(len(benchmarks.load('mbpp', 'tests/fixtures/mbpp.jsonl')))"

Fields text|prompt, test_list, test_setup_code|test_imports; filters subset, split. The first assert is public.
"""

from __future__ import annotations

from benchmarks.rows import hub_rows, local_rows, text, text_id
from tasks import Task, Test, collect, with_convert

MBPP_REPO = "google-research-datasets/mbpp"


def _mbpp_task(row: dict) -> Task:
    statement = text(row.get("text") or row.get("prompt"), "text")  # full config: text; sanitized: prompt
    asserts = row["test_list"]
    if not isinstance(asserts, list) or not asserts or not all(isinstance(a, str) for a in asserts):
        raise ValueError("test_list must be a non-empty list of assert strings")
    setup = "\n".join(row.get("test_imports") or []) or row.get("test_setup_code") or ""
    tests = [Test("assert", f"{setup}\n{a}\n" if setup else f"{a}\n") for a in asserts]
    prompt = f"{statement}\nYour code should pass this test:\n\n{asserts[0]}\n"  # its name and signature
    return Task(text_id(row["task_id"], "task_id"), prompt, {"solution.py": ""}, public_tests=tests[:1],
                hidden_tests=tests, meta={"source": "mbpp"})


def load(path=None, *, strict=False, subset="full", split="test") -> list[Task]:
    if subset not in ("full", "sanitized"):
        raise ValueError(f"unknown mbpp subset {subset!r}; accepted: full, sanitized")
    rows = (hub_rows(f"{MBPP_REPO} ({subset})", MBPP_REPO, subset, split=split) if path is None
            else local_rows(path, split))
    return collect("mbpp", with_convert(rows, _mbpp_task), strict)
