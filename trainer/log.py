"""Run logs: the run's config and versions, one metrics line per step, the step table on stderr.

    python -c "from trainer.log import COLUMNS; print([name for name, _, _ in COLUMNS])"
    pip install -r requirements-track.txt && python train.py --wandb my-project --wandb-name try-1 --out runs/t1

`run_info(cfg)` is OUT/config.json: the resolved config, argv, code revision, versions, world size and host.
`Logger(run, cfg).log(m)` appends `m` to OUT/metrics.jsonl, to TensorBoard / W&B when asked, writes a few groups to
OUT/groups/step_N.jsonl, and prints one table row (COLUMNS) per step, all on rank 0 (`print0`: the rank-0 print).
W&B (`--wandb PROJECT`): `--resume` continues the same W&B run; every `--samples-every` steps a table of
SAMPLE_ROWS completions. `accumulate_metrics` / `reduce_metrics` make train.learn's micro-batch metrics one step's.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
import uuid
from pathlib import Path

import torch
import torch.distributed as dist
from rich.console import Console
from rich.table import Table

import cli
import didpo

# Wide enough for the step table even when stderr is a pipe (CI, `| tee`), where rich would assume 80.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def print0(*args, **kwargs):
    if dist.get_rank() == 0:
        console.print(*args, **kwargs)


def run_info(cfg) -> dict:
    import transformers

    return {"config": dataclasses.asdict(cfg), "git": cli.git_revision(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "argv": sys.argv,
            "world": dist.get_world_size(), "host": platform.node()}


COLUMNS = [("step", "step", "{:.0f}"), ("reward", "reward", "{:.3f}"), ("pass", "pass_rate", "{:.2f}"),
           ("kept", "groups_kept", "{:.0f}"), ("len", "response_len", "{:.0f}"), ("turns", "turns", "{:.1f}"),
           ("loss", "loss", "{:+.4f}"), ("kl", "kl", "{:.4f}"), ("ent", "entropy", "{:.3f}"),
           ("clip", "clip_frac", "{:.3f}"), ("gnorm", "grad_norm", "{:.3f}"), ("anch", "anchors", "{:.0f}"),
           ("cov", didpo.COVERAGE, "{:.2f}"), ("s", "time_step", "{:.1f}")]


class Logger:
    def __init__(self, run: Path, cfg):
        self.run, self.cfg, self.rows, self.tb, self.wb = run, cfg, [], None, None
        if dist.get_rank() != 0:
            return
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(run / "tb")
        if cfg.wandb:
            self.wb = wandb_run(run, cfg)

    def log(self, m: dict, groups: list[list] = ()) -> None:
        """One step's metrics, and its groups (env.Trajectory lists) for OUT/groups and the W&B samples."""
        if dist.get_rank() != 0:
            return
        step = int(m["step"])
        with open(self.run / "metrics.jsonl", "a") as f:
            f.write(json.dumps(m) + "\n")
        if self.cfg.save_groups and groups:
            (self.run / "groups").mkdir(exist_ok=True)
            with open(self.run / "groups" / f"step_{step}.jsonl", "w") as f:
                f.writelines(tr.to_json() + "\n" for g in groups[: self.cfg.save_groups] for tr in g)
        if self.tb:
            for k, v in m.items():
                self.tb.add_scalar(k, v, step)
        if self.wb:
            self.wb.log(m, step=step)
            if self.cfg.samples_every and step % self.cfg.samples_every == 0 and groups:
                import wandb

                self.wb.log({"samples": wandb.Table(columns=SAMPLE_COLUMNS, data=samples(groups, step))}, step=step)
        self.rows.append(m)
        # One single-row table per step with fixed column widths, so rows line up under the header.
        table = Table(show_header=len(self.rows) == 1, box=None, pad_edge=False)
        for name, _, _ in COLUMNS:
            table.add_column(name, width=8, justify="right", no_wrap=True)
        table.add_row(*[fmt.format(m[k]) if k in m else "-" for _, k, fmt in COLUMNS])
        console.print(table)
        console.print("  time: " + "  ".join(f"{k[5:]} {v:.1f}s" for k, v in m.items()
                                            if k.startswith("time_") and k != "time_step"), style="dim")

    def close(self) -> None:
        if self.wb:
            self.wb.finish()
        if self.tb:
            self.tb.close()


def wandb_run(run: Path, cfg):
    """wandb.init for this run directory: a new id, or with --resume the one kept in OUT/wandb_id."""
    import wandb

    kept = run / "wandb_id"
    run_id = kept.read_text().strip() if cfg.resume and kept.exists() else uuid.uuid4().hex[:8]
    kept.write_text(run_id + "\n")
    return wandb.init(project=cfg.wandb, name=cfg.wandb_name or run.name, id=run_id, resume="allow", dir=str(run),
                      config=dataclasses.asdict(cfg))


