"""GPU install check: resolves requirements-gpu.txt with pip's resolver for a GPU node, from a CPU machine.

    python bench/gpu_install.py                                  # requirements-gpu.txt, Python 3.12, glibc 2.35 x86_64
    python bench/gpu_install.py --requirements my.txt --python-version 3.11 --glibc 2.31
    python bench/gpu_install.py --report /tmp/gpu.json           # keep pip's installation report

Runs `pip install --dry-run --ignore-installed --report ... --only-binary=:all: --platform manylinux_2_35_x86_64
... --platform manylinux_2_5_x86_64 --platform manylinux2014_x86_64 ... --python-version 3.12 -r FILE` (every tag
a glibc-2.35 node accepts: pip matches --platform exactly): nothing is installed, nothing is built,
and wheels only (what a GPU node gets from the index; an sdist-only package shows as "no wheel"). Exit 0 and
one line on stdout: the resolved vllm, torch and transformers, the number of packages and the wall time.
Exit 1 and one line on stderr when the set does not resolve (a conflict, a pin with no wheel), when a
`name==version` pin in the file resolved to another version (e.g. a local +cpu build), when vllm, torch or
transformers is missing from the resolved set, when vllm is older than 0.18 (no reload_weights(weights_iterator=),
which rollout.VLLMSampler calls), or when flash-attn is in it (it must stay optional).

pip evaluates environment markers (`python_version > "3.11"`) for the interpreter it runs under, not for
--python-version (pypa/pip#10050), so the resolver runs under a python of that version when one is found
(--python, the running one, python3.X on PATH, pyenv's), with this interpreter's pip; otherwise under the
running one, and the line says which version the markers saw. platform markers are this machine's.
This machine's pip constraints, find-links and extra indexes are not used (PIP_CONSTRAINT etc. set blank:
a GPU node has none of them); the configured index is (PyPI, or a mirror). --use-feature=fast-deps reads
each wheel's metadata by HTTP range requests where the index serves no separate metadata file, instead of
downloading 4 GB of CUDA wheels (--full-downloads turns it off).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
KEY = ("vllm", "torch", "transformers")  # reported, and required in the resolved set
OPTIONAL = ("flash-attn",)  # must not be pulled in by anything
MIN_VLLM = Version("0.18")  # reload_weights(weights_iterator=...), which rollout.VLLMSampler.load_weights calls


def platforms(glibc: str, arch: str = "x86_64") -> list[str]:
    """The manylinux tags a node with this glibc accepts, newest first. pip matches --platform exactly,
    without the older tags a real install accepts, so each one is named."""
    top = int(glibc.split(".")[1])
    tags = [f"manylinux_2_{m}_{arch}" for m in range(top, 4, -1)]
    return tags + [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]


def pins(path: Path, seen: set[Path] | None = None) -> dict[str, str]:
    """{name: version} for each unconditional `name==version` line, following -r includes."""
    seen = seen if seen is not None else set()
    out: dict[str, str] = {}
    if path in seen:
        return out
    seen.add(path)
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip()
        if line.startswith(("-r ", "--requirement ")):
            out.update(pins((path.parent / line.split(None, 1)[1]).resolve(), seen))
            continue
        if not line or line.startswith(("#", "-")):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        specs = list(req.specifier)
        if req.marker is None and len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            out[canonicalize_name(req.name)] = specs[0].version
    return out


def interpreter(version: str, explicit: str | None) -> tuple[str, str | None]:
    """(path, its X.Y): a python of `version` that runs, else the running one; X.Y is None if --python fails."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if explicit:
        return explicit, probe(explicit)
    if here == version:
        return sys.executable, here
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [shutil.which(f"python{version}")] + sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    for cand in filter(None, found):
        if probe(cand) == version:
            return cand, version
    return sys.executable, here


