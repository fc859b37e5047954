"""The 7B preset's real vLLM path on one GPU: train.train with sampler="vllm", the sync, sleep / wake, resume, eval.

    python bench/gpu_vllm.py          # one CUDA GPU with vLLM: 7B width, 4 layers, random bf16; exit 1 on any FAIL
    python bench/gpu_vllm.py --cpu    # its CPU twin (vllm-cpu, in .venv-vllm): a small shape, same checks

Where vLLM is not installed it prints one line and exits 0. The model is random-init at the width of
Qwen2.5-Coder-7B (hidden 3,584, 28 heads, 4 KV heads, vocabulary 152,064) with 4 decoder layers, stored in
bf16; the tokenizer is the test suite's tiny BPE (its ids are a subset of the vocabulary). Each phase runs
train.py's own `train` in its own process, world 1 (NCCL on GPU, gloo on CPU), with the 7B preset's
settings but for the sizes below, and rollout.VLLMSampler as the sampler:
  synced   3 steps, a checkpoint per step. The trainer's per-step mean |sampler - learner log-prob| over the
           sampled tokens (metrics' sampler_abs_dlogp) must be < 0.05 at step 1 and < 0.15 after each sync.
           Free device memory is read after every sleep / wake of the engine (torch.cuda.mem_get_info):
           it must rise by at least half of what waking took when the engine sleeps.
  stale    the same run with sync_weights skipped after step 1 (a negative control): its step-3 gap must be
           more than 5x the synced run's, or the gap would not show a broken sync.
  resume   the synced run continued to step 4 from its step-3 checkpoint: one more row, gap < 0.15.
  eval     eval.py --sampler vllm on 4 tasks of data/tasks.jsonl with the run's export.
On CPU vLLM cannot sleep (sleep / wake are no-ops there), so the memory check reads "n/a".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# Qwen/Qwen2.5-Coder-7B-Instruct's width, 4 layers (silu, qkv bias, no sliding window: Qwen2Config defaults).
WIDE_7B = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=4,
               num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768, rope_theta=1e6,
               rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False)
# The CPU twin: vllm-cpu's attention wants a common head size (64).
SMALL = dict(vocab_size=640, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=4096, rope_theta=1e6, rms_norm_eps=1e-6,
             tie_word_embeddings=False, use_sliding_window=False)
GAP_FIRST, GAP_SYNCED, STALE_FACTOR = 0.05, 0.15, 5.0
TIMEOUT = {"synced": 900, "stale": 600, "resume": 600, "eval": 600}


def result(name: str, ok: bool, detail: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return ok


def build_model(out: Path, cpu: bool) -> None:
    import torch
    import transformers
    from conftest import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    torch.manual_seed(0)
    with torch.device("cpu" if cpu or not torch.cuda.is_available() else "cuda"):
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**(SMALL if cpu else WIDE_7B)))
    model.generation_config.eos_token_id = tok.eos_token_id
    model.to(torch.float32 if cpu else torch.bfloat16).save_pretrained(out)  # as the hub stores Qwen2.5: bf16
    tok.save_pretrained(out)


def config(model: Path, run: Path, cpu: bool, steps: int, resume: str = ""):
    import train

    offline = dict(tasks=train.Config.tasks, holdout="", cutoff="", difficulty="trivial")  # the preset's is the hub's
    small = dict(model=str(model), out=str(run), steps=steps, resume=resume, tasks_per_step=1, group_size=4,
                 max_turns=1, max_response_tokens=32, max_total_tokens=1024, dynamic_sampling=False, save_every=1,
                 keep_last=1, save_groups=0, gpu_memory_utilization=0.3,
                 # A random model earns no reward: the entropy bonus gives the step a gradient, and a learning
                 # rate that moves it far enough for a stale engine to show.
                 lr=3e-4, entropy_coef=0.01, **(dict(dtype="float32", logprob_chunk=64) if cpu else {}))
    return train.Config(**{**train.PRESETS["Qwen2.5-7B-Coder"], **offline, **small})


def phase(name: str, tmp: Path, cpu: bool) -> None:
    """One phase in this process; writes tmp/<name>.json: its metric rows and the memory readings."""
    import torch

    import rollout
    import train

    memory = []

    def watched(method):
        def call(self, *a, **k):
            out = method(self, *a, **k)
            free = torch.cuda.mem_get_info()[0] if torch.cuda.is_available() else None
            memory.append([f"{method.__name__}({','.join(k.get('tags') or [])})", free, self.can_sleep])
            return out
        return call

    rollout.VLLMSampler.sleep = watched(rollout.VLLMSampler.sleep)
    rollout.VLLMSampler.wake = watched(rollout.VLLMSampler.wake)
    model, run = tmp / "model", tmp / ("stale" if name == "stale" else "run")
    if name == "stale":
        real, calls = train.sync_weights, []

        def first_only(policy, sampler):
            calls.append(1)
            if len(calls) == 1:
                real(policy, sampler)

        train.sync_weights = first_only
    train.train(config(model, run, cpu, steps=4 if name == "resume" else 3, resume="auto" if name == "resume" else ""))
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    (tmp / f"{name}.json").write_text(json.dumps({"rows": rows, "memory": memory}))
    train.shutdown()


def run_phase(name: str, tmp: Path, cpu: bool) -> dict | None:
    cmd = [sys.executable, __file__, "--phase", name, "--dir", str(tmp), *(["--cpu"] if cpu else [])]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=ROOT, timeout=TIMEOUT[name], capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        result(name, False, f"timed out after {TIMEOUT[name]} s")
        return None
    if r.returncode != 0:
        result(name, False, f"exit {r.returncode}: {r.stderr.strip()[-1500:]}")
        return None
    out = json.loads((tmp / f"{name}.json").read_text())
    out["seconds"] = time.time() - t0
    return out


def gaps(out: dict) -> list[float]:
    return [round(r["sampler_abs_dlogp"], 4) for r in out["rows"]]


def memory_check(out: dict) -> bool:
    """Free memory rises when the engine sleeps by at least half of what its wake took."""
    mem = out["memory"]
    if not mem or not mem[0][2] or mem[0][1] is None:
        return result("memory", True, "n/a: vLLM cannot sleep on this platform")
    readings = ", ".join(f"{stage} {free / 2**30:.1f}" for stage, free, _ in mem[:8])
    drops = []  # (freed by a sleep, taken by the wakes before it), each from the engine's previous sleep
    for k in range(2, len(mem)):
        if mem[k][0] == "sleep()" and mem[k - 1][0] == "wake(kv_cache)":
            asleep = next((m[1] for m in reversed(mem[: k - 1]) if m[0] == "sleep()"), None)
            if asleep is not None:
                drops.append((mem[k][1] - mem[k - 1][1], asleep - mem[k - 1][1]))
    ok = bool(drops) and all(freed >= 0.5 * taken > 0 for freed, taken in drops)
    return result("memory", ok, f"free GiB after each call: {readings} ...; (freed by sleep, taken by wake) GiB: "
                  + ", ".join(f"({a / 2**30:.1f}, {b / 2**30:.1f})" for a, b in drops))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="the CPU twin: vllm-cpu, a small fp32 model")
    ap.add_argument("--phase", choices=("synced", "stale", "resume"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.cpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the CPU default takes far more
    if a.phase:
        phase(a.phase, Path(a.dir), a.cpu)
        return 0
    if importlib.util.find_spec("vllm") is None:
        print("bench/gpu_vllm.py: vLLM is not installed here; nothing to check (pip install -r requirements-gpu.txt)")
        return 0
    import torch

    if not a.cpu and not torch.cuda.is_available():
        print("error: bench/gpu_vllm.py needs a CUDA GPU; on CPU run `python bench/gpu_vllm.py --cpu`", file=sys.stderr)
        return 2
    t0, ok = time.time(), True
    tmp = Path(tempfile.mkdtemp(prefix="gpu_vllm_"))
    build_model(tmp / "model", a.cpu)
    synced = run_phase("synced", tmp, a.cpu)
    if synced:
        g = gaps(synced)
        ok &= result("synced", [r["step"] for r in synced["rows"]] == [1, 2, 3] and g[0] < GAP_FIRST
                     and max(g) < GAP_SYNCED, f"log-prob gap per step {g} (step 1 < {GAP_FIRST}, all < "
                     f"{GAP_SYNCED}), {synced['seconds']:.0f} s")
        ok &= memory_check(synced)
    stale = run_phase("stale", tmp, a.cpu)
    if stale and synced:
        s = gaps(stale)
        ok &= result("stale", s[-1] > STALE_FACTOR * gaps(synced)[-1],
                     f"gap without the sync after step 1 {s}: step 3 is {s[-1] / max(gaps(synced)[-1], 1e-9):.1f}x "
                     f"the synced run's (> {STALE_FACTOR:g}x)")
    resumed = run_phase("resume", tmp, a.cpu) if synced else None
    if resumed:
        g = gaps(resumed)
        ok &= result("resume", [r["step"] for r in resumed["rows"]] == [1, 2, 3, 4] and g[-1] < GAP_SYNCED,
                     f"steps {[r['step'] for r in resumed['rows']]}, step-4 gap {g[-1]}")
    if resumed:
        cmd = [sys.executable, "eval.py", "--bench", "jsonl", "--path", "data/tasks.jsonl", "--model",
               str(tmp / "run" / "export"), "--sampler", "vllm", "--limit", "4", "--max-tokens", "32",
               "--out", str(tmp / "eval")]
        r = subprocess.run(cmd, cwd=ROOT, timeout=TIMEOUT["eval"], capture_output=True, text=True)
        res = json.loads((tmp / "eval" / "results.json").read_text()) if r.returncode == 0 else {}
        ok &= result("eval", r.returncode == 0 and res.get("tasks") == 4,
                     f"eval.py --sampler vllm: exit {r.returncode}, {res.get('tasks')} tasks, pass@1 "
                     f"{res.get('overall', {}).get('pass@1')}" + ("" if r.returncode == 0 else
                                                                   f": {r.stderr.strip()[-600:]}"))
    else:
        ok = False
    print(f"{'PASS' if ok else 'FAIL'} gpu_vllm{' --cpu' if a.cpu else ''} in {time.time() - t0:.0f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
