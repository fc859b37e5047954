"""The DiDPO trainer: one loop for a laptop CPU and for an 8-GPU node.

    python train.py                                              # embedded default: SmolLM2-135M, data/, CPU
    python train.py --algo grpo --steps 5 --out runs/grpo        # a baseline, same loop
    torchrun --nproc_per_node 8 train.py --model Qwen2.5-7B-Coder  # the paper's preset, FSDP2 + vLLM
    python train.py --out runs/x --resume auto                   # continue the latest complete checkpoint

One step (DESIGN.md §5), every rank on its own share of the tasks:

    wake sampler -> sync_weights -> rollout -> sleep -> (DAPO: resample all-equal groups)
    -> compute_advantages (per task group; groups never span ranks) -> old/ref log-probs
    -> policy_loss over micro-batches, normalized by the GLOBAL token count -> optimizer step

Why the loss is normalized by the global token count and FSDP's gradient
averaging is switched off: the objective is a mean over every response token of
the whole batch, so neither the micro-batch size nor the world size may change
it. Each rank sums its token losses / global_tokens; gradients are then summed
(not averaged) across ranks.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import typer
from rich.console import Console
from rich.table import Table

import didpo
import env as envlib
import rollout
import tasks as tasklib

# Wide enough for the step table even when stderr is a pipe (CI, `| tee`), where rich would assume 80.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


# ----------------------------------------------------------------------------- config


@dataclass
class Config:
    # model
    model: str = "smollm2-135m"  # local dir, hub id, alias (Qwen2.5-7B-Coder) or smollm2-135m
    dtype: str = "auto"  # auto: bf16 compute on GPU, fp32 on CPU
    activation_checkpointing: bool = False
    # data
    tasks: str = "data/tasks.jsonl"
    difficulty: str = "trivial"  # comma list of meta.difficulty to keep; "" keeps all
    tasks_per_step: int = 2  # task groups per optimizer step (whole batch, all ranks)
    group_size: int = 4  # G: trajectories per task
    # rollout
    sampler: str = "hf"  # hf | vllm
    temperature: float = 0.8  # 1.0 makes a 135M model ramble; the 7B preset samples at 1.0
    top_p: float = 1.0
    max_turns: int = 2
    max_response_tokens: int = 128  # per turn
    max_total_tokens: int = 2048  # prompt + all turns of one episode
    gpu_memory_utilization: float = 0.7
    # environment
    reward: str = "binary"  # binary | fraction
    invalid_penalty: float = 0.01
    shaping_coef: float = 0.0
    stop_when_public_pass: bool = False
    # algorithm
    algo: str = "didpo"  # grpo | gigpo | didpo
    baseline: str = "contrast"  # contrast | group_mean (the reference estimator); bench/credit.py compares them
    norm: str = "mean_norm"  # mean_norm | mean_std_norm
    gamma: float = 0.95
    lam: float = 1.0
    eta: float = 0.8
    s0: float = 8.0
    g0: float = 8.0
    K: int = 64
    dynamic_sampling: bool = False  # DAPO: drop groups whose rewards are all equal, keep sampling
    max_gen_batches: int = 4
    # loss
    clip_low: float = 0.2
    clip_high: float = 0.28
    dual_clip: float = 3.0
    kl_coef: float = 0.0
    entropy_coef: float = 0.001
    loss_agg: str = "token-mean"  # token-mean | seq-mean-token-mean
    tis_cap: float = 0.0  # truncated importance sampling cap on sampler/learner ratio; 0 = off
    # optimizer
    lr: float = 1e-5
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    micro_batch_size: int = 4
    logprob_chunk: int = 1024  # tokens per lm_head chunk: full-vocab fp32 logits never exist for a whole sequence
    # run
    steps: int = 3
    seed: int = 0
    out: str = "runs/default"
    save_every: int = 0  # 0: only at the end
    keep_last: int = 2
    resume: str = ""  # "" | auto | path to a checkpoint dir
    export: str = ""  # HF export dir; default OUT/export
    save_groups: int = 2  # groups per step written to OUT/groups/step_N.jsonl
    wandb: bool = False
    tensorboard: bool = False


# The reference's published hyperparameters for Qwen2.5-Coder (DESIGN.md §5).
PRESETS = {
    "Qwen2.5-7B-Coder": dict(
        sampler="vllm", dtype="bfloat16", activation_checkpointing=True, difficulty="", norm="mean_norm",
        lam=1.0, eta=0.8, s0=8.0, g0=8.0, K=64, gamma=0.95, group_size=32, tasks_per_step=6,
        dynamic_sampling=True, max_gen_batches=20, lr=1e-6, clip_low=0.2, clip_high=0.28, dual_clip=3.0,
        entropy_coef=0.001, grad_clip=1.0, loss_agg="token-mean", kl_coef=0.01, max_turns=8,
        max_response_tokens=4096, max_total_tokens=8192 + 4096, gpu_memory_utilization=0.7, steps=100,
        micro_batch_size=1, temperature=1.0,
    ),
}
PRESETS["Qwen/Qwen2.5-Coder-7B-Instruct"] = PRESETS["Qwen2.5-7B-Coder"]

CHOICES = dict(sampler=("hf", "vllm"), reward=("binary", "fraction"), algo=("grpo", "gigpo", "didpo"),
               baseline=("group_mean", "contrast"), norm=("mean_norm", "mean_std_norm"),
               loss_agg=("token-mean", "seq-mean-token-mean"), dtype=("auto", "float32", "bfloat16"))


def resolve_config(overrides: dict, config_file: str | None = None) -> Config:
    """Defaults < model preset < config file < command-line flags."""
    file_values = {}
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise ValueError(f"config file {config_file} does not exist; pass a .yaml or .toml file")
        try:
            if path.suffix == ".toml":
                file_values = tomllib.loads(path.read_text())
            else:
                import yaml

                file_values = yaml.safe_load(path.read_text()) or {}
        except Exception as e:  # noqa: BLE001 - any parse error becomes one line
            raise ValueError(f"config file {config_file} does not parse ({type(e).__name__}); fix its syntax") from None
        if not isinstance(file_values, dict):
            raise ValueError(f"config file {config_file} must hold a mapping of Config fields")
        names = {f.name for f in dataclasses.fields(Config)}
        if unknown := sorted(set(file_values) - names):
            import difflib

            hint = difflib.get_close_matches(unknown[0], names, n=1)
            raise ValueError(f"config file {config_file}: unknown field {unknown[0]!r}"
                             + (f"; did you mean {hint[0]!r}?" if hint else ""))
    model = overrides.get("model") or file_values.get("model") or Config.model
    values = {**PRESETS.get(model, {}), **file_values, **overrides}
    cfg = Config(**values)
    for name, allowed in CHOICES.items():
        if getattr(cfg, name) not in allowed:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(cfg, name)!r} is not one of {', '.join(allowed)}")
    for name in ("tasks_per_step", "group_size", "max_turns", "max_response_tokens", "micro_batch_size",
                 "logprob_chunk", "steps"):
        if getattr(cfg, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {getattr(cfg, name)}")
    return cfg


def adv_config(cfg: Config) -> didpo.AdvConfig:
    return didpo.AdvConfig(algo=cfg.algo, baseline=cfg.baseline, norm=cfg.norm, gamma=cfg.gamma, lam=cfg.lam,
                           eta=cfg.eta, s0=cfg.s0, g0=cfg.g0, K=cfg.K)


def loss_config(cfg: Config) -> didpo.LossConfig:
    return didpo.LossConfig(clip_low=cfg.clip_low, clip_high=cfg.clip_high, dual_clip=cfg.dual_clip,
                            kl_coef=cfg.kl_coef, entropy_coef=cfg.entropy_coef, agg=cfg.loss_agg)


def env_config(cfg: Config) -> envlib.EnvConfig:
    return envlib.EnvConfig(max_turns=cfg.max_turns, reward=cfg.reward, invalid_penalty=cfg.invalid_penalty,
                            shaping_coef=cfg.shaping_coef, stop_when_public_pass=cfg.stop_when_public_pass,
                            max_response_tokens=cfg.max_response_tokens, max_total_tokens=cfg.max_total_tokens)


# ----------------------------------------------------------------------------- distributed prologue


def init() -> tuple[int, int, torch.device]:
    """rank, world, device. Without torchrun, a one-process group (gloo on CPU): the same code path."""
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if "RANK" in os.environ:
            dist.init_process_group(backend)
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        return rank, world, torch.device("cuda", local)
    return rank, world, torch.device("cpu")


def print0(*args, **kwargs):
    if dist.get_rank() == 0:
        console.print(*args, **kwargs)


# ----------------------------------------------------------------------------- learner


class Policy(torch.nn.Module):
    """A causal LM whose forward returns per-token log-probs (and entropy), computed in
    chunks of the sequence so that (T, V) fp32 logits never exist at once. Wrapping the
    LM makes this forward the FSDP root, so embedding / lm_head are gathered for it."""

    def __init__(self, lm: torch.nn.Module, chunk: int):
        super().__init__()
        self.lm, self.chunk = lm, chunk

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entropy: bool = False):
        h = self.lm.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        h, targets = h[:, :-1], input_ids[:, 1:]  # position j predicts token j+1
        logps, ents = [], []
        for s in range(0, h.shape[1], self.chunk):
            # Recompute each chunk's logits in backward instead of keeping them: peak is one chunk.
            lp, en = torch.utils.checkpoint.checkpoint(
                _chunk_logprobs, self.lm.lm_head, h[:, s : s + self.chunk], targets[:, s : s + self.chunk], entropy,
                use_reentrant=False,
            )
            logps.append(lp)
            ents.append(en)
        return torch.cat(logps, 1), (torch.cat(ents, 1) if entropy else None)  # (B, T-1)


def _chunk_logprobs(head, h, targets, entropy: bool):
    logits = head(h).float()  # (B, t, V)
    logz = torch.logsumexp(logits, -1)
    lp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logz
    if not entropy:
        return lp, lp.new_zeros(())
    p = torch.softmax(logits, -1)
    return lp, logz - (p * logits).sum(-1)


def build_learner(lm, cfg: Config, device: torch.device, world: int) -> Policy:
    """FSDP2: fully_shard each decoder layer, then the root. bf16 compute with fp32 master
    weights and fp32 gradient reduction on GPU; plain fp32 on CPU."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if cfg.activation_checkpointing:
        lm.activation_checkpointing_enable()
    # load_model returns eval() models; transformers only checkpoints layers in training mode.
    # Dropout is 0 in Qwen2 / SmolLM2, so train() changes nothing else.
    lm.train()
    lm.config.use_cache = False
    policy = Policy(lm.float().to(device), cfg.logprob_chunk)
    mesh = init_device_mesh(device.type, (world,))
    bf16 = cfg.dtype == "bfloat16" or (cfg.dtype == "auto" and device.type == "cuda")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else None
    for layer in lm.model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp or MixedPrecisionPolicy())
    fully_shard(policy, mesh=mesh, mp_policy=mp or MixedPrecisionPolicy())
    # Sum gradients across ranks (the loss is already divided by the global token count). Plain
    # SUM collectives rather than NCCL's PREMUL_SUM, which gloo lacks; a factor of 1 costs nothing.
    # These setters act on one FSDP module's own parameter group, so set them on every one.
    for module in [*lm.model.layers, policy]:
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)
    return policy


