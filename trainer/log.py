"""Run logs: the run's config and versions, one metrics line per step, the step table on stderr.

    python -c "from trainer.log import COLUMNS; print([name for name, _, _ in COLUMNS])"

`run_info(cfg)` is what OUT/config.json holds: the resolved config, argv, code revision (cli.git_revision),
Python / torch / transformers versions, world size and host. `Logger(run, cfg).log(m)` appends `m` to
OUT/metrics.jsonl, to TensorBoard / wandb when asked, and prints one table row (COLUMNS) per step.
Everything happens on rank 0 only; `print0` is the trainer's rank-0 print.

`accumulate_metrics` / `reduce_metrics`: train.learn's per-micro-batch metrics (didpo.policy_loss's dict)
become one step's: token-weighted means summed over ranks, ratio_min / ratio_max as extremes, and the
sampler/learner mismatch as (sum over ranks) / (tokens over ranks).
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
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
        self.run, self.rows, self.tb, self.wb = run, [], None, None
        if dist.get_rank() != 0:
            return
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(run / "tb")
        if cfg.wandb:
            import wandb

            self.wb = wandb.init(project="didpo", config=dataclasses.asdict(cfg), dir=str(run))

    def log(self, m: dict) -> None:
        if dist.get_rank() != 0:
            return
        with open(self.run / "metrics.jsonl", "a") as f:
            f.write(json.dumps(m) + "\n")
        if self.tb:
            for k, v in m.items():
                self.tb.add_scalar(k, v, m["step"])
        if self.wb:
            self.wb.log(m, step=int(m["step"]))
        self.rows.append(m)
        # One single-row table per step with fixed column widths, so rows line up under the header.
        table = Table(show_header=len(self.rows) == 1, box=None, pad_edge=False)
        for name, _, _ in COLUMNS:
            table.add_column(name, width=8, justify="right", no_wrap=True)
        table.add_row(*[fmt.format(m[k]) if k in m else "-" for _, k, fmt in COLUMNS])
        console.print(table)
        console.print("  time: " + "  ".join(f"{k[5:]} {v:.1f}s" for k, v in m.items()
                                            if k.startswith("time_") and k != "time_step"), style="dim")


# Per-micro-batch metrics of didpo.policy_loss reduced by extreme value, not token-weighted.
EXTREMES = {"ratio_min": (min, dist.ReduceOp.MIN), "ratio_max": (max, dist.ReduceOp.MAX)}


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
    """Across ranks: token-weighted sums SUM, ratio_min MIN, ratio_max MAX, and the sampler-mismatch
    means as (sum over ranks) / (tokens over ranks), so a rank without tokens does not dilute them.
    Every tensor lives on the training device (NCCL serves only CUDA tensors)."""
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