def probe(python: str) -> str | None:
    try:
        r = subprocess.run([python, "-c", 'import sys; print(*sys.version_info[:2], sep=".")'],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def why(out: str) -> str:
    """pip's failure, condensed to one line."""
    lines = [ln.strip() for ln in out.splitlines()]
    if "The conflict is caused by:" in lines:
        i = lines.index("The conflict is caused by:") + 1
        cause = []
        while i < len(lines) and lines[i]:
            cause.append(lines[i])
            i += 1
        return "conflict: " + "; ".join(cause)
    m = re.search(r"Could not find a version that satisfies the requirement (.+?) \(from versions: ([^)]*)\)", out)
    if m:
        have = m.group(2).split(", ")
        has = "none (no wheel: sdist only, or no such release)" if have == ["none"] else ", ".join(have[-4:])
        return f"no wheel for {m.group(1)}; wheels for this platform: {has}"
    errors = [ln.removeprefix("ERROR: ") for ln in lines if ln.startswith("ERROR:")]
    return errors[-1] if errors else (lines[-1] if lines else "pip failed with no output")


def judge(pinned: dict[str, str], got: dict[str, str]) -> str | None:
    """What is wrong with a resolved set {name: version} given the file's pins, or None."""
    wrong = [f"{n}=={v} resolved to {got[n]}" for n, v in pinned.items() if n in got and Version(got[n]) != Version(v)]
    if wrong:
        return "pin not honoured: " + "; ".join(wrong)
    missing = [n for n in KEY if n not in got]
    if missing:
        return f"{', '.join(missing)} not in the resolved set"
    if Version(got["vllm"]) < MIN_VLLM:
        return f"vllm {got['vllm']} < {MIN_VLLM}: its reload_weights() takes no weights_iterator (rollout.py needs it)"
    pulled = [f"{n} {got[n]}" for n in OPTIONAL if n in got]
    if pulled:
        return f"{', '.join(pulled)} is in the resolved set; it must stay optional"
    return None


def check(args: argparse.Namespace) -> tuple[bool, str]:
    """(ok, the one line)."""
    req = Path(args.requirements).resolve()
    if not req.is_file():
        return False, f"no requirements file {req}"
    python, seen_version = interpreter(args.python_version, args.python)
    if seen_version is None:
        return False, f"--python {args.python} does not run"
    tags = platforms(args.glibc)
    with tempfile.TemporaryDirectory(prefix="gpu_install_") as tmp:
        report = Path(tmp) / "report.json"
        env = dict(os.environ, PIP_CONSTRAINT=" ", PIP_FIND_LINKS=" ", PIP_EXTRA_INDEX_URL=" ",
                   PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
        if python != sys.executable:  # this interpreter's pip (pure Python), run by the other one
            import pip

            (Path(tmp) / "lib").mkdir()
            (Path(tmp) / "lib" / "pip").symlink_to(Path(pip.__file__).parent)
            env["PYTHONPATH"] = str(Path(tmp) / "lib")
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", str(report),
               "--only-binary=:all:", "--python-version", args.python_version, "--root-user-action=ignore"]
        cmd += [a for t in tags for a in ("--platform", t)]
        cmd += [] if args.full_downloads else ["--use-feature=fast-deps"]
        cmd += ["--index-url", args.index_url] if args.index_url else []
        cmd += ["-r", str(req)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
        wall = time.perf_counter() - t0
        if r.returncode != 0 or not report.is_file():
            where = f"python {args.python_version} / {tags[0]}"
            return False, f"{req.name} does not resolve for {where}: {why(r.stdout + r.stderr)}"
        data = json.loads(report.read_text())
        if args.report:
            shutil.copyfile(report, args.report)
    got = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in data["install"]}
    bad = judge(pins(req), got)
    if bad:
        return False, f"{req.name}: {bad}"
    markers = "" if seen_version == args.python_version else f", markers evaluated for python {seen_version}"
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        markers += f", platform markers for {platform.system()} {platform.machine()}"
    keys = ", ".join(f"{n} {got[n]}" for n in KEY)
    pip_version = data.get("pip_version", "?")
    return True, (f"{req.name} resolves: {keys}; {len(got)} packages "
                  f"(python {args.python_version}, {tags[0]}{markers}; pip {pip_version}, {wall:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requirements", default=str(ROOT / "requirements-gpu.txt"))
    ap.add_argument("--python-version", default="3.12", help="the GPU image's python, X.Y")
    ap.add_argument("--glibc", default="2.35", help="the GPU image's glibc (2.35: Ubuntu 22.04, CUDA images' base)")
    ap.add_argument("--python", help="an interpreter of --python-version to run pip under (default: found)")
    ap.add_argument("--index-url", help="default: pip's configured index")
    ap.add_argument("--report", help="also write pip's installation report (JSON) here")
    ap.add_argument("--full-downloads", action="store_true", help="no fast-deps: download whole wheels")
    args = ap.parse_args()
    if not re.fullmatch(r"3\.\d+", args.python_version) or not re.fullmatch(r"2\.\d+", args.glibc):
        ap.error("--python-version is X.Y (3.12), --glibc is 2.N (2.35)")
    ok, line = check(args)
    print(line, file=sys.stdout if ok else sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
