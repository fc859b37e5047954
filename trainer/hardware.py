"""What this machine offers the learner and the sampler: fast bf16 matmuls on the CPU, an attention kernel,
how the process keeps the memory it frees, packed weights for CPU decoding.

    python -c "import trainer.hardware as h; print(h.cpu_bf16_is_fast())"

`cpu_bf16_is_fast()` (decided once per run: `settle_cpu_bf16`) and `attention(device)` become what Config's dtype,
pack and share_prefix mean here (`cpu_autocast`, `compute_bf16`, `packs`, `shares`). `keep_freed_memory()`: glibc
keeps what the CPU learner frees for its next micro-batch; `release_update_memory(opt)` returns it after the update.
`prepack_linears(model)`: oneDNN-packed weights for a CPU sampler. `checkpoint_layers`: activation checkpointing.
"""

from __future__ import annotations

import ctypes
import functools
import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

_fast: bool | None = None  # the run's decision, once made


def settle_cpu_bf16(run: Path, resume: bool) -> None:
    """One decision per run: rank 0 probes (resuming: reads the run's), every rank takes its answer. A timing
    could flip between ranks, or across a resume, and exact resume needs the same numerics."""
    global _fast
    saved = run / "cpu_bf16.json"
    fast = [None]
    if dist.get_rank() == 0:
        fast[0] = json.loads(saved.read_text())["fast"] if resume and saved.exists() else _probe()
        saved.write_text(json.dumps({"fast": fast[0]}))
    dist.broadcast_object_list(fast, src=0)
    _fast = fast[0]


def cpu_bf16_is_fast() -> bool:
    global _fast
    if _fast is None:
        _fast = _probe()
    return _fast


def _probe() -> bool:
    """Whether this CPU multiplies bf16 matrices clearly faster than fp32 (AMX: a warm bf16 matmul takes
    0.1-0.3x the time); elsewhere oneDNN emulates bf16. Both kernels are warmed and the timings alternate:
    timed one after the other in a fresh process, the ratio read 0.53-0.55, and under load crossed 0.6."""
    a = torch.randn(768, 768)
    b = a.bfloat16()
    for _ in range(5):  # oneDNN picks and JIT-compiles each kernel on its first calls
        a @ a, b @ b
    f32, b16 = [], []
    for _ in range(10):
        t = time.perf_counter()
        b @ b
        b16.append(time.perf_counter() - t)
        t = time.perf_counter()
        a @ a
        f32.append(time.perf_counter() - t)
    return min(b16) < 0.6 * min(f32)


def attention(device: torch.device) -> str:
    """flash_attention_2 where flash-attn is installed (requirements-gpu.txt), else torch's sdpa; a GPU without
    flash-attn says so once."""
    from transformers.utils import is_flash_attn_2_available

    if device.type == "cuda" and is_flash_attn_2_available():
        return "flash_attention_2"
    if device.type == "cuda":
        _say_once("flash-attn is not installed: the learner uses sdpa and --pack auto leaves packing off "
                  "(optional: pip install flash-attn --no-build-isolation)")
    return "sdpa"


@functools.cache
def _say_once(line: str) -> None:
    if not dist.is_initialized() or dist.get_rank() == 0:
        print(line, file=sys.stderr)


# Config's dtype, pack and share_prefix on this machine (cfg: train.Config).
def cpu_autocast(cfg, device: torch.device) -> bool:
    return device.type == "cpu" and cfg.dtype == "auto" and cpu_bf16_is_fast()


def compute_bf16(cfg, device: torch.device) -> bool:
    return cfg.dtype == "bfloat16" or (cfg.dtype == "auto" and device.type == "cuda")


def packs(cfg, device: torch.device) -> bool:
    return cfg.pack == "on" or (cfg.pack == "auto" and attention(device) == "flash_attention_2")


def shares(cfg, device: torch.device) -> bool:
    return cfg.share_prefix and not packs(cfg, device) and attention(device) == "sdpa"


