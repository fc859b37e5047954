"""GPU smoke test of the 7B preset's learner path: one H200, no internet, no vLLM, no weights, < 3 minutes.

    python bench/gpu_smoke.py          # (a) + (b) + (c) on one CUDA GPU; exit 1 on any FAIL
    python bench/gpu_smoke.py --cpu    # (a) + (b) on tiny shapes, gloo on CPU (part of the test suite)
    python bench/gpu_smoke.py --part c # one part only (each part runs in its own process)

Models are random-init from the real Qwen2.5-Coder configs (embedded below); the tokenizer is the
test suite's tiny BPE (its ids are a subset of the model vocabulary).

(a) train.train itself, 2 steps then a resume to step 3: NCCL with one rank (gloo with --cpu), the
    7B preset's settings (bf16, activation checkpointing, micro-batches of 1, KL reference in bf16
    with CPU offload, sampler="vllm" so only rank 0 reads the checkpoint) on the 0.5B shape, with
    rollout.ScriptedSampler standing in for vLLM. Checks: 3 metric rows, finite loss / grad norm,
    a checkpoint, the export's dtype (bf16 on GPU). Catches a collective fed a CPU tensor on NCCL.
(b) parity of train.Policy (FSDP2, bf16 compute, chunked log-probs, checkpointing) against the
    textbook pass (plain module, autocast bf16, full logits, log_softmax): log-probs, entropy and
    the gradient of  L = -mean(lp * adv) - 0.01 * mean(entropy)  (cosine over all parameters).
(c) the 7B preset's memory per rank of an 8-GPU node, phase by phase. A fake process group of 8
    ranks (this process is rank 1: it holds exactly 1/8 of every sharded tensor and receives, not
    reads, the weights; the collectives move nothing, so values are garbage, memory is real):
    construction (policy fp32 + reference bf16 offloaded), sync (vLLM's bf16 weights woken, the
    learner streams full tensors), rollout (vLLM's whole pool), update (old/ref log-probs, forward +
    backward on 2 x 12,288 tokens, AdamW step). vLLM's memory is a cuMemAlloc outside torch's
    allocator. Per phase:  device peak = torch's peak reserved + vLLM's allocation + this process's
    CUDA context + NCCL_RESERVE (the real 8-rank communicators, which a fake group lacks), where
    vLLM's allocation is 0 at construction, its bf16 weights + VLLM_ASLEEP at sync, its pool at
    rollout, VLLM_ASLEEP during the update;
    vLLM's pool is gpu_memory_utilization x the card's memory, so the same torch peaks give the
    verdict for an 80 GB card (79.1 GiB usable) and a 141 GB card (139.8 GiB).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# Qwen/Qwen2.5-Coder-7B-Instruct and -0.5B-Instruct config.json (silu, qkv bias and no sliding window
# are Qwen2Config defaults).
QWEN25_CODER_7B = dict(
    vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
    num_key_value_heads=4, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
    tie_word_embeddings=False, use_sliding_window=False,
)
QWEN25_CODER_05B = dict(
    vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
    num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
    tie_word_embeddings=True, use_sliding_window=False,
)
TINY = dict(
    vocab_size=600, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=4096, rope_theta=1e6, rms_norm_eps=1e-6,
    tie_word_embeddings=True, use_sliding_window=False,
)
GIB = 2**30
CARDS = {"80 GB": 81559 * 2**20, "141 GB": 143771 * 2**20}  # total_memory as CUDA reports it (H100, H200)
NODE_RANKS = 8
NCCL_RESERVE = 1 * GIB  # NCCL's buffers for an 8-rank communicator (not allocated by the fake group)
# What a level-2-asleep vLLM engine still holds outside its sleep pool (CUDA graphs, sampler and
# attention-metadata buffers): an allowance, not a measurement (no vLLM on the smoke's machine).
VLLM_ASLEEP = 2 * GIB
PART_TIMEOUT = {"a": 200, "b": 100, "c": 200}


def result(name: str, ok: bool, detail: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return ok


def _fmt(rows: list[dict], key: str) -> str:
    return "[" + ", ".join(f"{r.get(key, math.nan):.3g}" for r in rows) + "]"


def preset_cfg(**overrides):
    import train

    offline = dict(tasks=train.Config.tasks, holdout="", cutoff="")  # the preset's LiveCodeBench is on the hub
    return train.Config(**{**train.PRESETS["Qwen2.5-7B-Coder"], **offline, **overrides})


# ----------------------------------------------------------------------------- (a)


def part_a(cpu: bool) -> bool:
    import torch
    import transformers
    from conftest import build_tiny_tokenizer
    from safetensors import safe_open

    import rollout
    import train

    tmp = Path(tempfile.mkdtemp(prefix="gpu_smoke_a_"))
    tok = build_tiny_tokenizer()
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**(TINY if cpu else QWEN25_CODER_05B)))
    model.generation_config.eos_token_id = tok.eos_token_id
    # Stored as the hub stores Qwen2.5 (bf16); the tiny CPU model keeps fp32.
    model.to(torch.float32 if cpu else torch.bfloat16).save_pretrained(tmp / "model")
    tok.save_pretrained(tmp / "model")
    del model

    def scripted(cfg, path, lm, tokenizer, device):
        # One unique script per episode (unique text: episodes are matched by token prefix).
        return rollout.ScriptedSampler(tokenizer, [[f"step {e}: I look at the code. turn {t}." for t in range(8)]
                                                   for e in range(256)])

    train.make_sampler = scripted
    cfg = preset_cfg(model=str(tmp / "model"), out=str(tmp / "run"), steps=2, tasks_per_step=2, group_size=2,
                     max_turns=2, max_response_tokens=24, dynamic_sampling=False, difficulty="trivial",
                     save_groups=0, logprob_chunk=64 if cpu else 1024, **(dict(dtype="float32") if cpu else {}))
    t0 = time.time()
    train.train(cfg)
    cfg.steps, cfg.resume = 3, "auto"
    train.train(cfg)
    rows = [json.loads(x) for x in (tmp / "run" / "metrics.jsonl").read_text().splitlines()]
    ok = result("(a) loop", [r["step"] for r in rows] == [1, 2, 3]
                and all(math.isfinite(r["loss"]) and 0 < r["grad_norm"] < math.inf for r in rows),
                f"steps {[r['step'] for r in rows]}, loss {_fmt(rows, 'loss')}, "
                f"grad_norm {_fmt(rows, 'grad_norm')} (> 0), kl {_fmt(rows, 'kl')}, {time.time() - t0:.0f}s")
    ok &= result("(a) checkpoint", (tmp / "run" / "checkpoints" / "step_3" / "COMPLETE").exists(),
                 "step_3 complete")
    want = torch.float32 if cpu else torch.bfloat16
    export = tmp / "run" / "export"
    conf = json.loads((export / "config.json").read_text())
    with safe_open(str(next(export.glob("*.safetensors"))), "pt") as f:
        dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
    want_name = str(want).removeprefix("torch.")
    ok &= result("(a) export dtype", dtypes == {{"float32": "F32", "bfloat16": "BF16"}[want_name]}
                 and want_name in (conf.get("dtype"), conf.get("torch_dtype")),
                 f"tensors {sorted(dtypes)}, config dtype {conf.get('dtype', conf.get('torch_dtype'))}")
    return ok


# ----------------------------------------------------------------------------- (b)


def part_b(cpu: bool) -> bool:
    import copy

    import torch
    import transformers

    import train

    _, world, device = train.init()
    bf16 = not cpu
    cfg = train.Config(dtype="bfloat16" if bf16 else "float32", activation_checkpointing="full",
                       logprob_chunk=5 if cpu else 512)
    shape = TINY if cpu else QWEN25_CODER_05B
    torch.manual_seed(0)
    lm = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**shape))
    plain = copy.deepcopy(lm).to(device).train()  # fp32 weights, the textbook pass under autocast
    plain.config.use_cache = False
    policy = train.build_learner(lm, cfg, device, world)
    T = 40 if cpu else 2048
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(shape["vocab_size"], (2, T), generator=g).to(device)
    attn = torch.ones_like(ids)
    adv = torch.randn(2, T - 1, generator=g).to(device)

    def objective(lp, ent):
        return -(lp * adv).mean() - 0.01 * ent.mean()

    lp, ent = policy(ids, attn, entropy=True)  # (2, T-1) each
    objective(lp, ent).backward()
    lp, ent = lp.detach(), ent.detach()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = plain(input_ids=ids, attention_mask=attn).logits[:, :-1].float()  # (2, T-1, V)
    logp = torch.log_softmax(logits, -1)
    lp_ref = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
    ent_ref = -(logp.exp() * logp).sum(-1)
    objective(lp_ref, ent_ref).backward()
    lp_ref, ent_ref = lp_ref.detach(), ent_ref.detach()

    grads = dict(plain.named_parameters())
    a, b = [], []
    for name, p in policy.lm.named_parameters():
        gp = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        a.append(gp.float().flatten())
        b.append(grads[name].grad.float().flatten())
    cos = float(torch.nn.functional.cosine_similarity(torch.cat(a), torch.cat(b), dim=0))
    dlp = (lp.float() - lp_ref).abs()
    dent = (ent.float() - ent_ref).abs()
    tol = dict(lp_mean=1e-5, lp_max=1e-4, ent=1e-4, cos=0.9999) if cpu else \
        dict(lp_mean=0.02, lp_max=0.25, ent=0.02, cos=0.99)
    ok = result("(b) log-probs", float(dlp.mean()) < tol["lp_mean"] and float(dlp.max()) < tol["lp_max"],
                f"mean |d| {float(dlp.mean()):.2e} (< {tol['lp_mean']}), max {float(dlp.max()):.2e} "
                f"(< {tol['lp_max']}); mean lp {float(lp_ref.mean()):.3f}")
    ok &= result("(b) entropy", float(dent.mean()) < tol["ent"],
                 f"mean |d| {float(dent.mean()):.2e} (< {tol['ent']}); mean entropy {float(ent_ref.mean()):.3f}")
    ok &= result("(b) gradient", cos > tol["cos"], f"cosine {cos:.6f} (> {tol['cos']})")
    return ok


# ----------------------------------------------------------------------------- (c)


class OutsideAlloc:
    """Device memory from the CUDA driver, invisible to torch's allocator (as vLLM's sleep-mode pool is)."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.ptrs: list[tuple[ctypes.c_uint64, int]] = []

    def alloc(self, nbytes: int) -> None:
        ptr = ctypes.c_uint64()
        rc = self.cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        if rc != 0:
            raise MemoryError(f"cuMemAlloc of {nbytes / GIB:.1f} GiB failed with CUDA error {rc}")
        self.ptrs.append((ptr, nbytes))

    def free(self) -> None:
        for ptr, _ in self.ptrs:
            self.cuda.cuMemFree_v2(ptr)
        self.ptrs.clear()

    @property
    def bytes(self) -> int:
        return sum(n for _, n in self.ptrs)


