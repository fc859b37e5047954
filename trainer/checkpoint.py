"""Checkpoints and the final export: a killed run resumes exactly, the export loads anywhere.

    python train.py --out runs/x --save-every 1 --resume auto   # continue the latest complete checkpoint

`save(run, policy, opt, step, cursor, keep_last)`: a DCP of the sharded model and optimizer, each rank's RNG, the
step and the task cursor, written to OUT/checkpoints/.step_N.tmp and renamed to step_N (a COMPLETE file marks it)
once every rank is done: a kill mid-write leaves the previous one intact. The last `keep_last` are kept.
Both writers check the free disk first and raise `DiskFull`, naming the sizes and the fix, before writing anything;
a write that fails anyway removes its partial directory. `load(path, policy, opt) -> (step, cursor)` restores all of
it, so a resumed run repeats the uninterrupted one bit for bit. `find_resume(run, resume)`: "" none, "auto" the
latest complete one, else that directory; `resume(run, resume, policy, opt)` loads it and returns where to start.
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


class DiskFull(OSError):
    """Too little free disk for a checkpoint or an export; raised on every rank before anything is written."""


def _nbytes(tree) -> int:
    """Bytes of every tensor in a (nested) state dict, at full size: a DTensor counts its global shape."""
    if isinstance(tree, torch.Tensor):
        return tree.numel() * tree.element_size()
    if isinstance(tree, dict):
        return sum(map(_nbytes, tree.values()))
    return sum(map(_nbytes, tree)) if isinstance(tree, (list, tuple)) else 0


def _agree(error: str | None, kind: type[Exception] = DiskFull) -> None:
    """Rank 0's verdict, raised on every rank alike (a rank that raised alone would leave the others in a barrier)."""
    box = [error]
    dist.broadcast_object_list(box, src=0)
    if box[0]:
        raise kind(box[0])


def _space_error(where: Path, nbytes: int, what: str, fix: str) -> str | None:
    """All ranks of the node write to one disk, so rank 0 asks for the whole size; 5% + 64 MiB margin."""
    free = shutil.disk_usage(where).free
    if free >= nbytes * 1.05 + (64 << 20):
        return None
    return f"{what} needs {nbytes / 1e9:.2f} GB and {where} has {free / 1e9:.2f} GB free; free space there, or {fix}"


def save(run: Path, policy, opt, step: int, cursor: int, keep_last: int) -> Path:
    """DCP of model + optimizer, each rank's RNG and the data cursor, renamed into place once complete."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    rank = dist.get_rank()
    final, tmp = run / "checkpoints" / f"step_{step}", run / "checkpoints" / f".step_{step}.tmp"
    model_sd, optim_sd = get_state_dict(policy, opt)
    error = None
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        error = _space_error(tmp, _nbytes(model_sd) + _nbytes(optim_sd), f"checkpoint step_{step}",
                             "--keep-last 0 (no checkpoints, the export only) or --out on a larger disk")
        if error:
            tmp.rmdir()
    _agree(error)
    try:
        dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(tmp))
        rng = {"python": random.getstate(), "torch": torch.get_rng_state(),
               "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
        torch.save({"rng": rng, "step": step, "cursor": cursor}, tmp / f"extra_rank{rank}.pt")
    except (Exception, dcp.CheckpointException) as e:  # DCP's is a BaseException; a full disk: "unexpected pos"
        shutil.rmtree(tmp, ignore_errors=True)
        free = shutil.disk_usage(run).free / 1e9
        raise RuntimeError(f"checkpoint step_{step} failed while writing ({free:.2f} GB free in {run}); "
                           "its partial directory is removed, earlier checkpoints are intact") from e
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


def resume(run: Path, spec: str, policy, opt) -> tuple[int, int]:
    """(step, task cursor) to start from: (0, 0), or find_resume's checkpoint's, loaded into policy and opt."""
    if ckpt := find_resume(run, spec):
        start, cursor = load(ckpt, policy, opt)
        print0(f"resumed from {ckpt} at step {start}")
        return start, cursor
    return 0, 0


def export(policy, tokenizer, out: Path, dtype: torch.dtype = torch.float32) -> None:
    """A Hugging Face directory (safetensors, config, tokenizer, chat template) for transformers, vLLM and `eval.py
    --model`, in `dtype` with the config saying so: bf16 for a bf16 run (half the bytes of fp32, and vLLM's
    dtype="auto" would serve an fp32 config in fp16, where Qwen2.5 is fragile)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(policy.lm, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    tmp = out.with_name(out.name + ".tmp")
    error = None
    if dist.get_rank() == 0:
        sd = {k: v.to(dtype) if v.is_floating_point() else v for k, v in sd.items()}
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        error = _space_error(tmp.parent, _nbytes(sd), f"the export {out}", "--export DIR on a larger disk")
    _agree(error)
    if dist.get_rank() == 0:
        try:
            policy.lm.save_pretrained(tmp, state_dict=sd)
            # save_pretrained records the module's parameter dtype (the fp32 master weights): say what the file holds.
            config = copy.deepcopy(policy.lm.config)
            config.torch_dtype = config.dtype = dtype
            config.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        except Exception as e:
            shutil.rmtree(tmp, ignore_errors=True)
            error = f"the export to {out} failed while writing ({e}); {out} is as it was"
        else:
            shutil.rmtree(out, ignore_errors=True)
            os.replace(tmp, out)
    _agree(error, RuntimeError)
