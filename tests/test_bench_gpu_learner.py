"""bench/gpu_learner.py keeps running: --smoke goes through the same code path on CPU and prints
the table the GPU run prints, and without a GPU the plain command refuses in one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/gpu_learner.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


def test_smoke_prints_the_table_with_numbers():
    r = _run("--smoke")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = r.stdout

    def value(label: str) -> float:
        m = re.search(rf"^{label}\s+{NUMBER}", rows, re.M)
        assert m, f"no {label!r} row with a number in:\n{rows}"
        return float(m.group(1))

    assert value(r"update tokens/s") > 0
    assert value(r"update step time \(s\)") > 0
    assert re.search(rf"^MFU \(6N, peak 989 TFLOPS\)\s+{NUMBER}%", rows, re.M), rows
    chunked = value(r"peak memory chunked log-probs @ 256 tokens \(MiB\)")
    naive = value(r"peak memory naive log-probs @ 256 tokens \(MiB\)")
    # Full (T, V) logits kept for backward must cost more than one 64-token chunk at a time.
    assert 0 < chunked < naive, rows
    assert "activation checkpointing (full) 2/2 layers, eager layers" in rows, rows
    # Padded vs packed on lengths 128, 256 (budget 384): one packed micro-batch of the real tokens.
    assert value(r"padded tokens/s") > 0 and value(r"packed tokens/s") > 0
    assert re.search(r"^packed micro-batches / row tokens\s+1 / 384$", rows, re.M), rows
    diff = re.search(r"^max \|log-prob packed - padded\|\s+(\S+)$", rows, re.M)
    assert diff and float(diff.group(1)) < 1e-5, rows  # fp32: the same log-probs up to rounding


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without a GPU")
def test_without_gpu_or_smoke_it_says_so_in_one_line():
    r = _run()
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0] and "--smoke" in lines[0], r.stderr
    assert r.stdout == ""


def test_bad_flag_value_is_one_line():
    r = _run("--smoke", "--seq", "0")
    assert r.returncode != 0
    assert r.stderr.strip() == "error: --seq must be positive, got 0", r.stderr


def test_smoke_runs_the_learner_flags():
    r = _run("--smoke", "--checkpointing", "selective")  # --compile's parity: tests/test_learner_flags.py
    assert r.returncode == 0, r.stderr[-2000:]
    assert "activation checkpointing (selective) 2/2 layers, eager layers" in r.stdout, r.stdout


def test_the_gpu_vllm_script_without_vllm_says_so_in_one_line(monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_gpu_vllm", ROOT / "bench" / "gpu_vllm.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    assert script.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "vLLM is not installed here" in out, out