def part_c(cpu: bool) -> bool:
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint.state_dict as dcp_sd
    import transformers
    from torch.testing._internal.distributed.fake_pg import FakeStore

    import train
    from bench.gpu_learner import synthetic_batch

    if cpu or not torch.cuda.is_available():
        print("SKIP (c): needs a CUDA GPU")
        return True
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.empty(1, device=device)  # create the context before measuring it
    dist.init_process_group("fake", store=FakeStore(), rank=1, world_size=NODE_RANKS)
    # Rank 1 receives rank 0's weights; with a fake group nothing arrives, so skip the (empty) broadcast.
    dcp_sd.set_model_state_dict = lambda *a, **k: None
    cfg = preset_cfg()
    config = transformers.Qwen2Config(**QWEN25_CODER_7B)
    outside = OutsideAlloc()
    free0, total = torch.cuda.mem_get_info()
    context = total - free0 - torch.cuda.memory_reserved()
    peaks: dict[str, tuple[int, dict[str, int]]] = {}  # phase -> (torch peak reserved, vLLM bytes per card)

    def phase(name: str, vllm: dict[str, int]):
        torch.cuda.synchronize()
        peaks[name] = (torch.cuda.max_memory_reserved(), vllm)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    t0 = time.time()
    torch.cuda.reset_peak_memory_stats()
    ref = train.build_learner(None, cfg, device, NODE_RANKS, frozen=True, config=config)
    policy = train.build_learner(None, cfg, device, NODE_RANKS, config=config)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, fused=True)
    n_params = sum(p.numel() for p in policy.parameters())  # a DTensor's numel is the global one
    vllm_weights = 2 * n_params  # bf16
    # The AdamW state exists from step 2 on: create it (zero gradients, one step) before measuring.
    for p in policy.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)
    phase("construction", {c: 0 for c in CARDS})
    # A real node holds vLLM's whole pool at engine start (the learner exists first): the rollout
    # phase below has the same allocation.

    # sync: vLLM's weights are awake (bf16), the learner streams full tensors one at a time into them.
    outside.alloc(vllm_weights)
    for _name, t in train.full_named_parameters(policy):
        t.to(torch.bfloat16)  # the copy vLLM's load_weights makes into its own weights
    outside.free()
    phase("sync", {c: vllm_weights + VLLM_ASLEEP for c in CARDS})

    # rollout: vLLM's whole pool (weights + KV cache + its activations) = utilization x card memory.
    pools = {c: int(cfg.gpu_memory_utilization * m) for c, m in CARDS.items()}
    here = max((c for c in CARDS if CARDS[c] <= total), key=CARDS.get, default=None)
    if here:  # the real allocation for the largest card this GPU can stand in for
        outside.alloc(pools[here])
        outside.free()
    phase("rollout", pools)

    # update: old + ref log-probs, forward + backward per micro-batch, AdamW step; vLLM asleep (level 2).
    gen = torch.Generator().manual_seed(0)
    trajs, advs = synthetic_batch(2, 12288, QWEN25_CODER_7B["vocab_size"], gen)
    m = train.learn(policy, opt, trajs, advs, cfg, device, ref=ref)
    opt.zero_grad(set_to_none=True)
    phase("update", {c: VLLM_ASLEEP for c in CARDS})
    assert "loss" in m  # its value is meaningless: a fake group moves no weights
    print(f"(c) 7B preset, per rank of {NODE_RANKS}: {n_params / 1e9:.2f}B params, "
          f"CUDA context {context / GIB:.2f} GiB, NCCL reserve {NCCL_RESERVE / GIB:.1f} GiB, {time.time() - t0:.0f}s")
    print(f"{'phase':<14}{'torch peak':>12}" + "".join(f"{'vLLM ' + c:>14}{'total ' + c:>16}" for c in CARDS))
    ok = True
    worst = {c: 0 for c in CARDS}
    for name, (torch_peak, vllm) in peaks.items():
        cells = ""
        for c in CARDS:
            tot = torch_peak + vllm[c] + context + NCCL_RESERVE
            worst[c] = max(worst[c], tot)
            cells += f"{vllm[c] / GIB:>13.1f} {tot / GIB:>15.1f}"
        print(f"{name:<14}{torch_peak / GIB:>12.1f}{cells}")
    for c, cap in CARDS.items():
        ok &= result(f"(c) memory {c}", worst[c] <= cap, f"peak {worst[c] / GIB:.1f} GiB of {cap / GIB:.1f} GiB")
    if here:
        print(f"(c) vLLM pool for the {here} card ({pools[here] / GIB:.1f} GiB) really allocated outside torch")
    return ok


