"""The DiDPO trainer: one loop for a laptop CPU and for an 8-GPU node.

    python train.py                                              # embedded default: SmolLM2-135M, data/, CPU
    python train.py --algo grpo --steps 5 --out runs/grpo        # a baseline, same loop
    python train.py --paper                                      # the paper's DiDPO, none of our refinements
    torchrun --nproc_per_node 8 train.py --model Qwen2.5-7B-Coder --out runs/7b  # LiveCodeBench < 2024-08, FSDP2 + vLLM
    python eval.py --bench livecodebench --start-date 2024-08-01 --model runs/7b/export --n 10  # the held-out window
    python train.py --out runs/x --resume auto                   # continue the latest complete checkpoint

One step (DESIGN.md §5), every rank on its own share of the tasks:

    wake sampler -> sync_weights -> rollout -> sleep -> (DAPO: resample all-equal groups)
    -> compute_advantages (per task group; groups never span ranks) -> old/ref log-probs
    -> policy_loss over micro-batches, normalized by the GLOBAL token count -> optimizer step

The objective is a mean over every response token of the batch, whatever the micro-batch or world size: each
rank sums its token losses / global_tokens, and gradients are summed (FSDP's averaging off) across ranks.

`python train.py --help` lists every Config field with its meaning and default. What the loop calls but a reader
of the method need not read is in trainer/: log.py (config.json, metrics.jsonl, the step table), checkpoint.py
(DCP save, exact resume, the HF export), fsdp.py (sharding), hardware.py (CPU bf16, the attention kernel).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import importlib.util
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Exact resume needs identical numerics, but MKL_DYNAMIC picks a thread count from the machine's load, and another
# count rounds fp32 sums differently (a resumed step's metrics moved in the 5th digit). Set before torch loads MKL.
os.environ.setdefault("MKL_DYNAMIC", "FALSE")

import torch
import torch.distributed as dist
import transformers

import cli
import didpo
import diffs
import env as envlib
import models
import rollout
from trainer import checkpoint, data, fsdp, hardware, ppo, prefix
from trainer.log import Logger, accumulate_metrics, print0, reduce_metrics, rollout_metrics, run_info

# ----------------------------------------------------------------------------- config


@dataclass
class Config:
    # model
    model: str = "smollm2-135m"  # local dir, hub id, alias (Qwen2.5-7B-Coder) or smollm2-135m
    dtype: str = "auto"  # auto: bf16 on GPU; on CPU bf16 autocast where bf16 is fast (AMX, AVX512-BF16), else fp32
    activation_checkpointing: str = "full"  # off | full (recompute each decoder layer) | selective (keep its matmuls)
    compile: bool = False  # torch.compile each decoder layer (the first steps compile; each new shape recompiles)
    # data
    tasks: str = "data/tasks.jsonl"  # sources, "+"-joined: a task file or NAME[@PATH][:k=v,...] (trainer/data.py)
    holdout: str = ""  # the evaluation's sources: a problem of theirs (same text) never trains
    cutoff: str = ""  # YYYY-MM-DD: tasks released on or after it never train (LiveCodeBench's protocol)
    max_prompt_chars: int = 0  # longer prompts are dropped; 0 keeps all
    difficulty: str = "trivial"  # comma list of meta.difficulty to keep; "" keeps all
    tasks_per_step: int = 2  # task groups per optimizer step (whole batch, all ranks)
    group_size: int = 8  # G: trajectories per task; at G = 4 the 135M model shares no sub-diff (no anchors)
    # rollout
    sampler: str = "hf"  # hf | vllm
    temperature: float = 0.7  # 1.0 makes a 135M model ramble (and no two answers share a line); the 7B uses 1.0
    top_p: float = 1.0  # nucleus sampling; 1.0 samples the full distribution
    max_turns: int = 1  # the 135M model ignores test feedback; its 2nd turns are prose that anchors nothing
    max_response_tokens: int = 100  # per turn
    stop: list[str] = dataclasses.field(default_factory=list)  # a turn also ends once one is sampled;
                                                               # "\n```\n": at its first closed fence
    max_total_tokens: int = 2048  # prompt + all turns of one episode
    gpu_memory_utilization: float = 0.7  # vllm: share of GPU memory for its weights and KV cache
    # environment
    reward: str = "binary"  # binary (all hidden tests pass) | fraction (share passed)
    invalid_penalty: float = 0.01  # subtracted from r_t when a turn has no valid action
    shaping_coef: float = 0.0  # c in r_t = c·(Φ_t − Φ_{t−1}), Φ the public pass rate; 0 = off
    stop_when_public_pass: bool = False  # end an episode as soon as every public test passes
    # algorithm
    algo: str = "didpo"  # grpo | gigpo | didpo
    paper: bool = False  # didpo exactly as the paper (didpo.AdvConfig.paper()): baseline, verdict and eta are ignored
    baseline: str = "ridge"  # ridge | contrast | group_mean (the paper's); bench/credit.py compares them
    verdict: bool = True  # didpo: A^V (verdict.py), and the behaviour probe it reads; off: no probe runs
    norm: str = "mean_norm"  # mean_norm | mean_std_norm
    gamma: float = 0.95  # discount of step returns G_{i,t}
    lam: float = 1.0  # λ in Â = A^E + λ·(A^D + A^V)
    eta: float = diffs.ETA  # 1: straggler merging off; at 0.8 (the paper's) it joins correct and buggy versions
    s0: float = 8.0  # size scale of φ(L) in the groupability score
    g0: float = 8.0  # group-size scale of ψ(n) in the groupability score
    K: int = 64  # at most this many anchors per task group
    dynamic_sampling: bool = False  # DAPO: drop groups whose rewards are all equal, keep sampling
    max_gen_batches: int = 4  # DAPO: rollout batches per step at most
    overlong_filter: bool = False  # DAPO: responses cut by a token budget train nothing (their rewards still count)
    # loss
    clip_low: float = 0.2  # ε_low: ratio floor 1 − ε_low
    clip_high: float = 0.28  # ε_high: ratio ceiling 1 + ε_high (clip-higher, DAPO)
    dual_clip: float | None = 3.0  # c > 1 bounds the loss of A < 0 tokens at c·|A|; none turns it off
    kl_coef: float = 0.0  # β of the k3 KL to a frozen reference; 0: no reference model
    entropy_coef: float = 0.0  # α: loss −= α·entropy. 0: in a step of tied groups Adam makes it the step (learn.py)
    loss_agg: str = "token-mean"  # token-mean | seq-mean-token-mean
    tis_cap: float = 0.0  # truncated importance sampling cap on sampler/learner ratio; 0 = off
    # optimizer
    lr: float = 5e-5  # the embedded default; at 1e-5 three steps move nothing
    weight_decay: float = 0.0  # AdamW
    grad_clip: float = 1.0  # max global gradient norm
    micro_batch_size: int = 4  # sequences per micro-batch, when micro_batch_tokens is 0
    micro_batch_tokens: int = 2048  # tokens per micro-batch (B x T_max; packed: their sum), longest first (verl)
    pack: str = "auto"  # auto (flash-attn only: sdpa's mask ran 0.59x) | on | off: a micro-batch in one unpadded row
    ppo_epochs: int = 1  # passes over each rollout batch (TRL's num_iterations)
    ppo_mini_batches: int = 1  # optimizer steps per pass: the batch split in this many parts (verl's mini-batches)
    share_prefix: bool = True  # sdpa: a micro-batch's rows that begin alike (a group's prompt) run it once
    logprob_chunk: int = 128  # tokens per lm_head chunk (CPU: its fp32 logits < 32 MB, hardware.keep_freed_memory)
    # run
    steps: int = 3  # optimizer steps (a resumed run continues up to this many)
    seed: int = 0  # task order, sampling, initial RNG: same seed, same run
    out: str = "runs/default"  # run directory: config.json, metrics.jsonl, groups/, checkpoints/, export/
    save_every: int = 0  # 0: only at the end
    keep_last: int = 2  # checkpoints kept; 0: none written (the export only)
    resume: str = ""  # "" | auto | path to a checkpoint dir
    export: str = ""  # HF export dir; default OUT/export
    save_groups: int = 1  # groups per step written to OUT/groups/step_N.jsonl (python -m tools.explain reads one)
    wandb: str = ""  # W&B project ("": off; pip install -r requirements-track.txt); --resume continues its run
    wandb_name: str = ""  # W&B run name ("": the run directory's name)
    samples_every: int = 10  # W&B: a table of sampled completions and their rewards every N steps (0: never)
    tensorboard: bool = False  # also log to OUT/tb


# The reference's hyperparameters (DESIGN.md §5), LiveCodeBench before 2024-08, our refinements (--paper: none).
PRESETS = {"Qwen2.5-7B-Coder": dict(
        sampler="vllm", dtype="bfloat16", difficulty="", norm="mean_norm", lam=1.0, s0=8.0, g0=8.0, K=64, gamma=0.95,
        group_size=32, tasks_per_step=8, dynamic_sampling=True, max_gen_batches=20, lr=1e-6, clip_low=0.2,
        clip_high=0.28, dual_clip=3.0, entropy_coef=0.001, grad_clip=1.0, loss_agg="token-mean", kl_coef=0.01,
        max_turns=8, max_response_tokens=4096, max_total_tokens=8192 + 4096, gpu_memory_utilization=0.7, steps=100,
        micro_batch_size=1, temperature=1.0, save_every=10, tasks="livecodebench:end_date=2024-07-31",
        cutoff="2024-08-01", holdout="livecodebench:start_date=2024-08-01")}  # eval: --start-date 2024-08-01
PRESETS["Qwen/Qwen2.5-Coder-7B-Instruct"] = PRESETS["Qwen2.5-7B-Coder"]

CHOICES = dict(sampler=("hf", "vllm"), reward=("binary", "fraction"), algo=didpo.ALGOS, baseline=didpo.BASELINES,
               norm=didpo.NORMS, loss_agg=("token-mean", "seq-mean-token-mean"), dtype=("auto", "float32", "bfloat16"),
               pack=("auto", "on", "off"), activation_checkpointing=("off", "full", "selective"))


def resolve_config(overrides: dict, config_file: str | None = None) -> Config:
    """Defaults < model preset < config file < command-line flags."""
    file_values = cli.read_file(config_file, Config) if config_file else {}
    model = overrides.get("model") or file_values.get("model") or Config.model
    cfg = Config(**{**PRESETS.get(model, {}), **file_values, **overrides})
    for name, allowed in CHOICES.items():
        if getattr(cfg, name) not in allowed:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(cfg, name)!r} is not one of {', '.join(allowed)}")
    for name in ("tasks_per_step", "group_size", "max_turns", "max_response_tokens", "micro_batch_size",
                 "logprob_chunk", "steps", "ppo_epochs", "ppo_mini_batches"):
        if getattr(cfg, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {getattr(cfg, name)}")
    for name, zero in (("micro_batch_tokens", "use --micro-batch-size"), ("save_every", "at the end only"),
                       ("keep_last", "no checkpoints"), ("max_prompt_chars", "all prompts"),
                       ("samples_every", "never")):
        if getattr(cfg, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0 (0: {zero}), got {getattr(cfg, name)}")
    if cfg.dual_clip is not None and cfg.dual_clip <= 1:
        raise ValueError(f"--dual-clip {cfg.dual_clip} must be > 1, or none to turn it off")
    for spec in filter(None, (cfg.tasks, cfg.holdout)):
        data.parse(spec)  # a bad source fails before any work
    for flag, module in (("wandb", "wandb"), ("tensorboard", "tensorboard")):
        if getattr(cfg, flag) and importlib.util.find_spec(module) is None:
            raise ValueError(f"--{flag} needs the {module} package: pip install -r requirements-track.txt")
    return cfg


def adv_config(cfg: Config) -> didpo.AdvConfig:
    shared = dict(algo=cfg.algo, norm=cfg.norm, gamma=cfg.gamma, lam=cfg.lam, s0=cfg.s0, g0=cfg.g0, K=cfg.K)
    if cfg.paper:
        return didpo.AdvConfig.paper(**shared)
    return didpo.AdvConfig(baseline=cfg.baseline, verdict=cfg.verdict, eta=cfg.eta, **shared)


def loss_config(cfg: Config) -> ppo.LossConfig:
    return ppo.LossConfig(clip_low=cfg.clip_low, clip_high=cfg.clip_high, dual_clip=cfg.dual_clip,
                            kl_coef=cfg.kl_coef, entropy_coef=cfg.entropy_coef, agg=cfg.loss_agg)


def env_config(cfg: Config) -> envlib.EnvConfig:
    # Every rank grades at once: a worker per core each would oversubscribe the node and time out correct programs.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = max(1, cores // int(os.environ.get("LOCAL_WORLD_SIZE", 1)))
    return envlib.EnvConfig(max_turns=cfg.max_turns, reward=cfg.reward, invalid_penalty=cfg.invalid_penalty,
                            shaping_coef=cfg.shaping_coef, stop_when_public_pass=cfg.stop_when_public_pass,
                            max_response_tokens=cfg.max_response_tokens, max_total_tokens=cfg.max_total_tokens,
                            sandbox_workers=workers, probe=cfg.algo == "didpo" and adv_config(cfg).verdict)


# ----------------------------------------------------------------------------- distributed prologue


# A rank done rolling out waits in a collective for the others, for hours: past NCCL's 10-minute watchdog.
PG_TIMEOUT = datetime.timedelta(seconds=int(os.environ.get("DIDPO_PG_TIMEOUT_S", 4 * 3600)))


def init() -> tuple[int, int, torch.device]:
    """rank, world, device. Without torchrun, a one-process group (gloo on CPU): the same code path."""
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        hardware.keep_freed_memory()
    if not dist.is_initialized():
        # device_id binds NCCL's communicator to this rank's GPU at once (no guessing from the rank).
        kw = dict(backend="nccl", device_id=device) if device.type == "cuda" else dict(backend="gloo")
        if "RANK" in os.environ:
            dist.init_process_group(timeout=PG_TIMEOUT, **kw)
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            dist.init_process_group(init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1, timeout=PG_TIMEOUT,
                                    **kw)
    return dist.get_rank(), dist.get_world_size(), device


def shutdown() -> None:
    """Leave the process group together, before interpreter teardown: a gloo group destroyed while Python
    clears its modules can abort the process ("terminate called without an active exception")."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


