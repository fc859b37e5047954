"""Build the learner (and the frozen reference) the way train.py does on a node: only rank 0 reads
the checkpoint; every rank builds on the meta device and receives its shards by broadcast.

    torchrun --nproc_per_node 2 tests/dist_load.py MODEL_DIR OUT.json

Writes, from rank 0: whether every full parameter and buffer equals a plain fp32 load exactly, for
the policy and the reference, and how far each rank's peak resident host memory rose during the load (MiB:
the peak after it less the peak before it, so what the imports took, which varies by machine, is not counted).
"""

import json
import resource
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path[:0] = [str(Path(__file__).parents[1])]
from conftest import leave_torchrun  # noqa: E402

import models  # noqa: E402
import train  # noqa: E402


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    rank, world, device = train.init()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB -> MiB on Linux
    cfg = train.Config(model=model_dir, sampler="vllm", kl_coef=0.01, activation_checkpointing="full")
    policy, ref, lm, _ = train.load_learner(cfg, model_dir, device, rank, world)
    assert lm is None  # the vLLM path keeps no full model anywhere
    # Peak so far: the load itself (the full-tensor gathers below are the test's, not training's).
    peak = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - before])
    got = {"policy": dict(train.full_named_parameters(policy)), "ref": dict(train.full_named_parameters(ref))}
    bufs = {"policy": dict(policy.lm.named_buffers()), "ref": dict(ref.lm.named_buffers())}
    peaks = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(peaks, peak)
    if rank == 0:
        plain, _ = models.load_model(model_dir)  # fp32, as HF loads it
        want = dict(plain.named_parameters())
        want_bufs = dict(plain.named_buffers())
        report = {"peak_mib": [float(p) for p in peaks],
                  "model_mib": sum(p.numel() * p.element_size() for p in want.values()) / 2**20,
                  "checkpointing": all(layer.gradient_checkpointing for layer in policy.lm.model.layers)}
        for k in ("policy", "ref"):
            report[f"{k}_names"] = sorted(got[k]) == sorted(want)
            report[f"{k}_exact"] = all(torch.equal(got[k][n].float(), want[n]) for n in want)
            report[f"{k}_buffers"] = all(torch.equal(bufs[k][n], want_bufs[n]) for n in want_bufs)
            report[f"{k}_dtype"] = str(next(iter(got[k].values())).dtype)
        Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
    leave_torchrun()  # both ranks leave together, with nothing of FSDP's left alive (see train.shutdown)