def full_named_parameters(policy: Policy):
    """Stream full (unsharded) parameters one at a time, with HF names: peak extra memory is one tensor."""
    for name, p in policy.lm.named_parameters():
        t = p.full_tensor() if hasattr(p, "full_tensor") else p  # DTensor under FSDP2
        yield name, t.detach()


def sync_weights(policy: Policy, sampler) -> None:
    """The sampler <-> learner boundary: push the learner's current weights into the sampler."""
    sampler.load_weights(full_named_parameters(policy))


def pad_batch(trajs: list[envlib.Trajectory], advs: list[torch.Tensor], device):
    """Right-pad a micro-batch; everything is shifted by one to align with next-token log-probs."""
    T = max(len(t.token_ids) for t in trajs)
    B = len(trajs)
    ids = torch.zeros(B, T, dtype=torch.long)
    attn = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T - 1)
    adv = torch.zeros(B, T - 1)
    slp = torch.zeros(B, T - 1)
    for b, (t, a) in enumerate(zip(trajs, advs)):
        n = len(t.token_ids)
        ids[b, :n] = torch.tensor(t.token_ids)
        attn[b, :n] = 1
        mask[b, : n - 1] = torch.tensor(t.loss_mask[1:], dtype=torch.float)
        adv[b, : n - 1] = a[1:]
        if t.sampler_logprobs is not None:
            slp[b, : n - 1] = torch.tensor(t.sampler_logprobs[1:])
    return [x.to(device) for x in (ids, attn, mask, adv, slp)]