# ----------------------------------------------------------------------------- learner


class Policy(torch.nn.Module):
    """A causal LM whose forward returns per-token log-probs (and entropy), in chunks of the sequence so that
    (T, V) fp32 logits never exist at once; as the FSDP root, embedding / lm_head are gathered for it.
    `autocast`: the decoder under CPU bf16 autocast (the residual stream, norms and lm_head stay fp32)."""

    def __init__(self, lm: torch.nn.Module, chunk: int, autocast: bool = False, pack: bool = False,
                 share: bool = False):
        super().__init__()
        self.lm, self.chunk, self.autocast, self.pack, self.share = lm, chunk, autocast, pack, share

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entropy: bool = False,
                mask: torch.Tensor | None = None, entropy_grad: bool = True):
        """(B, T-1) log-probs of input_ids[:, 1:] and entropies of right-padded rows, only where `mask` (B, T-1)
        is nonzero (zeros elsewhere; default: every real token): the lm_head is a quarter of the FLOPs.
        `pack`: the N real tokens side by side in one row, position ids restarting at 0 for each sequence and
        no attention mask; transformers reads each restart as a sequence start (sdpa, eager: a block-diagonal
        causal mask; flash_attention_2: the varlen kernel). `share` (not packing): rows that begin alike run
        their common prefix once (trainer.prefix). entropy_grad=False: the entropy is for logging, no gradient."""
        keep = (mask if mask is not None else attention_mask[:, 1:]).bool()  # (B, T-1)
        targets = input_ids[:, 1:][keep]  # (M,): position j predicts token j+1 of its own row
        with torch.autocast(input_ids.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            if self.pack:
                real, lens = attention_mask.bool(), attention_mask.sum(1)  # (B, T), (B,)
                pos = attention_mask.cumsum(1) - 1  # (B, T): 0..n-1 in each row
                cu = torch.nn.functional.pad(lens.cumsum(0), (1, 0)).int()  # (B+1,) sequence starts
                n_max = int(lens.max())
                # cu / n_max spare the varlen kernel re-deriving them from position_ids in every layer.
                h = self.lm.model(input_ids=input_ids[real][None], position_ids=pos[real][None], use_cache=False,
                                  cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=n_max, max_length_k=n_max,
                                  ).last_hidden_state[0]  # (N, H)
                # Row b's position j is packed index cu[b] + j: gather the (M, H) kept states.
                h = h[(cu[:-1, None] + torch.arange(keep.shape[1], device=keep.device))[keep]]
            elif self.share and prefix.worth(P := prefix.shared_length(input_ids, attention_mask), input_ids.shape[1]):
                ids, pos, tree, index = prefix.tree_row(input_ids, attention_mask, P)
                h = self.lm.model(input_ids=ids, position_ids=pos, attention_mask=tree, use_cache=False
                                  ).last_hidden_state[0]  # (N, H)
                h = h[index[:, :-1][keep]]  # (M, H)
            else:
                h = self.lm.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
                h = h[:, :-1][keep]  # (M, H)
        logps, ents = [], []
        for s in range(0, max(h.shape[0], 1), self.chunk):  # one (empty) chunk even at N = 0: backward must run
            # Recompute each chunk's logits in backward instead of keeping them: peak is one chunk.
            lp, en = torch.utils.checkpoint.checkpoint(_chunk_logprobs, self.lm.lm_head, h[s : s + self.chunk],
                                                       targets[s : s + self.chunk], entropy, entropy_grad,
                                                       use_reentrant=False)
            logps.append(lp)
            ents.append(en)
        zeros = h.new_zeros(keep.shape, dtype=torch.float)  # (B, T-1)
        lp = zeros.masked_scatter(keep, torch.cat(logps))
        return lp, zeros.masked_scatter(keep, torch.cat(ents)) if entropy else None


def _chunk_logprobs(head, h, targets, entropy: bool, entropy_grad: bool):
    logits = head(h).float()  # (N, V)
    logz = torch.logsumexp(logits, -1)
    lp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logz
    # A logged entropy's graph would keep two (N, V) tensors a chunk that backward recomputes, never frees (0.4 GB).
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        return lp, logz - (torch.softmax(logits, -1) * logits).sum(-1) if entropy else lp.new_zeros(())


def build_learner(lm, cfg: Config, device: torch.device, world: int, frozen: bool = False, config=None) -> Policy:
    """FSDP2 over a model built on the meta device; the weights come from rank 0 (trainer/fsdp.py).

    lm: the full model on rank 0 (any dtype: values are copied, upcast exactly); ignored on other
    ranks (pass None and `config`). No rank ever holds a full fp32 copy on the GPU. frozen=True is
    the KL reference, stored in the compute dtype (fsdp.shard: no gradients, offloaded, resharded)."""
    config = config if config is not None else lm.config
    bf16 = hardware.compute_bf16(cfg, device)
    store = torch.bfloat16 if frozen and bf16 else torch.float32
    with torch.device("meta"):
        shell = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=hardware.attention(device))
    shell = shell.to(store)
    if not frozen:
        hardware.checkpoint_layers(shell, cfg.activation_checkpointing)
    for layer in shell.model.layers if cfg.compile else ():
        layer.compile()  # before sharding (torchtitan's order: checkpointing, compile, FSDP)
    # transformers only checkpoints layers in training mode; dropout is 0 in Qwen2 / SmolLM2, so nothing else changes.
    shell.train(not frozen)
    shell.config.use_cache = False
    policy = Policy(shell, cfg.logprob_chunk, hardware.cpu_autocast(cfg, device), hardware.packs(cfg, device),
                    hardware.shares(cfg, device))
    return fsdp.shard(policy, lm, device, world, bf16=bf16, frozen=frozen)


