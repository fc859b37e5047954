"""LiveCodeBench (code_generation_lite): rows in their published format -> Tasks.

    python -c "import benchmarks; print(len(benchmarks.load('livecodebench', release='release_v2')))"   # hub

Private tests are JSON or base64(zlib(pickle(str))), unpickled by a loader that builds nothing but a str;
`metadata.func_name` makes call tests, else stdio. Filters: release (release_vN cumulative, release_latest, vN one
file, vA_vB a range), start_date / end_date (YYYY-MM-DD, inclusive), difficulty, platform. LCB's own prompt.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from datetime import datetime
from itertools import chain
from pathlib import Path

from benchmarks.rows import hub_rows, jsonish, local_rows, parse_date, text, text_id
from tasks import Task, Test, choices, collect, keep, read_rows, with_convert

LCB_REPO = "livecodebench/code_generation_lite"
LCB_VERSIONS = 6  # test.jsonl, test2.jsonl, ..., test6.jsonl on the hub
LCB_PLATFORMS = ("leetcode", "codeforces", "atcoder")
LCB_DIFFICULTIES = ("easy", "medium", "hard")

# LiveCodeBench's generic prompt (lcb_runner/prompts/code_generation.py).
LCB_SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
              "generate a correct Python program that matches the specification and passes all tests.")
_LCB_WITH_STARTER = ("You will use the following starter code to write the solution to the problem and enclose your "
                     "code within delimiters.")
_LCB_STDIN = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on "
              "the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program "
              "runs, it reads the inputs, runs the algorithm and writes output to STDOUT.")
_LCB_ANSWER = "### Answer: (use the provided format with backticks)\n\n"
# LMStyle.CodeQwenInstruct (Qwen2.5-Coder): a raw ChatML prompt, not a chat template (lcb_runner/prompts).
_CODEQWEN = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n\nYou will be given a "
             "question (problem specification) and will generate a correct Python program that matches the "
             "specification and passes all tests. You will NOT return anything except for the program.\n\n"
             "Question: {content}\n\n{fmt}\n```python\n{code}\n```\n\n<|im_end|>\n<|im_start|>assistant\n")


def codeqwen_prompt(task: Task) -> str:
    """LiveCodeBench's prompt for the Qwen2.5-Coder family, as its own runner sends it."""
    starter = task.files.get(task.entry, "")
    fmt = _LCB_WITH_STARTER if starter else _LCB_STDIN
    return _CODEQWEN.format(content=task.meta["question_content"], fmt=fmt, code=starter or "# YOUR CODE HERE")


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
    raise ValueError(f"unknown release {release!r}; accepted: release_latest, release_v1..release_v{LCB_VERSIONS}, "
                     f"v1..v{LCB_VERSIONS}, vA_vB with A < B")


def _lcb_test(t, kind: str) -> Test:
    if not isinstance(t, dict) or not isinstance(t.get("input"), str) or not isinstance(t.get("output"), str):
        raise ValueError(f"bad test case {str(t)[:60]!r} (need input and output strings)")
    return Test(kind, t["input"], t["output"])


def _lcb_task(row: dict, release: str | None = None) -> Task:
    metadata = jsonish(row.get("metadata") or "{}", "metadata")
    if not isinstance(metadata, dict):
        raise ValueError("metadata must be a JSON object")
    fn_name = metadata.get("func_name") or None
    kind = "call" if fn_name else "stdio"  # LiveCodeBench itself never reads `testtype`
    public = [_lcb_test(t, kind) for t in jsonish(row["public_test_cases"], "public_test_cases")]
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
    content = text(row["question_content"], "question_content")
    fmt = f"{_LCB_WITH_STARTER if starter else _LCB_STDIN}\n```python\n{starter or '# YOUR CODE HERE'}\n```"
    prompt = f"### Question:\n{content}\n\n### Format: {fmt}\n\n{_LCB_ANSWER}"
    meta = {"source": "livecodebench", "platform": platform, "difficulty": difficulty,
            "contest_date": date.isoformat(), "contest_id": str(row.get("contest_id", "")),
            "title": str(row.get("question_title", "")), "system": LCB_SYSTEM, "question_content": content,
            **({"release": release} if release else {})}
    return Task(text_id(row["question_id"], "question_id"), prompt, {"solution.py": starter}, public_tests=public,
                hidden_tests=public + private, fn_name=fn_name, meta=meta)


def load(path=None, *, strict=False, release=None, start_date=None, end_date=None, difficulty=None,
         platform=None) -> list[Task]:
    start, end = parse_date(start_date, "start_date"), parse_date(end_date, "end_date")
    difficulty = choices(difficulty, LCB_DIFFICULTIES, "difficulty")
    platform = choices(platform, LCB_PLATFORMS, "platform")
    versions = {f: f"v{i}" for i, f in enumerate(release_files("release_latest"), 1)}
    snapshot = path is not None and Path(path).is_dir() and (Path(path) / "test.jsonl").exists()
    if path is None or snapshot:
        files = release_files(release or "release_latest")
        if path is not None and release is None:  # a local snapshot, no release asked: every official file it has
            files = [f for f in files if (Path(path) / f).exists()]

        def rows(f):
            if path is None:
                return hub_rows(f"{LCB_REPO}/{f}", "json", data_files=f"hf://datasets/{LCB_REPO}/{f}", split="train")
            return read_rows(Path(path) / f)

        if missing := [f for f in files if path is not None and not (Path(path) / f).exists()]:
            raise FileNotFoundError(f"{path} lacks {', '.join(missing)} needed by release {release or 'release_latest'}"
                                    "; download them from the hub or pick an earlier release")
        items = chain.from_iterable(with_convert(rows(f), lambda r, v=versions[f]: _lcb_task(r, v)) for f in files)
    else:
        if release is not None:
            raise ValueError("release selects among the official files test.jsonl..test6.jsonl: pass the directory "
                             f"holding them, or drop release for the single file {path}")
        items = with_convert(local_rows(path), _lcb_task)
    out = keep(keep(collect("livecodebench", items, strict), "difficulty", difficulty), "platform", platform)
    # LiveCodeBench's own window: start <= contest_date <= end, dates at midnight.
    dates = [datetime.fromisoformat(t.meta["contest_date"]) for t in out]
    return [t for t, d in zip(out, dates) if (start is None or start <= d) and (end is None or d <= end)]


def output_rows(tasks: list[Task], samples: dict[str, list]) -> tuple[list[dict], list[dict]]:
    """LiveCodeBench's own output records, per problem from its samples (response, code, passed): its runner's
    Scenario.codegeneration_{n}_{T}.json and the _eval_all.json its compute_scores reads."""
    rows, graded = [], []
    for t in tasks:
        row = {"question_title": t.meta.get("title", ""), "question_content": t.meta.get("question_content", ""),
               "platform": t.meta.get("platform", ""), "question_id": t.id, "contest_id": t.meta.get("contest_id", ""),
               "contest_date": t.meta.get("contest_date", ""), "starter_code": t.files.get(t.entry, ""),
               "difficulty": t.meta.get("difficulty", ""), "output_list": [s.response for s in samples[t.id]],
               "code_list": [s.code for s in samples[t.id]]}
        marks = [bool(s.passed) for s in samples[t.id]]
        rows.append(row)
        graded.append(row | {"graded_list": marks, "pass@1": marks.count(True) / len(marks)})
    return rows, graded