SAMPLE_ROWS = 4  # completions in each W&B samples table
SAMPLE_COLUMNS = ["step", "task", "reward", "turns", "completion"]


def samples(groups: list[list], step: int) -> list[list]:
    """SAMPLE_ROWS rows of SAMPLE_COLUMNS: the first trajectory of each group, then the second, ..."""
    deepest = max(len(g) for g in groups)
    picked = [g[i] for i in range(deepest) for g in groups if i < len(g)][:SAMPLE_ROWS]
    return [[step, tr.task_id, tr.reward, len(tr.turns), "\n\n".join(t.response for t in tr.turns)[:4000]]
            for tr in picked]


# Per-micro-batch metrics of ppo.policy_loss reduced by extreme value, not token-weighted.
EXTREMES = {"ratio_min": (min, dist.ReduceOp.MIN), "ratio_max": (max, dist.ReduceOp.MAX)}


def rollout_metrics(trajs: list, groups: list, group_stats: list[dict], gen_batches: int, device) -> dict:
    """A step's rollout metrics over all ranks, and the mean credit stats (didpo_*) of this rank's groups."""
    stats: dict = {}
    for s in group_stats:
        for k, v in s.items():
            if isinstance(v, (int, float)):
                stats[k] = stats.get(k, 0.0) + v / max(len(groups), 1)
    rewards = [tr.reward for tr in trajs]
    local = torch.tensor([sum(rewards), len(rewards), sum(r >= 1.0 for r in rewards), len(groups),
                          sum(sum(tr.loss_mask) for tr in trajs), sum(len(tr.turns) for tr in trajs),
                          sum(tr.hack for tr in trajs if tr.reward >= 1.0)],  # env.hack_rate, over all ranks
                         dtype=torch.float64, device=device)  # NCCL serves only CUDA tensors
    dist.all_reduce(local)
    tot_r, n, n_pass, n_groups, n_tok, n_turns, n_hack = local.tolist()
    return dict(reward=tot_r / max(n, 1), pass_rate=n_pass / max(n, 1), groups_kept=n_groups,
                response_len=n_tok / max(n, 1), turns=n_turns / max(n, 1), gen_batches=gen_batches,
                anchors=stats.get("anchors", 0.0), **{didpo.COVERAGE: stats.get(didpo.COVERAGE, 0.0)},
                hack_rate=n_hack / max(n_pass, 1), **{f"didpo_{k}": v for k, v in stats.items()})


def accumulate_metrics(metrics: dict, m: dict, w: float, loss: float) -> None:
    """Add one micro-batch: token-weighted means (w = its tokens / global tokens), extremes over
    micro-batches that have tokens (a padding micro-batch's ratio 1.0 is no observation)."""
    for k, v in m.items():
        if k in EXTREMES:
            if w > 0:
                metrics[k] = EXTREMES[k][0](metrics.get(k, float(v)), float(v))
        elif k not in ("loss", "tokens"):  # the loss itself is already a global sum
            metrics[k] = metrics.get(k, 0.0) + float(v) * w
    metrics["loss"] = metrics.get("loss", 0.0) + loss


def reduce_metrics(metrics: dict, mismatch: float, sampler_kl: float, mismatch_n: float, device) -> dict:
    """Across ranks (tensors on the training device: NCCL serves only CUDA): token-weighted sums SUM, ratio_min
    MIN, ratio_max MAX, the sampler mismatch (sum over ranks) / (tokens over ranks): no dilution by idle ranks."""
    sums = sorted(k for k in metrics if k not in EXTREMES and k != "grad_norm")
    packed = torch.tensor([metrics[k] for k in sums] + [mismatch, sampler_kl, mismatch_n], device=device,
                          dtype=torch.float64)
    dist.all_reduce(packed)
    out = dict(zip(sums, packed[: len(sums)].tolist()))
    mismatch, sampler_kl, mismatch_n = packed[len(sums):].tolist()
    out["sampler_abs_dlogp"] = mismatch / mismatch_n if mismatch_n else 0.0
    out["sampler_kl"] = sampler_kl / mismatch_n if mismatch_n else 0.0
    for k, (_, op) in EXTREMES.items():
        # A rank without tokens offers the identity of the reduction.
        ident = float("inf") if op == dist.ReduceOp.MIN else float("-inf")
        t = torch.tensor(metrics.get(k, ident), device=device, dtype=torch.float64)
        dist.all_reduce(t, op=op)
        if abs(float(t)) != float("inf"):
            out[k] = float(t)
    out["grad_norm"] = metrics["grad_norm"]
    return out
