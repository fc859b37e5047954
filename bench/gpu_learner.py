"""Learner speed and memory on one GPU: the Qwen2.5-Coder-1.5B shape, random weights, FSDP2, bf16.

    python bench/gpu_learner.py                      # H200: 8 x 2048-token update, 16k-token log-prob pass
    python bench/gpu_learner.py --layers 4           # same code, fewer decoder layers (smaller GPUs)
    python bench/gpu_learner.py --peak-tflops 312    # MFU against another chip's dense bf16 peak (A100)
    python bench/gpu_learner.py --checkpointing selective --compile   # train.py's learner flags, one run each
    python bench/gpu_learner.py --smoke              # tiny fp32 model, seconds on CPU: keeps this script alive
    python bench/gpu_learner.py --smoke --batch 8 --seq 1024 --budget 2048  # CPU: padded vs packed, longer rows

The model is built from the Qwen2.5-Coder-1.5B-Instruct config (values embedded below, no weights
travel) and goes through train.build_learner exactly as in training: FSDP2 on one rank, bf16 compute,
fp32 master weights, activation checkpointing (--checkpointing: full, selective or off), torch.compile of
the decoder layers with --compile, fused AdamW. Three measurements:

1. Update step = train.learn on synthetic trajectories (B sequences x T tokens, the last 3/4 of each
   on the loss mask, random advantages): forward + backward per micro-batch of --micro-batch
   sequences (one optimizer step per batch, so no separate old-log-prob forward), grad clip,
   optimizer step. tokens/s = B*T / seconds per step (mean over --steps after one warm-up step);
   MFU = 6 * N * tokens/s / peak, N = parameter count (tied embedding once: it is also the lm_head
   matmul). 6N ignores attention FLOPs and the checkpointing recompute (2N), so the hardware does
   about 8/6 of what MFU credits.
2. Peak memory of one forward + backward through train.Policy (chunked lm_head, log-probs and
   entropy) on one --mem-seq-token sequence, against the textbook pass that keeps full (T, V) fp32
   logits for backward, on the same sharded model. Peak = most memory allocated during the pass
   above what was allocated before it (weights + AdamW state; gradients are freed first, so the
   fp32 gradients written by backward are inside the peak). "OOM" if the naive pass does not fit.
3. Padded vs packed (Config.pack): the update step of (1) on B sequences of lengths T/B, 2T/B, ..., T
   in micro-batches by token budget (--budget, verl's dynamic batch size): padded rows are grouped
   while B x T_max fits, packed rows while the sum of lengths fits. tokens/s counts real tokens only;
   the ratio is packed / padded, both measured in this run. With equal lengths packing saves nothing,
   hence the spread. Also the largest |log-prob| difference between the two forwards on one
   micro-batch of all B sequences: fp32 rounding on CPU, bf16 rounding on GPU. Packing uses
   flash-attn's varlen kernel where flash-attn is installed, else sdpa under a block-diagonal mask;
   on a GPU without flash-attn a third variant, "packed torch-varlen", runs the packed row through
   the FlashAttention-2 kernel inside torch (torch_flash_varlen below), a candidate for train.py.
On CPU (--smoke) the peak comes from the profiler's allocator events instead of CUDA's counters.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import socket
import sys
import tempfile
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Qwen/Qwen2.5-Coder-1.5B-Instruct config.json (hidden_act silu, qkv bias and no sliding window are
# Qwen2Config defaults). 1.54e9 parameters with the tied embedding counted once.
QWEN25_CODER_15B = dict(
    vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
    num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
    tie_word_embeddings=True, use_sliding_window=False,
)
# --smoke: the same code path at a size a CPU runs in seconds.
SMOKE = dict(
    vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=4096, rope_theta=1e6, rms_norm_eps=1e-6,
    tie_word_embeddings=True, use_sliding_window=False,
)
MIB = 2**20


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=None, help="decoder layers (default: the model's 28)")
    ap.add_argument("--batch", type=int, default=None, help="sequences per update step (default 8; smoke 2)")
    ap.add_argument("--seq", type=int, default=None, help="tokens per sequence in the update (default 2048; smoke 256)")
    ap.add_argument("--micro-batch", type=int, default=None, help="sequences per forward/backward (default 4; smoke 1)")
    ap.add_argument("--steps", type=int, default=None, help="timed update steps after one warm-up (default 3; smoke 1)")
    ap.add_argument("--mem-seq", type=int, default=None,
                    help="tokens of the log-prob memory pass (default 16384; smoke 256)")
    ap.add_argument("--budget", type=int, default=None,
                    help="tokens per micro-batch in the padded vs packed comparison (default 4096; smoke 384)")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak of the chip (H200/H100 SXM: 989)")
    ap.add_argument("--checkpointing", choices=("off", "full", "selective"), default="full",
                    help="Config.activation_checkpointing (default full, the 7B preset's)")
    ap.add_argument("--compile", action="store_true", help="Config.compile: torch.compile each decoder layer")
    ap.add_argument("--smoke", action="store_true", help="tiny fp32 model, runs on CPU in seconds")
    a = ap.parse_args(argv)
    defaults = dict(batch=2, seq=256, micro_batch=1, steps=1, mem_seq=256, budget=384) if a.smoke else \
        dict(batch=8, seq=2048, micro_batch=4, steps=3, mem_seq=16384, budget=4096)
    for name, value in defaults.items():
        if getattr(a, name) is None:
            setattr(a, name, value)
    for name in ("layers", "batch", "seq", "micro_batch", "steps", "mem_seq", "budget", "peak_tflops"):
        value = getattr(a, name)
        if value is not None and value <= 0:
            sys.exit(f"error: --{name.replace('_', '-')} must be positive, got {value}")
    if a.seq < 8 or a.mem_seq < 8:
        sys.exit("error: --seq and --mem-seq must be at least 8 tokens")
    return a


def synthetic_batch(lens: list[int], vocab: int, gen: torch.Generator):
    """Trajectories of random tokens, one per length T: a prompt quarter off the mask, a response on it."""
    import env as envlib

    trajs, advs = [], []
    for T in lens:
        mask = [0] * (T // 4) + [1] * (T - T // 4)
        ids = torch.randint(vocab, (T,), generator=gen).tolist()
        trajs.append(envlib.Trajectory(task_id="synthetic", token_ids=ids, loss_mask=mask))
        advs.append(torch.randn(T, generator=gen) * torch.tensor(mask, dtype=torch.float))  # zero off-mask
    return trajs, advs


def time_updates(policy, opt, trajs, advs, cfg, device, steps: int, sync) -> tuple[float, dict]:
    """Mean seconds of train.learn over `steps` after one warm-up step (kernels, allocator, AdamW
    state), and the last step's metrics."""
    import train

    times, m = [], {}
    for i in range(1 + steps):
        sync()
        t = time.perf_counter()
        m = train.learn(policy, opt, trajs, advs, cfg, device)
        sync()
        if i:
            times.append(time.perf_counter() - t)
    return sum(times) / len(times), m


