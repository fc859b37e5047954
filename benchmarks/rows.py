"""Reading benchmark rows: local files and dataset directories, the Hugging Face hub, field checks.

    python -m pytest tests/test_tasks.py -q

Loaders read `(where, row)` pairs here and hand them with a converter to `tasks.collect`; the field helpers raise
ValueError naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from tasks import Row, read_rows


def dataset_rows(ds, label: str, split: str) -> Iterator[Row]:
    """Rows of a `datasets` Dataset, or of `split` of a DatasetDict."""
    import datasets
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise ValueError(f"{label} has splits {', '.join(ds)}, not {split!r}; pass split=")
        ds = ds[split]
    yield from ((f"{label} row {i}", row) for i, row in enumerate(ds))


def hub_id(path: str | Path) -> bool:
    """`owner/name` naming no local path: a Hugging Face dataset id."""
    return not Path(path).exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", str(path)) is not None


def local_rows(path: str | Path, split: str = "test") -> Iterator[Row]:
    """Rows of a local file or dataset directory, or of a hub dataset id (`owner/name`) in the same format."""
    if hub_id(path):
        yield from hub_rows(str(path), str(path), split=split)
        return
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass a .jsonl/.json/.parquet file, a dataset directory "
                                "or a hub dataset id (owner/name)")
    if path.is_file():
        yield from read_rows(path)
        return
    if any((path / m).exists() for m in ("dataset_info.json", "dataset_dict.json", "state.json")):
        import datasets  # a `save_to_disk` directory
        yield from dataset_rows(datasets.load_from_disk(str(path)), str(path), split)
        return
    if not (files := sorted(p for p in path.iterdir() if re.search(r"\.(jsonl|json|jsonl\.gz|parquet)$", p.name))):
        raise FileNotFoundError(f"{path} holds no .jsonl/.json/.parquet file and is not a saved dataset")
    for p in files:
        yield from read_rows(p)


def hub_rows(label: str, *args, split: str = "test", **kwargs) -> Iterator[Row]:
    import datasets
    try:
        ds = datasets.load_dataset(*args, split=split, **kwargs)
    except Exception as e:  # network, auth, missing file: all mean "use a local copy"
        raise ValueError(f"could not load {label} from the Hugging Face hub ({type(e).__name__}: {str(e)[:200]}); "
                         "pass path= (eval.py --path) to a local copy") from None
    yield from dataset_rows(ds, label, split)


def jsonish(value, name: str):
    """A field that the hub stores as a JSON string but local copies may hold parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name} is not valid JSON ({e.msg})") from None
    return value


def text(value, name: str) -> str:
    if isinstance(value, list):  # APPS stores some stdin as a list of lines
        value = "\n".join(map(str, value))
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {type(value).__name__}")
    return value


def text_id(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise ValueError(f"{name} must be a non-empty string or integer, got {value!r}")
    return str(value)


def parse_date(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.strptime(str(value), "%Y-%m-%d")
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a date; use YYYY-MM-DD") from None
