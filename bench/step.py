"""One training step of the embedded default on CPU: today's update against the new one, same run.

    python bench/step.py                      # rollout of the embedded default, then both updates
    python bench/step.py --base c6ef4fc       # the baseline: train.py as of this git revision
    python bench/step.py --tasks-per-step 1   # smaller, for a quick look

One real rollout (the HF sampler, the embedded default's settings: 2 tasks x G 8, one turn of 100
tokens) gives the trajectories and advantages, as `train.py` would; the same rollout also runs with
rollout.py at --base on a plain copy of the model (each row prefills its own prompt, the KV cache grows
by concatenation; new: a group's prompt is prefilled once, the cache appends in place, the linears run
on oneDNN-packed weights).
Then, from the same weights:
  base: `learn` of train.py at --base (fp32, 4 sequences per micro-batch, a separate old-log-prob
        forward, the lm_head over every position), loaded from git;
  new:  `learn` of the working tree with the embedded default's Config (old = current log-probs with
        one step per batch, bf16 autocast where the CPU has fast bf16, micro-batches by token
        budget, a group's shared prompt run once (trainer.prefix), the lm_head only at loss-mask
        positions);
  new fp32: the same with dtype float32, to show what autocast adds;
  new unshared: the same with share_prefix off (each row runs its own prompt), to show what sharing adds.
It prints each update's seconds and their ratio, the step (rollout + advantages + update) both
ways, and how far the new path's log-probs are from fp32's on the response tokens. Timings on a
shared machine are noisy; the ratio is measured in one run.

Measured 2026-12-04 on 2 cores without AVX512-BF16 (every path fp32; 16 rows of 567-588 tokens, prompts
467; the new update runs first, on a fresh heap), after the sampler's in-place KV cache and packed
linears: rollout base 28.5 s, new 15.0 s (generate 14.6 s; the same tokens in 16/16 trajectories);
update base 66.0 s, new 18.8 s (3.50x; 6.9 s of it system time, the kernel zeroing the heap's first
pages), new fp32 on the grown heap 14.7 s, without shared prefixes 36.5 s; step base 94.5 s, new
33.8 s, ratio 2.79x. New vs fp32 log-probs: max |d| 0.0000. The same machine ran slower in the
previous session (base update 103.7 s); there, before this sampler change, new rollout 29.5 s, step
55.7 s. Losses differ from the base's by the entropy bonus, 0 by default since 435811a.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.util
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import didpo  # noqa: E402
import models  # noqa: E402
import tasks as tasklib  # noqa: E402
import train  # noqa: E402


def load_base(rev: str, name: str = "train"):
    """name.py at git revision `rev`, imported as its own module name_base beside the working tree's."""
    r = subprocess.run(["git", "show", f"{rev}:{name}.py"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"error: --base {rev}: git cannot show {name}.py there ({r.stderr.strip()}); pass a revision")
    path = Path(tempfile.mkdtemp()) / f"{name}_base.py"
    path.write_text(r.stdout)
    spec = importlib.util.spec_from_file_location(f"{name}_base", path)
    mod = sys.modules[f"{name}_base"] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(mod)
    return mod


def cpu_seconds() -> tuple[float, float]:
    """(user, system) CPU seconds of this process so far: system time is mostly the kernel zeroing fresh pages."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="c6ef4fc", help="git revision whose train.learn is the baseline")
    ap.add_argument("--tasks-per-step", type=int, default=train.Config.tasks_per_step)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    base = load_base(a.base)
    cfg = train.Config(tasks_per_step=a.tasks_per_step, seed=a.seed)
    rank, world, device = train.init()
    if world != 1:
        sys.exit("error: bench/step.py measures one process; run it without torchrun")

    # The rollout, as train.train does it for step 1.
    keep = set(cfg.difficulty.split(","))
    all_tasks = [t for t in tasklib.load(str(ROOT / cfg.tasks))
                 if not cfg.difficulty or t.meta.get("difficulty") in keep]
    random.Random(cfg.seed).shuffle(all_tasks)
    lm, tok = models.load_model(cfg.model)
    sampler = train.make_sampler(cfg, models.resolve(cfg.model), lm, tok, device)
    acfg = train.adv_config(cfg)
    t_rollout, gen, rolled = {}, {}, {}
    # The base sampler runs on lm itself: make_sampler packed its own copy (hardware.prepack_linears), not lm.
    for name, smp in (("new", sampler), ("base", load_base(a.base, "rollout").HFSampler(lm, tok))):
        torch.manual_seed(cfg.seed * 100003)
        times: dict = {}
        t = time.perf_counter()
        rolled[name], _ = train.rollout_step(all_tasks, smp, tok, cfg, 0, cfg.tasks_per_step, acfg, times)
        t_rollout[name], gen[name] = time.perf_counter() - t, times.get("generate_s", 0)
    groups = rolled["new"]  # the updates train on the new rollout's trajectories
    t = time.perf_counter()
    trajs, advs = [], []
    for g in groups:
        advs += didpo.compute_advantages(g, acfg)
        trajs += g
    t_adv = time.perf_counter() - t
    lens = sorted(len(tr.token_ids) for tr in trajs)
    resp = sum(sum(tr.loss_mask) for tr in trajs)
    same = sum(x.token_ids == y.token_ids for gn, gb in zip(rolled["new"], rolled["base"]) for x, y in zip(gn, gb))
    print(f"step.py: {len(trajs)} trajectories, tokens {lens}, {resp} response tokens; rollout new "
          f"{t_rollout['new']:.1f}s (generate {gen['new']:.1f}s), base {t_rollout['base']:.1f}s (generate "
          f"{gen['base']:.1f}s; the same tokens in {same}/{len(trajs)} trajectories)")

    # Both learners from the same weights, AdamW as in train.py.
    base_cfg = base.Config(tasks_per_step=a.tasks_per_step, seed=a.seed)
    fp32_cfg = dataclasses.replace(cfg, dtype="float32")  # the new path without autocast: what bf16 adds
    unshared_cfg = dataclasses.replace(cfg, share_prefix=False)  # each row runs its own prompt: what sharing adds
    policies = {"base": base.build_learner(copy.deepcopy(lm), base_cfg, device, world),
                "new": train.build_learner(copy.deepcopy(lm), cfg, device, world),
                "new fp32": train.build_learner(copy.deepcopy(lm), fp32_cfg, device, world),
                "new unshared": train.build_learner(copy.deepcopy(lm), unshared_cfg, device, world)}
    print(f"new path: bf16 autocast {policies['new'].autocast}, micro_batch_tokens {cfg.micro_batch_tokens}, "
          f"shared prefixes {policies['new'].share}, one step per batch: old log-probs = current")

    # Log-prob agreement of the new path with fp32 on the response tokens (before any update).
    batches = train.micro_batches(trajs, advs, cfg, device)
    fp32 = base.score(policies["base"], batches)
    new = train.score(policies["new"], batches)
    diff = torch.cat([(n - f)[b[2].bool()] for n, f, b in zip(new, fp32, batches)]).abs()
    print(f"log-probs, new vs fp32 on {diff.numel()} response tokens: mean |d| {diff.mean():.4f}, "
          f"max |d| {diff.max():.4f}")

    secs, metrics = {}, {}
    # The new path first: it pays for growing the process's heap itself, as train.py's first step does.
    for name, mod, c in (("new", train, cfg), ("base", base, base_cfg), ("new fp32", train, fp32_cfg),
                         ("new unshared", train, unshared_cfg)):
        policy = policies[name]
        opt = torch.optim.AdamW(policy.parameters(), lr=c.lr, weight_decay=c.weight_decay)
        t, (u, k) = time.perf_counter(), cpu_seconds()
        metrics[name] = mod.learn(policy, opt, trajs, advs, c, device)
        secs[name] = time.perf_counter() - t
        u1, k1 = cpu_seconds()
        print(f"update {name}: {secs[name]:.1f}s (cpu: user {u1 - u:.1f}s, system {k1 - k:.1f}s)  "
              f"loss {metrics[name]['loss']:+.5f}  grad_norm {metrics[name]['grad_norm']:.4f}", flush=True)
    new_rest, base_rest = t_rollout["new"] + t_adv, t_rollout["base"] + t_adv
    print(f"update: base {secs['base']:.1f}s, new {secs['new']:.1f}s, ratio {secs['base'] / secs['new']:.2f}x "
          f"(new in fp32: {secs['new fp32']:.1f}s, ratio {secs['base'] / secs['new fp32']:.2f}x; new without "
          f"shared prefixes: {secs['new unshared']:.1f}s, ratio {secs['base'] / secs['new unshared']:.2f}x)")
    print(f"step (rollout + advantages + update): base {base_rest + secs['base']:.1f}s, new "
          f"{new_rest + secs['new']:.1f}s, ratio {(base_rest + secs['base']) / (new_rest + secs['new']):.2f}x")
    return 0


if __name__ == "__main__":
    rc = main()
    train.shutdown()  # leave the process group before interpreter teardown
    sys.exit(rc)