def keep_freed_memory() -> None:
    """Let glibc's malloc keep freed blocks up to 32 MB in the process instead of giving them back to the kernel:
    else each forward after a backward takes fresh pages the kernel must zero (half of a CPU update's time).
    Larger blocks are still mapped per use, so Config.logprob_chunk keeps each chunk's logits under 32 MB."""
    if (libc := _glibc()) is not None:
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: fixed at glibc's maximum (setting it ends the dynamic one)
        libc.mallopt(-1, 2**31 - 1)  # M_TRIM_THRESHOLD: never trim the heap top


@functools.cache
def _glibc():
    """The C library where it is glibc (mallopt, malloc_trim), else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - both exist, or this is not glibc
        return libc
    except (OSError, AttributeError):
        return None


def release_update_memory(opt: torch.optim.Optimizer) -> None:
    """After an update: drop its gradients (nothing keeps them through checkpointing and the rollout) and give
    the heap's free pages back to the kernel (glibc's malloc_trim; keep_freed_memory keeps them only within an
    update). Without the trim a CPU run's resident memory grew by about 0.6 GB a step; with it, it stays flat."""
    opt.zero_grad(set_to_none=True)
    trim_heap()


def trim_heap() -> None:
    """Give the heap's free pages to the kernel (malloc_trim): a rollout's freed logits would sit under the update."""
    if (libc := _glibc()) is not None:
        libc.malloc_trim(0)


class _PrepackedLinear(torch.nn.Linear):
    """nn.Linear whose inference forward on CPU fp32 runs oneDNN on a copy of the weight packed for it (the
    packing torch's inductor emits for frozen CPU linears; decoding's few-row products run 3-4x faster).
    The pack is redone when the weight changed (its version counter: load_weights' copy_, an optimizer
    step); with grad enabled, or for other dtypes and devices, this is nn.Linear."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if torch.is_grad_enabled() or w.device.type != "cpu" or w.dtype != torch.float32 or x.dtype != w.dtype:
            return super().forward(x)
        if getattr(self, "packed_for", None) != (w._version, w.data_ptr()):
            try:
                self.packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), 16)
            except (RuntimeError, AttributeError):  # a build without this oneDNN kernel: a plain nn.Linear
                self.__class__ = torch.nn.Linear
                return torch.nn.functional.linear(x, w, self.bias)
            self.packed_for = (w._version, w.data_ptr())
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def unpack(self) -> None:
        """Free the packed copy (HFSampler.sleep); the next inference forward packs the weight again."""
        self.packed = self.packed_for = None


def prepack_linears(model: torch.nn.Module) -> torch.nn.Module:
    """Make every plain nn.Linear of `model` a _PrepackedLinear (same parameters and state_dict) where torch has
    oneDNN. For a sampler's own model (train.make_sampler, eval): each pack is a second copy of its weight."""
    if torch.backends.mkldnn.is_available():
        for m in model.modules():
            if type(m) is torch.nn.Linear:
                m.__class__ = _PrepackedLinear
    return model


# Selective activation checkpointing keeps these ops' outputs and recomputes the rest of the layer (norms,
# rotary, activations, residual adds) in backward: torchtitan's op-level policy, without its every-other-mm.
_KEPT = {getattr(torch.ops.aten, name).default for name in (
    "mm", "addmm", "bmm", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu")
    if hasattr(torch.ops.aten, name)}


def _keep_matmuls(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy

    return CheckpointPolicy.MUST_SAVE if op in _KEPT else CheckpointPolicy.PREFER_RECOMPUTE


def checkpoint_layers(model: torch.nn.Module, mode: str) -> None:
    """transformers' activation checkpointing of each decoder layer. full: backward recomputes the whole layer
    (about a third more compute); selective: it keeps the matmul and attention outputs, recomputing the rest."""
    if mode == "off":
        return
    kwargs: dict = {"use_reentrant": False}
    if mode == "selective":
        from torch.utils.checkpoint import create_selective_checkpoint_contexts

        kwargs["context_fn"] = functools.partial(create_selective_checkpoint_contexts, _keep_matmuls)
    # activation_checkpointing_enable() exists only in recent transformers (vLLM pins its own).
    if (enable := getattr(model, "activation_checkpointing_enable", None)) is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