def torch_flash_varlen(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                       cu_seq_lens_q=None, max_length_q=None, **kwargs):
    """Packed-row attention through the FlashAttention-2 kernel that ships inside torch (CUDA), for
    machines without the flash-attn package: one causal attention per span [cu[i], cu[i+1]) of the
    row. Key / value heads may divide the query heads (GQA), as in flash-attn. A candidate for
    train.py, measured here first. (1, H, N, D) in, (1, N, H, D) out, as transformers expects."""
    q, k, v = (x[0].transpose(0, 1).contiguous() for x in (query, key, value))  # (N, H, D)
    out = torch.ops.aten._flash_attention_forward(q, k, v, cu_seq_lens_q, cu_seq_lens_q, max_length_q, max_length_q,
                                                  dropout, True, False, scale=scaling)[0]  # (N, H, D)
    return out[None], None


def _naive_forward(self, input_ids, attention_mask, entropy: bool = False):
    """The pass train.Policy avoids: full (B, T, V) fp32 logits and log_softmax kept for backward."""
    logits = self.lm(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()  # (B, T-1, V)
    logp = torch.log_softmax(logits, -1)  # (B, T-1, V)
    # A fresh tensor, not a view: FSDP2 hangs its pre-backward hook on the root's outputs.
    lp = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1).clone()  # (B, T-1)
    return lp, (-(logp.exp() * logp).sum(-1) if entropy else None)


@contextlib.contextmanager
def naive_logprobs(policy):
    # FSDP2 hooks the root module's __call__ (unshard embed/lm_head, reduce-scatter their grads), not
    # its forward, so swapping the instance's forward keeps the sharded model and changes only the math.
    policy.forward = types.MethodType(_naive_forward, policy)
    try:
        yield
    finally:
        del policy.forward


