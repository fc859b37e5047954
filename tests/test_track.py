"""Experiment tracking (trainer/log.py): W&B project and run name, one W&B run across --resume, a samples
table every N steps, finish() at the end; and training sources that are LCB files or a hub dataset id.

    python -m pytest tests/test_track.py -q

wandb stands in as a module that records the calls (the hub and W&B's servers are unreachable here);
the trainer is the real one, on the tiny model and tests/fixtures/lcb, LiveCodeBench rows in the hub format.
"""

from __future__ import annotations

import json
import sys
import types
import warnings

import pytest


class FakeWandb(types.ModuleType):
    """The part of wandb's API the Logger calls: init -> run.log / run.finish, Table(columns, data)."""

    def __init__(self):
        super().__init__("wandb")
        self.calls: list[tuple] = []
        fake = self

        class Run:
            def log(self, data, step=None):
                fake.calls.append(("log", data, step))

            def finish(self):
                fake.calls.append(("finish",))

        class Table:
            def __init__(self, columns, data):
                self.columns, self.data = columns, data

        self.Run, self.Table = Run, Table

    def init(self, **kw):
        self.calls.append(("init", kw))
        return self.Run()


MIXED = "tests/fixtures/tasks.jsonl+livecodebench@tests/fixtures/lcb"  # two sources, one in LCB's hub format


def _train(argv):
    import train

    with warnings.catch_warnings():  # tests/fixtures/lcb holds malformed rows on purpose (tests/test_tasks.py)
        warnings.simplefilter("ignore")
        train.main(argv)


def test_wandb_logs_samples_finishes_and_a_resume_continues_the_same_run(tmp_path, tiny_model_dir, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: object() if name == "wandb" else None)
    run = tmp_path / "run"
    base = ["--model", str(tiny_model_dir), "--dtype", "float32", "--tasks-per-step", "2", "--group-size", "2",
            "--max-response-tokens", "8", "--tasks", MIXED, "--difficulty", "", "--save-groups", "2"]
    tracked = base + ["--out", str(run), "--wandb", "didpo-tests", "--samples-every", "2", "--save-every", "1"]
    _train(tracked + ["--steps", "2"])
    inits = [c[1] for c in fake.calls if c[0] == "init"]
    assert len(inits) == 1 and inits[0]["project"] == "didpo-tests" and inits[0]["name"] == "run"
    run_id = inits[0]["id"]
    assert (run / "wandb_id").read_text().strip() == run_id
    metrics = [c for c in fake.calls if c[0] == "log" and "reward" in c[1]]
    assert [c[2] for c in metrics] == [1, 2] and all(c[1]["step"] == c[2] for c in metrics)
    tables = [c for c in fake.calls if c[0] == "log" and "samples" in c[1]]
    assert [c[2] for c in tables] == [2]  # every 2 steps
    table = tables[0][1]["samples"]
    assert table.columns == ["step", "task", "reward", "turns", "completion"] and 1 <= len(table.data) <= 4
    assert all(row[0] == 2 and isinstance(row[2], float) and isinstance(row[4], str) for row in table.data)
    assert {row[1] for row in table.data} <= set(drawn(run, 2))  # the rows are this step's trajectories
    assert fake.calls[-1] == ("finish",)

    fake.calls.clear()
    _train(tracked + ["--steps", "3", "--resume", "auto", "--wandb-name", "renamed"])
    inits = [c[1] for c in fake.calls if c[0] == "init"]
    assert inits[0]["id"] == run_id and inits[0]["resume"] == "allow" and inits[0]["name"] == "renamed"
    assert [c[2] for c in fake.calls if c[0] == "log" and "reward" in c[1]] == [3]
    assert fake.calls[-1] == ("finish",)

    # The resumed mixed-source run drew the tasks that the uninterrupted one draws at step 3.
    _train(base + ["--out", str(tmp_path / "whole"), "--steps", "3"])
    assert drawn(run, 3) == drawn(tmp_path / "whole", 3) and len(set(drawn(run, 3))) == 2


def drawn(run, step: int) -> list[str]:
    return [json.loads(line)["task_id"] for line in (run / "groups" / f"step_{step}.jsonl").read_text().splitlines()]


def test_tracking_without_its_package_is_one_line(monkeypatch):
    import train

    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    for flag in (dict(wandb="p"), dict(tensorboard=True)):
        with pytest.raises(ValueError, match="pip install -r requirements-track.txt"):
            train.resolve_config(flag)


def test_a_hub_dataset_id_is_read_in_its_benchmarks_format(monkeypatch):
    """`apps@owner/name`: another hub dataset in APPS' format, loaded through datasets.load_dataset (the hub
    stands in as the local fixture) and converted by the same loader as the local file."""
    import datasets

    from trainer import data

    asked = []

    def load_dataset(*args, split=None, **kw):
        asked.append((args, split))
        return datasets.Dataset.from_json("tests/fixtures/apps.jsonl")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hub = data.load("apps@someone/apps-mirror:difficulty=introductory")
        local = data.load("apps@tests/fixtures/apps.jsonl:difficulty=introductory")
    assert asked == [(("someone/apps-mirror",), "test")]
    assert [t.id for t in hub] == [t.id for t in local] and hub


@pytest.mark.parametrize("spec, needle", [
    ("nowhere.jsonl", "no such file"),
    ("apps@no/such/dir", "neither a local file or directory nor a hub dataset id"),
])
def test_a_source_that_is_not_there_is_one_line(spec, needle):
    from trainer import data

    with pytest.raises(data.DataError, match=needle):
        data.parse(spec)