@torch.no_grad()
def score(policy: Policy, batches) -> list[torch.Tensor]:
    return [policy(ids, attn)[0].float() for ids, attn, *_ in batches]


def learn(policy, opt, trajs, advs, cfg: Config, device, ref=None) -> dict:
    """One optimizer step on this rank's trajectories. Returns metrics averaged over micro-batches.
    Every rank must call this (FSDP collectives), even with no trajectories of its own."""
    mb = cfg.micro_batch_size
    batches = [pad_batch(trajs[i : i + mb], advs[i : i + mb], device) for i in range(0, len(trajs), mb)]
    local_tokens = sum(float(b[2].sum()) for b in batches)
    global_tokens = torch.tensor(local_tokens, device=device)
    dist.all_reduce(global_tokens)
    n_seqs = torch.tensor(float(len(trajs)), device=device)
    dist.all_reduce(n_seqs)
    # Ranks must run the same number of forward/backward passes (FSDP collectives): pad with
    # empty micro-batches that contribute zero loss.
    n_local = torch.tensor(len(batches), device=device)
    dist.all_reduce(n_local, op=dist.ReduceOp.MAX)
    dummy = envlib.Trajectory(task_id="", token_ids=[0, 0], loss_mask=[0, 0])
    while len(batches) < int(n_local):
        batches.append(pad_batch([dummy], [torch.zeros(2)], device))

    old = score(policy, batches)
    refs = score(ref, batches) if ref is not None else [None] * len(batches)
    lcfg = loss_config(cfg)
    opt.zero_grad(set_to_none=True)
    metrics: dict[str, float] = {}
    mismatch, sampler_kl, mismatch_n = 0.0, 0.0, 0.0
    for (ids, attn, mask, adv, slp), old_lp, ref_lp in zip(batches, old, refs):
        has_slp = bool((slp != 0).any())
        if has_slp:
            mismatch += float(((old_lp - slp).abs() * mask).sum())
            # KL(sampler || learner) estimated on the sampler's own tokens: E_sampler[log s - log l].
            sampler_kl += float(((slp - old_lp) * mask).sum())
            mismatch_n += float(mask.sum())
            if cfg.tis_cap > 0:  # truncated importance sampling: sampler != learner numerics
                adv = adv * torch.exp(old_lp - slp).clamp(max=cfg.tis_cap)
        logp, ent = policy(ids, attn, entropy=cfg.entropy_coef > 0)
        loss, m = didpo.policy_loss(logp, old_lp, adv, mask, lcfg, ref_logp=ref_lp, entropy=ent,
                                    global_tokens=float(global_tokens), global_seqs=float(n_seqs))
        loss.backward()
        w = float(mask.sum()) / max(float(global_tokens), 1.0)
        for k, v in m.items():
            if k not in ("loss", "tokens"):  # token-weighted means; the loss itself is already a global sum
                metrics[k] = metrics.get(k, 0.0) + float(v) * w
        metrics["loss"] = metrics.get("loss", 0.0) + float(loss.detach())
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
    opt.step()
    metrics["grad_norm"] = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
    metrics["sampler_abs_dlogp"] = mismatch / mismatch_n if mismatch_n else 0.0
    metrics["sampler_kl"] = sampler_kl / mismatch_n if mismatch_n else 0.0
    packed = torch.tensor([metrics[k] for k in sorted(metrics)], device=device)
    dist.all_reduce(packed)  # token-weighted sums across ranks
    out = dict(zip(sorted(metrics), packed.tolist()))
    out["grad_norm"] = metrics["grad_norm"]
    out["sampler_abs_dlogp"] /= dist.get_world_size()
    out["sampler_kl"] /= dist.get_world_size()
    return out