def full_named_parameters(policy: Policy, local: bool = False):
    """Stream parameters one at a time, with HF names: full (unsharded) tensors, peak extra memory one tensor;
    local: each rank's FSDP shard as it is (no gather, no copy), the whole tensor in a world of one."""
    for name, p in policy.lm.named_parameters():
        if hasattr(p, "full_tensor"):  # DTensor under FSDP2
            p = p.to_local() if local else p.full_tensor()
        yield name, p.detach()


def sync_weights(policy: Policy, sampler) -> None:
    """The sampler <-> learner boundary: push the learner's current weights into the sampler. One process with the
    HF sampler: the sampler's parameters alias FSDP's local shards, the whole tensors (0.54 GB held once, not twice)."""
    if dist.get_world_size() == 1 and isinstance(sampler, rollout.HFSampler):
        sampler.load_weights(full_named_parameters(policy, local=True), alias=True)
    else:
        sampler.load_weights(full_named_parameters(policy))


def pad_batch(trajs: list[envlib.Trajectory], advs: list[torch.Tensor], device):
    """Right-pad a micro-batch; everything is shifted by one to align with next-token log-probs."""
    B, T = len(trajs), max(len(t.token_ids) for t in trajs)
    ids, attn = torch.zeros(B, T, dtype=torch.long), torch.zeros(B, T, dtype=torch.long)
    mask, adv, slp = torch.zeros(B, T - 1), torch.zeros(B, T - 1), torch.zeros(B, T - 1)  # slp: sampler log-probs
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
    """Log-probs (B, T-1) of each micro-batch under `policy`, at its loss-mask positions."""
    return [policy(ids, attn, mask=mask)[0].float() for ids, attn, mask, *_ in batches]


