"""cli: dataclass fields as flags, comments and defaults as help, one-line errors, the git revision."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import cli

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Demo:
    name: str                     # what to call it
    dual_clip: bool = True        # a default True must be switchable off
    limit: int | None = None      # first N; none: all
    ks: list[int] = dataclasses.field(default_factory=lambda: [1, 5])  # comma-separated,
                                                                       # two comment lines
    rate: float = 0.5
    stop: list[str] = dataclasses.field(default_factory=list)
    table: dict = dataclasses.field(default_factory=dict)  # not a flag


def test_only_given_flags_come_back_converted():
    assert cli.parse(["--name", "x"], Demo) == {"name": "x"}
    got = cli.parse(["--name", "x", "--no-dual-clip", "--limit", "3", "--ks", "2,4", "--rate", "1e-3"], Demo)
    assert got == {"name": "x", "dual_clip": False, "limit": 3, "ks": [2, 4], "rate": 1e-3}
    assert cli.parse(["--name", "x", "--limit", "none", "--dual-clip"], Demo) == {"name": "x", "limit": None,
                                                                                   "dual_clip": True}
    assert Demo(**got).dual_clip is False
    assert cli.parse(["--name", "x", "--stop", r"\n```\n,\tx"], Demo)["stop"] == ["\n```\n", "\tx"]  # escapes


def test_help_shows_each_comment_and_default():
    text = cli.parser(Demo).format_help()
    assert "--dual-clip, --no-dual-clip" in text and "a default True must be switchable off (default: True)" in text
    assert "comma-separated, two comment lines (default: 1,5)" in text
    assert "what to call it (required)" in text and "(default: 0.5)" in text and "--table" not in text


@pytest.mark.parametrize("argv, message", [
    (["--name", "x", "--limt", "3"], "unknown option --limt (did you mean --limit?)"),
    (["--name", "x", "--limit", "three"], "argument --limit: invalid int value: 'three'"),
    (["--name", "x", "--ks", "1,x"], "--ks '1,x' is not a comma-separated list of integers"),
    ([], "the following arguments are required: --name"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse(argv, Demo)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ") and message in err, err


def test_eval_help_lists_every_config_field_with_its_default():
    r = subprocess.run([sys.executable, "eval.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--max-tokens N" in r.stdout and "per response (default: 2048)" in r.stdout
    assert "--strict, --no-strict" in r.stdout and "--release TEXT" in r.stdout


def test_git_revision_is_the_checked_out_commit(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert cli.git_revision() == head and len(head) == 40
    assert cli.git_revision(tmp_path) == "unknown"  # not a repository


def test_train_flags_reach_the_estimator():
    import train
    cfg = train.Config(**cli.parse(["--no-verdict", "--baseline", "contrast", "--lam", "0.5"], train.Config))
    acfg = train.adv_config(cfg)
    assert (acfg.verdict, acfg.baseline, acfg.lam) == (False, "contrast", 0.5)