# ----------------------------------------------------------------------------- checkpoints


def _checkpoints(run: Path) -> list[Path]:
    done = [p for p in run.glob("checkpoints/step_*") if (p / "COMPLETE").exists()]
    return sorted(done, key=lambda p: int(p.name.split("_")[1]))


def save_checkpoint(run: Path, policy, opt, step: int, cursor: int, cfg: Config) -> Path:
    """DCP of model + optimizer, plus each rank's RNG and the data cursor, written to a temp dir
    and renamed into place once complete: a kill mid-write leaves the previous checkpoint intact."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    rank = dist.get_rank()
    final = run / "checkpoints" / f"step_{step}"
    tmp = run / "checkpoints" / f".step_{step}.tmp"
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    model_sd, optim_sd = get_state_dict(policy, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(tmp))
    rng = {"python": random.getstate(), "torch": torch.get_rng_state(),
           "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    torch.save({"rng": rng, "step": step, "cursor": cursor}, tmp / f"extra_rank{rank}.pt")
    dist.barrier()
    if rank == 0:
        (tmp / "COMPLETE").write_text(json.dumps({"step": step, "world": dist.get_world_size()}))
        os.replace(tmp, final)
        for old in _checkpoints(run)[: -cfg.keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


def load_checkpoint(path: Path, policy, opt) -> tuple[int, int]:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_sd, optim_sd = get_state_dict(policy, opt)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(policy, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    extra = torch.load(path / f"extra_rank{dist.get_rank()}.pt", weights_only=False)
    random.setstate(extra["rng"]["python"])
    torch.set_rng_state(extra["rng"]["torch"])
    if extra["rng"]["cuda"] is not None:
        torch.cuda.set_rng_state_all(extra["rng"]["cuda"])
    return extra["step"], extra["cursor"]


def find_resume(run: Path, resume: str) -> Path | None:
    if not resume:
        return None
    if resume != "auto":
        p = Path(resume)
        if not (p / "COMPLETE").exists():
            raise ValueError(f"--resume {resume} is not a complete checkpoint directory; use --resume auto")
        return p
    for partial in run.glob("checkpoints/.step_*.tmp"):
        print0(f"[yellow]ignoring incomplete checkpoint {partial} (killed mid-write)[/]")
    done = _checkpoints(run)
    return done[-1] if done else None


def export(policy, tokenizer, out: Path) -> None:
    """A Hugging Face directory (safetensors, config, tokenizer, chat template) for transformers,
    vLLM and `eval.py --model`."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(policy.lm, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if dist.get_rank() == 0:
        tmp = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.lm.save_pretrained(tmp, state_dict=sd)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    dist.barrier()


