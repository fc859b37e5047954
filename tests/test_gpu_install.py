"""requirements-gpu.txt installs as one environment on a GPU node: bench/gpu_install.py resolves it with pip's
resolver (linux x86_64, Python 3.12, wheels only) and holds its pins; a conflicting set fails in one line.
The two resolver tests need the package index (PyPI or the configured mirror): marked `network`, they run in
`make test-network` (.ci/run), not in `make test`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "requirements-gpu.txt"
_spec = importlib.util.spec_from_file_location("bench_gpu_install", ROOT / "bench" / "gpu_install.py")
gpu_install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_install)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/gpu_install.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def _names(path: Path) -> set[str]:
    lines = (ln.split(" #")[0].strip() for ln in path.read_text().splitlines())
    return {canonicalize_name(Requirement(ln).name) for ln in lines if ln and not ln.startswith(("#", "-"))}


@pytest.mark.network
def test_the_gpu_set_resolves_with_its_pins():
    r = _run()
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 1, r.stdout
    pinned = gpu_install.pins(GPU)
    for name in gpu_install.KEY:
        assert f"{name} {pinned[name]}" in r.stdout, r.stdout


@pytest.mark.network
def test_a_conflicting_torch_pin_fails_in_one_line(tmp_path):
    pinned = gpu_install.pins(GPU)
    text = GPU.read_text()
    assert f"\ntorch=={pinned['torch']}\n" in text
    bad = tmp_path / "requirements-conflict.txt"
    bad.write_text(text.replace(f"\ntorch=={pinned['torch']}\n", "\ntorch==2.12.0\n"))
    r = _run("--requirements", str(bad))
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("requirements-conflict.txt does not resolve for python 3.12"), r.stderr
    assert "conflict: The user requested torch==2.12.0" in r.stderr, r.stderr
    assert f"vllm {pinned['vllm']} depends on torch=={pinned['torch']}" in r.stderr, r.stderr


def test_the_gpu_file_pins_the_stack_and_carries_the_cpu_requirements():
    """Offline. The GPU file replaces requirements.txt on a GPU node, so it lists what requirements.txt lists,
    with its own torch and transformers; flash-attn is optional, not a requirement."""
    pinned = gpu_install.pins(GPU)
    assert set(gpu_install.KEY) <= set(pinned), pinned
    assert _names(ROOT / "requirements.txt") <= _names(GPU)
    assert "flash-attn" not in _names(GPU)


def test_pins_and_judge(tmp_path):
    """Offline: what counts as a pin, and each post-resolution refusal."""
    (tmp_path / "base.txt").write_text("numpy==2.3.5  # a comment\nrich>=13\n")
    (tmp_path / "top.txt").write_text("-r base.txt\nvllm==0.32.0\nsix==1.17.0; python_version > '3.11'\n"
                                      "--only-binary=:all:\n# torch==1.0\nTorch == 2.13.0\n")
    pinned = gpu_install.pins(tmp_path / "top.txt")
    assert pinned == {"numpy": "2.3.5", "vllm": "0.32.0", "torch": "2.13.0"}
    good = {"vllm": "0.32.0", "torch": "2.13.0", "transformers": "5.19.0", "numpy": "2.3.5"}
    assert gpu_install.judge(pinned, good) is None
    assert "torch==2.13.0 resolved to 2.13.0+cpu" in gpu_install.judge(pinned, {**good, "torch": "2.13.0+cpu"})
    no_transformers = {k: v for k, v in good.items() if k != "transformers"}
    assert "transformers not in the resolved set" in gpu_install.judge(pinned, no_transformers)
    assert "takes no weights_iterator" in gpu_install.judge({}, {**good, "vllm": "0.17.1"})
    assert "must stay optional" in gpu_install.judge(pinned, {**good, "flash-attn": "2.8.3"})
    assert gpu_install.platforms("2.28")[:2] == ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64"]
    assert "manylinux2014_x86_64" in gpu_install.platforms("2.28")


def test_why_condenses_pip_failures():
    """Offline: pip's failure output, one line."""
    conflict = ("ERROR: Cannot install -r r.txt (line 1) and torch==2.12.0 because these package versions have "
                "conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested torch==2.12.0\n"
                "    vllm 0.32.0 depends on torch==2.13.0\n\nTo fix this you could try to:\n")
    assert gpu_install.why(conflict) == ("conflict: The user requested torch==2.12.0; "
                                         "vllm 0.32.0 depends on torch==2.13.0")
    sdist = ("ERROR: Could not find a version that satisfies the requirement flash-attn (from versions: none)\n"
             "ERROR: No matching distribution found for flash-attn\n")
    assert gpu_install.why(sdist).startswith("no wheel for flash-attn; wheels for this platform: none")
    old_glibc = ("ERROR: Could not find a version that satisfies the requirement llguidance<1.8.0,>=1.7.0 (from vllm) "
                 "(from versions: 0.0.1, 1.6.0, 1.6.1)\nERROR: No matching distribution found for llguidance\n")
    assert gpu_install.why(old_glibc) == ("no wheel for llguidance<1.8.0,>=1.7.0 (from vllm); "
                                          "wheels for this platform: 0.0.1, 1.6.0, 1.6.1")