# ----------------------------------------------------------------------------- driver


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="(a) and (b) on tiny shapes, gloo on CPU")
    ap.add_argument("--part", choices=("a", "b", "c"), help="run one part in this process")
    a = ap.parse_args(argv)
    if a.cpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch initializes CUDA
    if a.part:
        if a.cpu:
            import torch

            torch.set_num_threads(1)  # tiny matmuls; a shared CPU stalls on OpenMP threads
        ok = {"a": part_a, "b": part_b, "c": part_c}[a.part](a.cpu)
        import train

        train.shutdown()  # leave the process group before interpreter teardown
        return 0 if ok else 1
    import torch

    if not a.cpu and not torch.cuda.is_available():
        print("error: bench/gpu_smoke.py needs a CUDA GPU; on CPU run `python bench/gpu_smoke.py --cpu`",
              file=sys.stderr)
        return 2
    t0, failed = time.time(), []
    for part in ("a", "b") if a.cpu else ("a", "b", "c"):
        cmd = [sys.executable, __file__, "--part", part, *(["--cpu"] if a.cpu else [])]
        print(f"== part ({part})", flush=True)
        try:
            r = subprocess.run(cmd, timeout=PART_TIMEOUT[part], cwd=ROOT)
            if r.returncode != 0:
                print(f"FAIL ({part}): exit code {r.returncode}", flush=True)
                failed.append(part)
        except subprocess.TimeoutExpired:
            print(f"FAIL ({part}): timed out after {PART_TIMEOUT[part]}s", flush=True)
            failed.append(part)
    print(f"{'FAIL' if failed else 'PASS'} gpu_smoke{' --cpu' if a.cpu else ''}: "
          f"{'parts ' + ', '.join(failed) + ' failed' if failed else 'all parts passed'} in {time.time() - t0:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