# ----------------------------------------------------------------------------- logging


def run_info(cfg: Config) -> dict:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        rev = ""
    import transformers

    return {"config": dataclasses.asdict(cfg), "git": rev, "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "argv": sys.argv,
            "world": dist.get_world_size(), "host": platform.node()}


COLUMNS = [("step", "step", "{:.0f}"), ("reward", "reward", "{:.3f}"), ("pass", "pass_rate", "{:.2f}"),
           ("kept", "groups_kept", "{:.0f}"), ("len", "response_len", "{:.0f}"), ("turns", "turns", "{:.1f}"),
           ("loss", "loss", "{:+.4f}"), ("kl", "kl", "{:.4f}"), ("ent", "entropy", "{:.3f}"),
           ("clip", "clip_frac", "{:.3f}"), ("gnorm", "grad_norm", "{:.3f}"), ("anch", "anchors", "{:.0f}"),
           ("cov", "coverage", "{:.2f}"), ("s", "time_step", "{:.1f}")]


class Logger:
    def __init__(self, run: Path, cfg: Config):
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


# ----------------------------------------------------------------------------- the loop


def make_sampler(cfg: Config, path: str, lm, tokenizer, device):
    if cfg.sampler == "vllm":
        # One engine per rank, each with its own seed: engines sharing a seed draw the same samples for
        # unseeded requests, and rank task windows wrap around a small task file.
        # On CPU, eager mode: torch.compile of the model takes minutes on a laptop's cores.
        return rollout.VLLMSampler(path, tokenizer, seed=cfg.seed + dist.get_rank(),
                                   gpu_memory_utilization=cfg.gpu_memory_utilization,
                                   max_model_len=cfg.max_total_tokens, enforce_eager=device.type == "cpu")
    # The HF sampler keeps its own plain copy: the learner's parameters are FSDP shards.
    return rollout.HFSampler(copy.deepcopy(lm).to(device).eval(), tokenizer)