def micro_batches(trajs: list[envlib.Trajectory], advs: list[torch.Tensor], cfg: Config, device) -> list:
    """Padded micro-batches of one rank's trajectories. With micro_batch_tokens (verl's dynamic batch size) the
    sequences, longest first (sharing prefixes: by group), are taken greedily while the forward's tokens (B x T_max;
    packed: their sum; shared: prefix.tokens) fit; otherwise micro_batch_size sequences each, in order."""
    order, n = list(range(len(trajs))), [len(t.token_ids) for t in trajs]
    if cfg.micro_batch_tokens:
        pack, share, parts = hardware.packs(cfg, torch.device(device)), hardware.shares(cfg, torch.device(device)), []
        order.sort(key=(lambda i: (trajs[i].task_id, -n[i])) if share else (lambda i: -n[i]))
        for i in order:
            p = [*(parts[-1] if parts else []), i]  # the current part, grown by i
            P = prefix.common_prefix([trajs[j].token_ids for j in p]) if share and len(p) > 1 else 0
            tokens = sum(n[j] for j in p) if pack else prefix.tokens([n[j] for j in p], P)
            if len(p) == 1 or tokens > cfg.micro_batch_tokens:
                parts.append([])
            parts[-1].append(i)
    else:
        parts = [order[i : i + cfg.micro_batch_size] for i in range(0, len(order), cfg.micro_batch_size)]
    return [pad_batch([trajs[i] for i in p], [advs[i] for i in p], device) for p in parts]


