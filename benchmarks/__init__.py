"""The benchmark registry: load any benchmark by name into `tasks.Task` records.

    python -c "import benchmarks; print(len(benchmarks.load('humaneval')))"          # 164, offline

Each benchmark is read in its published format by its own module here (its docstring lists its fields and
filters); "jsonl" is our own (tasks.load). `path` (a file, a dataset directory or a hub id `owner/name` in the same
format) replaces the benchmark's own hub dataset.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import tasks
from benchmarks import apps, humaneval, livecodebench, mbpp
from tasks import Task

LOADERS: dict[str, Callable[..., list[Task]]] = {"livecodebench": livecodebench.load, "humaneval": humaneval.load,
                                                  "mbpp": mbpp.load, "apps": apps.load, "jsonl": tasks.load}


def list_benchmarks() -> list[str]:
    return list(LOADERS)


def filters_of(name: str) -> list[str]:
    """The filter keywords a benchmark's loader accepts."""
    return [p for p in inspect.signature(LOADERS[name]).parameters if p not in ("path", "strict")]


def load(name: str, path: str | Path | None = None, strict: bool = False, **filters) -> list[Task]:
    """Load a benchmark by name (see list_benchmarks()), or a JSONL task file by path."""
    if name not in LOADERS and str(name).endswith(".jsonl") and path is None:
        name, path = "jsonl", name
    if name not in LOADERS:
        raise ValueError(f"unknown benchmark {name!r}; accepted: {', '.join(LOADERS)} (or a path ending in .jsonl)")
    filters = {k: v for k, v in filters.items() if v is not None}
    if unknown := sorted(set(filters) - set(filters_of(name))):
        accepted = ", ".join(filters_of(name)) or "none"
        raise ValueError(f"{name} has no filter {', '.join(unknown)}; accepted: {accepted}")
    if name == "jsonl" and path is None:
        raise ValueError("the jsonl benchmark needs a path to a .jsonl task file")
    return LOADERS[name](path, strict=strict, **filters)