def rollout_step(tasks, sampler, tokenizer, cfg: Config, cursor: int, share: int, acfg: didpo.AdvConfig,
                 times: dict):
    """Rollout until this rank has `share` groups (DAPO: skipping all-equal groups) or the limit."""
    sampling = rollout.Sampling(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_response_tokens)
    kept, drawn, batches = [], 0, 0
    while len(kept) < share and batches < (cfg.max_gen_batches if cfg.dynamic_sampling else 1):
        batch = []
        for _ in range(share - len(kept)):
            batch.append(tasks[(cursor + drawn) % len(tasks)])
            drawn += 1
        groups = rollout.rollout(batch, sampler, tokenizer, env_config(cfg), n=cfg.group_size, sampling=sampling,
                                 progress=None if dist.get_rank() == 0 else False, stats=times)
        for g in groups:
            if not cfg.dynamic_sampling or didpo.has_signal(g, acfg):
                kept.append(g)
        batches += 1
    return kept, drawn, batches


def check_run_dir(cfg: Config) -> None:
    """A new run never writes over an old one's metrics and checkpoints."""
    if not cfg.resume and (Path(cfg.out) / "metrics.jsonl").exists():
        raise ValueError(f"--out {cfg.out} already holds a run; pass --resume auto to continue it, or a new --out")