def learn(policy, opt, trajs, advs, cfg: Config, device, ref=None) -> dict:
    """ppo_epochs x ppo_mini_batches optimizer steps on this rank's trajectories; metrics averaged over tokens
    and steps. Every rank calls it (FSDP collectives), even with no trajectories of its own. Part k of every
    rank's trajectories forms the global mini-batch of step k, normalized by its global token count. With one
    step the old log-probs are the current ones (logp.detach(): ratio 1 with its gradient), no extra forward."""
    if cfg.overlong_filter:  # DAPO: a response cut by a token budget adds no loss and no token to the mean
        trajs = [dataclasses.replace(t, loss_mask=[0] * len(t.loss_mask))
                 if t.meta.get("truncated") in ("length", "total_tokens") else t for t in trajs]
    n_mini = cfg.ppo_mini_batches
    cut = [len(trajs) * k // n_mini for k in range(n_mini + 1)]
    minis = [micro_batches(trajs[cut[k] : cut[k + 1]], advs[cut[k] : cut[k + 1]], cfg, device) for k in range(n_mini)]
    sizes = torch.tensor([[sum(float(b[2].sum()) for b in mb) for mb in minis],  # response tokens
                          [float(cut[k + 1] - cut[k]) for k in range(n_mini)]], device=device)  # sequences
    dist.all_reduce(sizes)
    global_tokens, n_seqs = sizes.tolist()  # per mini-batch, whole world
    # Ranks must run as many forward/backward passes (FSDP collectives): pad with empty, zero-loss micro-batches.
    n_local = torch.tensor([len(mb) for mb in minis], device=device)
    dist.all_reduce(n_local, op=dist.ReduceOp.MAX)
    dummy = envlib.Trajectory(task_id="", token_ids=[0, 0], loss_mask=[0, 0])
    for mb, n in zip(minis, n_local.tolist()):
        mb += [pad_batch([dummy], [torch.zeros(2)], device) for _ in range(n - len(mb))]

    n_steps = cfg.ppo_epochs * n_mini
    olds = [score(policy, mb) for mb in minis] if n_steps > 1 else None  # once, before any step
    refs = [score(ref, mb) for mb in minis] if ref is not None else None
    lcfg = loss_config(cfg)
    metrics: dict[str, float] = {}
    mismatch, sampler_kl, mismatch_n, norms = 0.0, 0.0, 0.0, []
    for epoch in range(cfg.ppo_epochs):
        for k, batches in enumerate(minis):
            opt.zero_grad(set_to_none=True)
            for j, (ids, attn, mask, adv, slp) in enumerate(batches):
                logp, ent = policy(ids, attn, entropy=True, mask=mask, entropy_grad=bool(cfg.entropy_coef))
                old_lp = olds[k][j] if olds else logp.detach()
                has_slp = bool((slp != 0).any())
                if has_slp and epoch == 0:  # each token once
                    mismatch += float(((old_lp - slp).abs() * mask).sum())
                    # KL(sampler || learner) estimated on the sampler's own tokens: E_sampler[log s - log l].
                    sampler_kl += float(((slp - old_lp) * mask).sum())
                    mismatch_n += float(mask.sum())
                if has_slp and cfg.tis_cap > 0:  # truncated importance sampling: sampler != learner numerics
                    adv = adv * torch.exp(old_lp - slp).clamp(max=cfg.tis_cap)
                loss, m = ppo.policy_loss(logp, old_lp, adv, mask, lcfg, ref_logp=refs[k][j] if refs else None,
                                            entropy=ent, global_tokens=max(global_tokens[k], 1.0),
                                            global_seqs=max(n_seqs[k], 1.0))  # 1: a mini-batch may be empty
                loss.backward()
                w = float(mask.sum()) / max(global_tokens[k], 1.0) / n_steps
                accumulate_metrics(metrics, m, w, float(loss.detach()) / n_steps)
            norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
            norms.append(float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm))
            opt.step()
    metrics["grad_norm"] = sum(norms) / n_steps
    return reduce_metrics(metrics, mismatch, sampler_kl, mismatch_n, device)


