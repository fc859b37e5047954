"""Sampler throughput: HFSampler against VLLMSampler, tokens/s on the same rollout prompts.

    python bench/rollout.py                              # HF only in .venv (says so for vLLM)
    .venv-vllm/bin/python bench/rollout.py               # both: the vLLM venv has transformers too
    python bench/rollout.py --prompts 8 --max-tokens 64 --samplers hf

The prompts are the first-turn prompts of data/tasks.jsonl as the rollout loop renders them
(protocol.chat.prompt_ids), sampled at temperature 1 with the end-of-turn stop on. tokens/s = sampled
tokens (all prompts) / wall seconds of one generate call for the whole batch, after one warm-up
call; the vLLM engine's start-up is reported apart. HF runs the model in fp32 (the CPU default; its
linears on oneDNN-packed weights, as train.py and eval.py run it), vLLM in bf16 (its CPU default).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import env  # noqa: E402
import models  # noqa: E402
import rollout  # noqa: E402
import tasks  # noqa: E402
from protocol import chat  # noqa: E402
from trainer.hardware import prepack_linears  # noqa: E402


def timed(sampler, prompts, sampling) -> tuple[int, float]:
    sampler.generate(prompts[:1], rollout.Sampling(max_tokens=4))  # warm-up: kernels, allocator, caches
    t = time.perf_counter()
    out = sampler.generate(prompts, sampling)
    return sum(len(s.token_ids) for s in out), time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--samplers", default="hf,vllm", help="comma-separated: hf, vllm")
    ap.add_argument("--eager", action="store_true", help="vLLM without torch.compile: ~10 s start-up, not ~4 min")
    args = ap.parse_args(argv)
    which = args.samplers.split(",")
    if bad := set(which) - {"hf", "vllm"}:
        ap.error(f"unknown sampler(s) {', '.join(sorted(bad))}; use hf and/or vllm")

    model, tok = models.load_model(args.model)
    ts = tasks.load(str(ROOT / "data" / "tasks.jsonl"))
    prompts = [chat.prompt_ids(tok, env.Episode(ts[i % len(ts)]).messages) for i in range(args.prompts)]
    sampling = rollout.Sampling(temperature=1.0, max_tokens=args.max_tokens, seed=0)
    print(f"{args.model}: {len(prompts)} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens, "
          f"up to {args.max_tokens} new tokens each")
    rates = {}
    if "hf" in which:
        n, s = timed(rollout.HFSampler(prepack_linears(model), tok, batch_size=len(prompts)), prompts, sampling)
        rates["hf"] = n / s
        print(f"hf    fp32  {n:6d} tokens  {s:7.1f} s  {n / s:7.1f} tokens/s")
    del model
    if "vllm" in which:
        try:
            import vllm  # noqa: F401
        except ImportError:
            print(f"vllm  unavailable: not installed for {sys.executable}; run `make test-vllm` once, then "
                  f"`.venv-vllm/bin/python bench/rollout.py`")
        else:
            t = time.perf_counter()
            sampler = rollout.VLLMSampler(args.model, tok, dtype="bfloat16", seed=0, max_model_len=4096,
                                          enforce_eager=args.eager)
            start = time.perf_counter() - t
            n, s = timed(sampler, prompts, sampling)
            rates["vllm"] = n / s
            mode = "eager" if args.eager else "compiled"
            print(f"vllm  bf16  {n:6d} tokens  {s:7.1f} s  {n / s:7.1f} tokens/s  ({mode}, start-up {start:.0f} s)")
    if len(rates) == 2:
        print(f"vllm / hf: {rates['vllm'] / rates['hf']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