def train(cfg: Config) -> Path:
    check_run_dir(cfg)
    rank, world, device = init()
    run = Path(cfg.out)
    if rank == 0:
        run.mkdir(parents=True, exist_ok=True)
        (run / "config.json").write_text(json.dumps(run_info(cfg), indent=2))
    dist.barrier()
    print0(f"[bold]didpo[/] {cfg.algo} on {cfg.model}, world {world}, {device.type}; run dir {run}")
    print0(dataclasses.asdict(cfg))

    all_tasks = tasklib.load(cfg.tasks)
    if cfg.difficulty:
        keep = set(cfg.difficulty.split(","))
        all_tasks = [t for t in all_tasks if t.meta.get("difficulty") in keep]
    if not all_tasks:
        raise ValueError(f"no tasks in {cfg.tasks} match --difficulty {cfg.difficulty!r}")
    random.Random(cfg.seed).shuffle(all_tasks)

    path = rollout.resolve(cfg.model)
    lm, tokenizer = rollout.load_model(cfg.model)
    sampler = make_sampler(cfg, path, lm, tokenizer, device)
    ref = None
    if cfg.kl_coef > 0:  # a frozen copy, sharded the same way, only when KL is on
        ref = build_learner(copy.deepcopy(lm), cfg, device, world).requires_grad_(False)
    policy = build_learner(lm, cfg, device, world)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            fused=device.type == "cuda")

    start, cursor = 0, 0
    if ckpt := find_resume(run, cfg.resume):
        start, cursor = load_checkpoint(ckpt, policy, opt)
        print0(f"resumed from {ckpt} at step {start}")
    logger = Logger(run, cfg)
    acfg = adv_config(cfg)
    share = len(range(rank, cfg.tasks_per_step, world))  # this rank's task groups
    # Each rank draws tasks from its own window of the shuffled list, the most it can draw in a
    # step (DAPO may resample), so ranks never share a task and a resumed run draws what the
    # uninterrupted one would.
    window = -(-cfg.tasks_per_step // world) * (cfg.max_gen_batches if cfg.dynamic_sampling else 1)

    for step in range(start, cfg.steps):
        t0 = time.time()
        # Seeding from (seed, step, rank) makes a resumed run sample exactly what the
        # uninterrupted one would have.
        torch.manual_seed(cfg.seed * 100003 + step * 101 + rank)
        times = {}
        sampler.wake()
        t = time.time()
        sync_weights(policy, sampler)
        times["sync"] = time.time() - t
        t = time.time()
        my_cursor = cursor + rank * window
        groups, _, gen_batches = rollout_step(all_tasks, sampler, tokenizer, cfg, my_cursor, share, acfg, times)
        sampler.sleep()
        times["rollout"] = time.time() - t

        t = time.time()
        trajs, advs, stats = [], [], {}
        for g in groups:
            s: dict = {}
            advs += didpo.compute_advantages(g, acfg, stats=s)
            trajs += g
            for k, v in s.items():
                if isinstance(v, (int, float)):
                    stats[k] = stats.get(k, 0.0) + v / max(len(groups), 1)
        times["advantage"] = time.time() - t

        t = time.time()
        m = learn(policy, opt, trajs, advs, cfg, device, ref=ref)
        times["update"] = time.time() - t
        cursor += world * window

        rewards = [tr.reward for tr in trajs]
        local = torch.tensor([sum(rewards), len(rewards), sum(r >= 1.0 for r in rewards), len(groups),
                              sum(sum(tr.loss_mask) for tr in trajs), sum(len(tr.turns) for tr in trajs)],
                             dtype=torch.float64)
        dist.all_reduce(local)
        tot_r, n, n_pass, n_groups, n_tok, n_turns = local.tolist()
        m.update(step=step + 1, reward=tot_r / max(n, 1), pass_rate=n_pass / max(n, 1), groups_kept=n_groups,
                 response_len=n_tok / max(n, 1), turns=n_turns / max(n, 1), gen_batches=gen_batches,
                 anchors=stats.get("anchors", 0.0), coverage=stats.get("coverage", 0.0),
                 **{f"didpo_{k}": v for k, v in stats.items()})
        if rank == 0 and cfg.save_groups:
            (run / "groups").mkdir(exist_ok=True)
            with open(run / "groups" / f"step_{step + 1}.jsonl", "w") as f:
                for g in groups[: cfg.save_groups]:
                    for tr in g:
                        f.write(tr.to_json() + "\n")
        if cfg.save_every and (step + 1) % cfg.save_every == 0 or step + 1 == cfg.steps:
            t = time.time()
            save_checkpoint(run, policy, opt, step + 1, cursor, cfg)
            times["checkpoint"] = time.time() - t
        m.update({f"time_{k}": v for k, v in times.items()}, time_step=time.time() - t0)
        logger.log(m)

    export(policy, tokenizer, Path(cfg.export) if cfg.export else run / "export")
    print0(f"done: {run}/metrics.jsonl, checkpoints in {run}/checkpoints, export in {cfg.export or run / 'export'}",
           soft_wrap=True)
    return run


# ----------------------------------------------------------------------------- CLI


def _cli() -> typer.Typer:
    """Every Config field is a flag; click rejects unknown flags and suggests the closest one."""
    app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]})
    params = [inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                                default=typer.Option(None, help="YAML or TOML file of Config fields"))]
    for f in dataclasses.fields(Config):
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=_annot(f),
                                        default=typer.Option(None)))

    def main(**kwargs):
        config_file = kwargs.pop("config")
        overrides = {k: v for k, v in kwargs.items() if v is not None}
        try:
            cfg = resolve_config(overrides, config_file)
            if not Path(cfg.tasks).exists():
                raise ValueError(f"--tasks {cfg.tasks} does not exist; pass a task .jsonl file")
            rollout.resolve(cfg.model)
            check_run_dir(cfg)
        except ValueError as e:
            typer.echo(f"error: {e}", err=True)  # one line, never wrapped
            raise typer.Exit(2) from None
        train(cfg)

    main.__signature__ = inspect.Signature(params)
    app.command()(main)
    return app


def _annot(f: dataclasses.Field):
    return {"int": int | None, "float": float | None, "bool": bool | None, "str": str | None}[f.type]


if __name__ == "__main__":
    _cli()()
