"""Training data: any benchmark, dataset file or task file as the training set, mixed and filtered, with a
contamination guard against the evaluation you name.

    python train.py --tasks "livecodebench:end_date=2024-07-31" --holdout "livecodebench:start_date=2024-08-01"
    python train.py --tasks "data/tasks.jsonl+apps@data/apps.parquet:difficulty=introductory" --max-prompt-chars 4000

A source is `PATH.jsonl` (the project's task format) or `NAME[@PATH][:key=value,...]`: NAME one of
benchmarks.list_benchmarks(), PATH a local file or directory in that benchmark's hub format (the hub when omitted),
the keys its filters (benchmarks.filters_of). Sources join with "+"; a task id seen twice keeps its first source.

`select` drops, and says why for each (the run directory's excluded.jsonl):
  * a task with no hidden test (nothing to reward);
  * one whose prompt is longer than max_prompt_chars, or whose meta.difficulty is not asked for;
  * one released on or after `cutoff` (LiveCodeBench's protocol: train before a date, evaluate after it);
  * one whose normalized problem text (lowercase, alphanumeric words) is that of a `holdout` task, across
    sources: the same problem under another id or in another benchmark's format;
  * a second copy of a problem already kept.
`order` walks the kept tasks epoch by epoch, each epoch its own shuffle of the run's seed, so a resumed run
(which keeps its cursor) draws what the uninterrupted one would have.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import benchmarks
from benchmarks.rows import hub_id
from tasks import Task


class DataError(ValueError):
    """A source that cannot be read, or a training set left empty: train.py prints it as one line."""


def parse(spec: str) -> list[tuple[str, str | None, dict[str, str]]]:
    """(benchmark name, path or None, filters) for each "+"-joined source; one clear line for a bad one."""
    out = []
    for part in [p.strip() for p in spec.split("+")]:
        if not part:
            raise DataError(f"--tasks {spec!r}: an empty source; join sources with a single '+'")
        if part.endswith(".jsonl") and ":" not in part and "@" not in part:
            if not Path(part).is_file():
                raise DataError(f"--tasks {part}: no such file; pass a task .jsonl file or NAME[@PATH][:key=value]")
            out.append(("jsonl", part, {}))
            continue
        head, _, opts = part.partition(":")
        name, _, path = head.partition("@")
        filters = {}
        for kv in [x for x in opts.split(",") if x]:
            k, eq, v = kv.partition("=")
            if not eq or not k:
                raise DataError(f"--tasks {part!r}: filter {kv!r} is not key=value (e.g. difficulty=easy)")
            filters[k.strip()] = v.strip()
        if name not in benchmarks.list_benchmarks():
            raise DataError(f"--tasks {part!r}: unknown source {name!r}; use a .jsonl task file or one of "
                             f"{', '.join(benchmarks.list_benchmarks())} (NAME[@PATH][:key=value,...])")
        if path and not Path(path).exists() and not hub_id(path):
            raise DataError(f"--tasks {part!r}: {path} is neither a local file or directory nor a hub dataset id "
                            "(owner/name)")
        out.append((name, path or None, filters))
    return out


def load(spec: str) -> list[Task]:
    """Every task of every source, in order; a task id already seen keeps its first source."""
    seen, out = set(), []
    for name, path, filters in parse(spec):
        try:
            found = benchmarks.load(name, path, **filters)
        except (ValueError, OSError) as e:  # a filter it lacks, an unreachable hub, an unreadable file
            raise DataError(f"--tasks {spec}: {e}") from None
        for t in found:
            if t.id not in seen:
                seen.add(t.id)
                out.append(t)
    return out


def problem_text(t: Task) -> str:
    """The problem as overlap is judged: its prompt's alphanumeric words, lowercased."""
    return " ".join(re.findall(r"[a-z0-9]+", t.prompt.lower()))