# ----------------------------------------------------------------------------- the loop


def make_sampler(cfg: Config, path: str, lm, tokenizer, device):
    if cfg.sampler == "vllm":
        # A seed per rank: engines sharing one draw alike, and rank windows wrap around a small task file. CPU: eager
        # (compiling takes minutes), bf16 KV: a step at full length (else 0.7 of the host; VLLM_CPU_KVCACHE_SPACE wins)
        c, cpu = transformers.AutoConfig.from_pretrained(path).get_text_config(), device.type == "cpu"
        kv = cfg.tasks_per_step // dist.get_world_size() * cfg.group_size * cfg.max_total_tokens * c.num_hidden_layers \
            * 4 * c.num_key_value_heads * (getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads)
        return rollout.VLLMSampler(path, tokenizer, seed=cfg.seed + dist.get_rank(), sleep_level=2, enforce_eager=cpu,
                                   max_model_len=cfg.max_total_tokens, kv_cache_memory_bytes=kv if cpu else None,
                                   gpu_memory_utilization=cfg.gpu_memory_utilization)  # sleep 2 drops weights (synced)
    # The HF sampler keeps its own plain copy: the learner's parameters are FSDP shards.
    return rollout.HFSampler(hardware.prepack_linears(copy.deepcopy(lm).to(device).eval()), tokenizer)


def rollout_seed(seed: int, step: int, rank: int) -> int:
    """A resumed run samples what the uninterrupted one would have; ranks never draw alike (on the same tasks)."""
    return seed * 100003 + step * 101 + rank