def peak_extra_bytes(fn, device: torch.device) -> int:
    """Most memory allocated while fn() runs, above what was allocated when it started."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    # CPU has no peak counter; with profile_memory the profiler records every allocation and free
    # together with the CPU allocator's running total ("Total Allocated").
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(f"{d}/trace.json")
        events = json.loads(Path(f"{d}/trace.json").read_text())["traceEvents"]
    mem = sorted((e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0),
                 key=lambda e: e["ts"])
    if not mem:
        return 0
    # The running total outlives one profiling session, so measure from its value before the first event.
    start = mem[0]["args"]["Total Allocated"] - mem[0]["args"]["Bytes"]
    return max(e["args"]["Total Allocated"] for e in mem) - start


def logprob_pass(policy, T: int, vocab: int, device, entropy_coef: float):
    """One forward + backward on a T-token sequence, log-probs and entropy as the loss uses them."""
    ids = torch.randint(vocab, (1, T), device=device)
    attn = torch.ones_like(ids)

    def run():
        lp, ent = policy(ids, attn, entropy=True)  # (1, T-1) each
        (-lp.mean() - entropy_coef * ent.mean()).backward()

    return run


def main(argv=None) -> int:
    t_start = time.perf_counter()
    a = parse_args(argv)
    if not a.smoke and not torch.cuda.is_available():
        print("error: bench/gpu_learner.py needs a CUDA GPU; on CPU run `python bench/gpu_learner.py --smoke`",
              file=sys.stderr)
        return 2
    if a.smoke:
        # Tiny matmuls gain nothing from intra-op threads, and on a busy CPU an OpenMP thread that
        # loses its core stalls every op (measured: 0.13 s vs 7 s per step on 2 shared cores).
        torch.set_num_threads(1)
    if torch.cuda.is_available() and "RANK" not in os.environ:
        # Act as a one-process torchrun, so train.init() takes its NCCL path: FSDP2's all-gather and
        # reduce-scatter on CUDA tensors are NCCL collectives (train.init() alone would pick gloo here).
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))

    import torch.distributed as dist
    import transformers

    import train
    from trainer import hardware

    _, world, device = train.init()
    if world != 1:
        print(f"error: bench/gpu_learner.py measures one rank; run it as a plain process, not world {world}",
              file=sys.stderr)
        return 2
    shape = dict(SMOKE if a.smoke else QWEN25_CODER_15B)
    if a.layers:
        shape["num_hidden_layers"] = a.layers
    cfg = train.Config(dtype="float32" if a.smoke else "bfloat16", activation_checkpointing=a.checkpointing,
                       compile=a.compile, micro_batch_size=a.micro_batch, micro_batch_tokens=0,
                       logprob_chunk=64 if a.smoke else 1024)
    torch.manual_seed(0)
    # Random init directly on the device: no fp32 host copy of the 1.5B weights, and the init runs there.
    # Built in train mode (models.load_model returns eval()): HF checkpoints layers only when training.
    with device:
        lm = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**shape))
    n_params = sum(p.numel() for p in lm.parameters())  # tied embedding / lm_head counted once
    policy = train.build_learner(lm, cfg, device, world)
    del lm  # build_learner copied it into its own shards (built on the meta device)
    ckpt_layers = sum(bool(layer.gradient_checkpointing and layer.training) for layer in policy.lm.model.layers)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            fused=device.type == "cuda")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    # 1. update step
    gen = torch.Generator().manual_seed(0)
    trajs, advs = synthetic_batch([a.seq] * a.batch, shape["vocab_size"], gen)
    step_s, m = time_updates(policy, opt, trajs, advs, cfg, device, a.steps, sync)
    if not math.isfinite(m["loss"]) or not math.isfinite(m["grad_norm"]):
        print(f"error: the update produced non-finite metrics: loss {m['loss']}, grad_norm {m['grad_norm']}",
              file=sys.stderr)
        return 1
    tok_s = a.batch * a.seq / step_s
    mfu = 6 * n_params * tok_s / (a.peak_tflops * 1e12)

    # 2. peak memory of the log-prob pass, chunked (train.Policy) then naive
    opt.zero_grad(set_to_none=True)
    state_bytes = sum(p.numel() * p.element_size() for p in policy.parameters())
    state_bytes += sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
                       if isinstance(t, torch.Tensor))
    chunked = peak_extra_bytes(logprob_pass(policy, a.mem_seq, shape["vocab_size"], device, cfg.entropy_coef), device)
    opt.zero_grad(set_to_none=True)
    try:
        with naive_logprobs(policy):
            naive = peak_extra_bytes(logprob_pass(policy, a.mem_seq, shape["vocab_size"], device, cfg.entropy_coef),
                                     device)
    except torch.OutOfMemoryError:
        naive = None
    opt.zero_grad(set_to_none=True)

    # 3. padded vs packed, lengths T/B .. T, micro-batches by token budget
    lens = [a.seq * (i + 1) // a.batch for i in range(a.batch)]
    trajs, advs = synthetic_batch(lens, shape["vocab_size"], gen)
    # All B sequences in one micro-batch through every variant's forward, for the log-prob difference.
    same = train.micro_batches(trajs, advs, dataclasses.replace(cfg, micro_batch_size=a.batch), device)
    attn = policy.lm.config._attn_implementation
    variants = [("padded", "off", attn), ("packed", "on", attn)]
    if device.type == "cuda" and attn != "flash_attention_2":
        transformers.AttentionInterface.register("torch_flash_varlen", torch_flash_varlen)
        variants.append(("packed torch-varlen", "on", "torch_flash_varlen"))
    cmp = {}
    for name, pack, impl in variants:
        c = dataclasses.replace(cfg, pack=pack, micro_batch_tokens=a.budget)
        try:
            # Log-probs of the padded forward and of this variant at the same weights (before its steps).
            policy.pack, policy.lm.config._attn_implementation = False, attn
            want = train.score(policy, same)
            policy.pack, policy.lm.config._attn_implementation = pack == "on", impl
            lp_diff = max(float((x - y).abs().max()) for x, y in zip(want, train.score(policy, same)))
            batches = train.micro_batches(trajs, advs, c, device)
            decoded = sum(int(b[1].sum()) if policy.pack else b[1].numel() for b in batches)  # tokens the decoder runs
            step, _ = time_updates(policy, opt, trajs, advs, c, device, a.steps, sync)
            cmp[name] = (sum(lens) / step, len(batches), decoded, lp_diff)
        except RuntimeError as e:  # only the experimental torch-varlen variant may fail
            if impl == attn:
                raise
            cmp[name] = str(e).splitlines()[0][:120]
    policy.pack, policy.lm.config._attn_implementation = hardware.packs(cfg, device), attn
    opt.zero_grad(set_to_none=True)

    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"gpu_learner: {'smoke config' if a.smoke else 'Qwen2.5-Coder-1.5B config'}, "
          f"{shape['num_hidden_layers']} layers, N = {n_params / 1e6:.1f}M params, {where}, "
          f"{'fp32' if a.smoke else 'bf16'} FSDP2 world {world}, activation checkpointing ({a.checkpointing}) "
          f"{ckpt_layers}/{shape['num_hidden_layers']} layers, {'compiled' if a.compile else 'eager'} layers, "
          f"lm_head chunk {cfg.logprob_chunk}")
    rows = [
        ("update batch", f"{a.batch} x {a.seq} tokens, micro-batch {a.micro_batch}"),
        ("update step time (s)", f"{step_s:.3f}"),
        ("update tokens/s", f"{tok_s:.1f}"),
        (f"MFU (6N, peak {a.peak_tflops:g} TFLOPS)", f"{100 * mfu:.2f}%"),
        ("loss / grad norm (last step)", f"{m['loss']:+.4f} / {m['grad_norm']:.3f}"),
        ("weights + AdamW state (MiB)", f"{state_bytes / MIB:.1f}"),
        (f"peak memory chunked log-probs @ {a.mem_seq} tokens (MiB)", f"{chunked / MIB:.1f}"),
        (f"peak memory naive log-probs @ {a.mem_seq} tokens (MiB)", "OOM" if naive is None else f"{naive / MIB:.1f}"),
        ("naive / chunked", "-" if naive is None else f"{naive / max(chunked, 1):.1f}x"),
        ("pack compare batch", f"{a.batch} sequences of {lens[0]}..{lens[-1]} tokens ({sum(lens)}), "
                               f"budget {a.budget}, attention {attn}"),
    ]
    for name, result in cmp.items():
        if isinstance(result, str):
            rows.append((name, f"failed: {result}"))
            continue
        tok, n_mb, decoded, lp_diff = result
        rows += [(f"{name} micro-batches / row tokens", f"{n_mb} / {decoded}"), (f"{name} tokens/s", f"{tok:.1f}")]
        if name != "padded":
            rows += [(f"{name} / padded", f"{tok / cmp['padded'][0]:.2f}x"),
                     (f"max |log-prob {name} - padded|", f"{lp_diff:.2e}")]
    rows.append(("wall time (s)", f"{time.perf_counter() - t_start:.1f}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    rc = main()
    import train

    train.shutdown()  # leave the process group before interpreter teardown
    sys.exit(rc)