def released(t: Task) -> date | None:
    d = t.meta.get("contest_date") or t.meta.get("release_date")
    try:
        return datetime.fromisoformat(str(d)).date() if d else None
    except ValueError:
        return None


def select(tasks: list[Task], difficulty: str = "", max_prompt_chars: int = 0, cutoff: str = "",
           holdout: list[Task] = ()) -> tuple[list[Task], list[dict]]:
    """(the tasks kept, one {"id", "source", "why"} per task dropped); module docstring."""
    try:
        cut = date.fromisoformat(cutoff) if cutoff else None
    except ValueError:
        raise DataError(f"--cutoff {cutoff!r} is not a date; use YYYY-MM-DD") from None
    levels = set(difficulty.split(",")) if difficulty else None
    held = {problem_text(h): h.id for h in holdout}
    first: dict[str, str] = {}  # problem text -> the id kept for it

    def why(t: Task, text: str) -> str:
        if not t.hidden_tests:
            return "no hidden tests"
        if max_prompt_chars and len(t.prompt) > max_prompt_chars:
            return f"prompt of {len(t.prompt)} chars > {max_prompt_chars}"
        if levels is not None and t.meta.get("difficulty") not in levels:
            return f"difficulty {t.meta.get('difficulty')!r} not in {difficulty!r}"
        if cut and (day := released(t)) and day >= cut:
            return f"released {day}, on or after the cutoff {cut}"
        if text in held:
            return f"the held-out problem {held[text]}"
        return f"a copy of {first[text]}" if text in first else ""

    kept, dropped = [], []
    for t in tasks:
        if reason := why(t, text := problem_text(t)):
            dropped.append({"id": t.id, "source": t.meta.get("source", ""), "why": reason})
        else:
            first[text] = t.id
            kept.append(t)
    return kept, dropped


def write_excluded(run: Path, dropped: list[dict]) -> Path:
    path = Path(run) / "excluded.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in dropped))
    return path


def order(tasks: list[Task], seed: int, k: int) -> Task:
    """The task at position k of the run: epoch k // n is its own shuffle of the seed (epoch 0: as it always was)."""
    epoch, i = divmod(k, len(tasks))
    return tasks[_permutation(len(tasks), seed, epoch)[i]]


@functools.lru_cache(maxsize=2)  # a window reads one epoch, or straddles two
def _permutation(n: int, seed: int, epoch: int) -> list[int]:
    idx = list(range(n))
    random.Random(seed if epoch == 0 else f"{seed}/{epoch}").shuffle(idx)
    return idx


# select's reasons, by how each begins, as the summary line names them
_LABELS = (("no hidden", "no tests"), ("prompt of", "too long"), ("difficulty", "difficulty"),
           ("released", "after the cutoff"), ("the held-out", "held out"), ("a copy", "copies"))


def training_set(spec: str, holdout: str = "", cutoff: str = "", difficulty: str = "",
                 max_prompt_chars: int = 0) -> tuple[list[Task], list[dict], str]:
    """(tasks kept, tasks dropped with why, the one line that says so) for train.py's --tasks and its guards."""
    found = load(spec)
    kept, dropped = select(found, difficulty, max_prompt_chars, cutoff, load(holdout) if holdout else [])
    counts = Counter(next(label for start, label in _LABELS if d["why"].startswith(start)) for d in dropped)
    why = f" ({', '.join(f'{k}: {n}' for k, n in sorted(counts.items()))}), listed in excluded.jsonl" if counts else ""
    line = f"data: {len(kept)} of {len(found)} tasks from {spec}; removed {len(dropped)}{why}"
    if not kept:
        levels = sorted({str(t.meta.get("difficulty")) for t in found})
        raise DataError(f"--tasks {spec}: no task left of {len(found)} (difficulties {', '.join(levels)}; "
                         f"--difficulty {difficulty!r}, --cutoff {cutoff!r}); pass --difficulty '' to keep every level")
    return kept, dropped, line