def rollout_step(tasks, sampler, tokenizer, cfg: Config, cursor: int, share: int, acfg: didpo.AdvConfig, times: dict):
    """Rollout until this rank has `share` groups (DAPO: skipping all-equal groups) or the limit.
    Returns (groups, rollout batches run)."""
    sampling = rollout.Sampling(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_response_tokens,
                                stop=tuple(cfg.stop))
    kept, drawn, batches = [], 0, 0
    while len(kept) < share and batches < (cfg.max_gen_batches if cfg.dynamic_sampling else 1):
        batch = [data.order(tasks, cfg.seed, cursor + drawn + i) for i in range(share - len(kept))]
        drawn += len(batch)
        groups = rollout.rollout(batch, sampler, tokenizer, env_config(cfg), n=cfg.group_size, sampling=sampling,
                                 progress=None if dist.get_rank() == 0 else False, stats=times)
        kept += [g for g in groups if not cfg.dynamic_sampling or didpo.has_signal(g, acfg)]
        batches += 1
    return kept, batches


def load_learner(cfg: Config, path: str, device, rank: int, world: int):
    """(policy, ref or None, lm or None, tokenizer). Only rank 0 reads the checkpoint, in its stored dtype, and
    broadcasts it into every rank's shards; the HF sampler needs a full fp32 model, so there every rank reads it."""
    if rank == 0 or cfg.sampler == "hf":
        lm, tokenizer = models.load_model(path, dtype=torch.float32 if cfg.sampler == "hf" else "auto")
    else:
        lm, tokenizer = None, models.load_tokenizer(path)
    config = transformers.AutoConfig.from_pretrained(path)
    ref = build_learner(lm, cfg, device, world, frozen=True, config=config) if cfg.kl_coef > 0 else None
    policy = build_learner(lm, cfg, device, world, config=config)
    return policy, ref, lm if cfg.sampler == "hf" else None, tokenizer


def spread(trajs: list, advs: list, rank: int, world: int) -> tuple[list, list]:
    """Every rank's (trajectory, advantage) pairs to every rank, then this rank's share: longest first, each to the
    rank with the fewest tokens so far. Who holds what never changes the update (a sum over tokens / global tokens)."""
    if world == 1:
        return trajs, advs
    parts = [None] * world
    dist.all_gather_object(parts, list(zip(trajs, advs)))
    pairs = [p for part in parts for p in part]
    load, mine = [0] * world, []
    for i in sorted(range(len(pairs)), key=lambda i: -len(pairs[i][0].token_ids)):
        r = min(range(world), key=load.__getitem__)
        load[r] += len(pairs[i][0].token_ids)
        if r == rank:
            mine.append(i)
    mine.sort()
    return [pairs[i][0] for i in mine], [pairs[i][1] for i in mine]


def check_run_dir(cfg: Config) -> None:
    """A new run never writes over an old one's metrics and checkpoints."""
    if not cfg.resume and (Path(cfg.out) / "metrics.jsonl").exists():
        raise ValueError(f"--out {cfg.out} already holds a run; pass --resume auto to continue it, or a new --out")


