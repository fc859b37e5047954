"""Checkpoints and the final export: a killed run resumes exactly, the export loads anywhere.

    python train.py --out runs/x --save-every 1 --resume auto   # continue the latest complete checkpoint

`save(run, policy, opt, step, cursor, keep_last)`: torch.distributed.checkpoint (DCP) of the sharded model
and optimizer, plus each rank's RNG states, the step and the task cursor, written to
OUT/checkpoints/.step_N.tmp and renamed to step_N once every rank is done (a COMPLETE file marks it):
a kill mid-write leaves the previous checkpoint intact; the last `keep_last` are kept.
`load(path, policy, opt) -> (step, cursor)` restores all of it, so a resumed run repeats the uninterrupted
one bit for bit. `find_resume(run, resume)`: "" none, "auto" the latest complete one, else that directory.
`export(policy, tokenizer, out, dtype)`: a Hugging Face directory for transformers, vLLM and eval.py.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
from pathlib import Path

import torch
import torch.distributed as dist

from trainer.log import print0


def _checkpoints(run: Path) -> list[Path]:
    done = [p for p in run.glob("checkpoints/step_*") if (p / "COMPLETE").exists()]
    return sorted(done, key=lambda p: int(p.name.split("_")[1]))


def save(run: Path, policy, opt, step: int, cursor: int, keep_last: int) -> Path:
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
        for old in _checkpoints(run)[: -keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


def load(path: Path, policy, opt) -> tuple[int, int]:
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


def export(policy, tokenizer, out: Path, dtype: torch.dtype = torch.float32) -> None:
    """A Hugging Face directory (safetensors, config, tokenizer, chat template) for transformers,
    vLLM and `eval.py --model`, in `dtype` with the config's dtype saying so: bf16 for a bf16 run
    (half the bytes of the fp32 master weights, and vLLM's dtype="auto" would serve an fp32 config
    in fp16, where Qwen2.5 is fragile)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(policy.lm, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if dist.get_rank() == 0:
        sd = {k: v.to(dtype) if v.is_floating_point() else v for k, v in sd.items()}
        tmp = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.lm.save_pretrained(tmp, state_dict=sd)
        # save_pretrained records the module's parameter dtype (the fp32 master weights): say what the file holds.
        config = copy.deepcopy(policy.lm.config)
        config.torch_dtype = config.dtype = dtype
        config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    dist.barrier()
