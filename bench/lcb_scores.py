"""eval.py's LiveCodeBench files, read by LiveCodeBench's own code: the same pass@1 as ours?

    git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/lcb   # its code is not ours to ship
    python bench/lcb_scores.py --lcb /tmp/lcb                            # + the embedded model, n 10
    python bench/lcb_scores.py --lcb /tmp/lcb --model none               # the samples file only

Two runs of `eval.py --bench livecodebench` with LiveCodeBench's conventions (the default) on bench/lcb.py's
8 problems, written as a local LCB snapshot (test.jsonl in code_generation_lite's format):
  * samples: bench/lcb.py's 80 generations as a samples file (right, wrong, crashing), so pass@1 is far
    from 0 and 1;
  * model:   the embedded model (or --model) generating n 10 on the first --limit problems, with LCB's
    prompt, extraction and 6 s per test; --max-tokens keeps it short on a CPU.
For each run, three pass@1 that must agree:
  * ours:     results.json's overall pass@1;
  * scorer:   lcb_runner.evaluation.compute_scores reading our Scenario.codegeneration_{n}_{T}_eval_all.json;
  * regraded: lcb_runner's evaluate_generations grading the code_list of our Scenario.codegeneration_{n}_{T}.json
    against problems built by its own CodeGenerationProblem from the same rows (per sample too).
Exit 1 on any disagreement; without --lcb it says so in one line, exit 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def grading_bench():
    """bench/lcb.py: its problems and generations, and its driver of LiveCodeBench's runner."""
    spec = importlib.util.spec_from_file_location("bench_lcb", ROOT / "bench" / "lcb.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def eval_run(args: list[str], out: Path) -> tuple[dict, Path, Path]:
    """(results.json, the codegeneration file, the eval_all file) of one eval.py run."""
    cmd = [sys.executable, "eval.py", "--bench", "livecodebench", "--out", str(out), *args]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench/lcb_scores.py: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-600:]}")
    result = json.loads((out / "results.json").read_text())
    eval_all = next(out.glob("Scenario.codegeneration_*_eval_all.json"))
    return result, out / eval_all.name.replace("_eval_all", ""), eval_all


def scorer(lcb: Path, eval_all: Path) -> float:
    """Pass@1 as LiveCodeBench's compute_scores prints it, reading our file."""
    r = subprocess.run([sys.executable, "-m", "lcb_runner.evaluation.compute_scores", "--eval_all_file",
                        str(eval_all)], cwd=lcb, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(lcb)})
    found = re.search(r"^Pass@1: ([0-9.]+)$", r.stdout, re.M)
    if r.returncode != 0 or not found:
        sys.exit(f"bench/lcb_scores.py: compute_scores failed on {eval_all}: {(r.stderr or r.stdout)[-600:]}")
    return float(found.group(1))


def regraded(bench, lcb: Path, problems: list[dict], codegen: Path, workers: int) -> list[list[bool]]:
    """LiveCodeBench's verdict on each sample of our codegeneration file, per problem."""
    codes = {row["question_id"]: row["code_list"] for row in json.loads(codegen.read_text())}
    mine = [p for p in problems if p["question_id"] in codes]
    flat = iter(bench.theirs(lcb, mine, codes, workers, timeout=6))
    return [[next(flat) for _ in codes[p["question_id"]]] for p in mine]


def check(name: str, bench, lcb: Path, problems: list[dict], run: tuple, workers: int) -> bool:
    result, codegen, eval_all = run
    ours = result["overall"]["pass@1"]
    by_scorer = scorer(lcb, eval_all)
    verdicts = regraded(bench, lcb, problems, codegen, workers)
    by_regrade = sum(sum(v) / len(v) for v in verdicts) / len(verdicts)
    graded = [row["graded_list"] for row in json.loads(eval_all.read_text())]
    same = sum(a == b for g, v in zip(graded, verdicts) for a, b in zip(g, v))
    n = sum(map(len, graded))
    agree = abs(ours - by_scorer) < 1e-9 and abs(ours - by_regrade) < 1e-9 and same == n
    print(f"{name:8s}: {len(graded)} problems x {n // len(graded)} samples; pass@1 ours {ours:.4f}, compute_scores "
          f"{by_scorer:.4f}, LCB regrade {by_regrade:.4f}; verdicts {same}/{n} identical -> "
          + ("agree" if agree else "DISAGREE"))
    return agree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lcb", default=os.environ.get("LCB_PATH", ""), help="a LiveCodeBench checkout (lcb_runner/)")
    ap.add_argument("--model", default="", help="eval.py --model (default: the embedded smollm2-135m; none: skip)")
    ap.add_argument("--limit", type=int, default=3, help="problems the model generates for")
    ap.add_argument("--max-tokens", type=int, default=192, help="per response (LiveCodeBench's own: 2000)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    lcb = Path(args.lcb) if args.lcb else None
    if lcb is None or not (lcb / "lcb_runner" / "evaluation" / "compute_scores.py").is_file():
        print(f"bench/lcb_scores.py: no LiveCodeBench checkout at {args.lcb or '(none given)'}; pass --lcb DIR "
              "(git clone https://github.com/LiveCodeBench/LiveCodeBench)")
        return 0
    bench = grading_bench()
    problems, gens = bench.rows()
    ok = True
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in problems))
        samples = d / "samples.jsonl"
        samples.write_text("".join(json.dumps({"task_id": q, "code": c}) + "\n" for q, cs in gens.items() for c in cs))
        run = eval_run(["--path", str(d), "--samples", str(samples)], d / "samples")
        ok &= check("samples", bench, lcb, problems, run, args.workers)
        if args.model != "none":
            model = ["--model", args.model or "smollm2-135m"]  # models.EMBEDDED
            run = eval_run(["--path", str(d), *model, "--limit", str(args.limit), "--max-tokens",
                            str(args.max_tokens)], d / "model")
            ok &= check("model", bench, lcb, problems, run, args.workers)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