def fit_world(cfg: Config, world: int) -> Config:
    """tasks_per_step rounded up to a multiple of the world size: every rank rolls out an equal share, none idles."""
    if (fitted := -(-cfg.tasks_per_step // world) * world) != cfg.tasks_per_step:
        print0(f"--tasks-per-step {cfg.tasks_per_step} -> {fitted}, a multiple of the world size {world}: none idles")
    return dataclasses.replace(cfg, tasks_per_step=fitted)


def start_run(cfg: Config, rank: int, world: int, device) -> tuple[Path, list]:
    """(the run directory, with config.json and excluded.jsonl; the training tasks), the resolved config printed."""
    run = Path(cfg.out)
    if rank == 0:
        run.mkdir(parents=True, exist_ok=True)
        (run / "config.json").write_text(json.dumps(run_info(cfg), indent=2))
    dist.barrier()
    if device.type == "cpu" and cfg.dtype == "auto":
        hardware.settle_cpu_bf16(run, bool(cfg.resume))
    print0(f"[bold]didpo[/] {cfg.algo} on {cfg.model}, world {world}, {device.type}; run dir {run}")
    print0(dataclasses.asdict(cfg))
    all_tasks, dropped, line = data.training_set(cfg.tasks, cfg.holdout, cfg.cutoff, cfg.difficulty,
                                                 cfg.max_prompt_chars)
    if rank == 0:
        data.write_excluded(run, dropped)
    print0(line)
    return run, all_tasks


def load_models(cfg: Config, device, rank: int, world: int):
    """(policy, ref or None, optimizer, sampler asleep, tokenizer)."""
    path = models.resolve(cfg.model)
    policy, ref, lm, tokenizer = load_learner(cfg, path, device, rank, world)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=device.type == "cuda")
    sampler = make_sampler(cfg, path, lm, tokenizer, device)  # after the learner: it sizes its pool from what is left
    del lm
    sampler.sleep()
    return policy, ref, opt, sampler, tokenizer


def group_advantages(groups: list, acfg: didpo.AdvConfig) -> tuple[list, list, list[dict]]:
    """(the trajectories, Â of each, each group's credit stats)."""
    trajs, advs, stats = [], [], [{} for _ in groups]
    for g, s in zip(groups, stats):
        advs += didpo.compute_advantages(g, acfg, stats=s)
        trajs += g
    return trajs, advs, stats


def finish_run(cfg: Config, run: Path, policy, tokenizer, device, logger: Logger) -> None:
    """The exported model, the log closed, and where the run's outputs are."""
    checkpoint.export(policy, tokenizer, Path(cfg.export) if cfg.export else run / "export",
                      dtype=torch.bfloat16 if hardware.compute_bf16(cfg, device) else torch.float32)
    logger.close()
    print0(f"done: {run}/metrics.jsonl, checkpoints in {run}/checkpoints, export in {cfg.export or run / 'export'}",
           soft_wrap=True)
    if cfg.save_groups:
        print0(f"credit of the last step: python -m tools.explain {run}/groups/step_{cfg.steps}.jsonl"
               " --html credit.html", soft_wrap=True)


def train(cfg: Config) -> Path:
    check_run_dir(cfg)
    rank, world, device = init()
    cfg = fit_world(cfg, world)
    run, all_tasks = start_run(cfg, rank, world, device)
    policy, ref, opt, sampler, tokenizer = load_models(cfg, device, rank, world)
    start, cursor = checkpoint.resume(run, cfg.resume, policy, opt)
    logger = Logger(run, cfg)
    acfg = adv_config(cfg)
    share = cfg.tasks_per_step // world  # this rank's task groups (fit_world: the same on every rank)
    # Each rank draws from its own window of the run's order (data.order), the most it can draw in a step (DAPO may
    # resample), so ranks never share a task and a resumed run draws what the uninterrupted one would.
    window = share * (cfg.max_gen_batches if cfg.dynamic_sampling else 1)

    for step in range(start, cfg.steps):
        t0 = time.time()
        torch.manual_seed(rollout_seed(cfg.seed, step, rank))
        times = {}
        # The sampler gets every byte the learner does not hold: no gradients, torch's cache returned;
        # its weights first, synced, then the KV cache into what the sync's gathers left free.
        opt.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()  # a no-op where CUDA never started
        sampler.wake(tags=["weights"])
        t = time.time()
        sync_weights(policy, sampler)
        times["sync"] = time.time() - t
        torch.cuda.empty_cache()
        sampler.wake(tags=["kv_cache"])
        t = time.time()
        groups, gen_batches = rollout_step(all_tasks, sampler, tokenizer, cfg, cursor + rank * window, share, acfg,
                                           times)
        sampler.sleep()
        torch.cuda.empty_cache()
        hardware.trim_heap()
        times["rollout"] = time.time() - t

        t = time.time()
        trajs, advs, stats = group_advantages(groups, acfg)
        times["advantage"] = time.time() - t

        t = time.time()
        # Advantages are per task group, so trajectories may move now: each rank updates on an equal share of tokens.
        m = learn(policy, opt, *spread(trajs, advs, rank, world), cfg, device, ref=ref)
        hardware.release_update_memory(opt)  # gradients are not kept through checkpointing and the rollout
        times["update"] = time.time() - t
        cursor += world * window

        m.update(step=step + 1, **rollout_metrics(trajs, groups, stats, gen_batches, device))
        if cfg.keep_last and (cfg.save_every and (step + 1) % cfg.save_every == 0 or step + 1 == cfg.steps):
            t = time.time()
            checkpoint.save(run, policy, opt, step + 1, cursor, cfg.keep_last)
            times["checkpoint"] = time.time() - t
        m.update({f"time_{k}": v for k, v in times.items()}, time_step=time.time() - t0)
        logger.log(m, groups)

    finish_run(cfg, run, policy, tokenizer, device, logger)
    sampler.close()  # after export's collectives: vLLM's shutdown leaves torch.distributed
    return run


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> None:
    """`python train.py --help`: every Config field a flag, with its meaning and default."""
    values = cli.parse(argv, Config, description="The DiDPO trainer (train.py's docstring has the commands).",
                       extra=[("--config", dict(metavar="FILE", help="YAML or TOML file of Config fields; "
                                                "flags override it, it overrides the model's preset"))])
    config_file = values.pop("config", None)
    try:
        cfg = resolve_config(values, config_file)
        models.resolve(cfg.model)
        check_run_dir(cfg)
    except ValueError as e:
        cli.fail(str(e))
    try:
        train(cfg)
    except (checkpoint.DiskFull, data.DataError) as e:  # raised before anything was written: one line, no traceback
        sys.exit(f"error: {e}")
    shutdown()  # only after success: a rank that failed must not hold the others in a barrier


if __name__ == "__main__":
    main()
