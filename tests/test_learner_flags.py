"""The learner's speed flags keep the textbook gradients: --activation-checkpointing off | full | selective,
--compile; and a preset's batch shape fits any world size (train.fit_world).

    python -m pytest tests/test_learner_flags.py -q

Each variant is built by train.build_learner (FSDP2, world 1, gloo) from the same tiny model and takes one
policy-gradient loss through train.Policy; its parameter gradients must equal the plain pass's. What each
mode recomputes is counted at the dispatcher: matmuls run during backward. Speed is a GPU question
(bench/gpu_learner.py --checkpointing / --compile); here only parity and what runs.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode


class CountMatmuls(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += func in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)
        return func(*args, **(kwargs or {}))


def _pass(tiny_model, **flags) -> tuple[dict[str, torch.Tensor], int]:
    """Gradients of one loss through the variant's learner, and the matmuls its backward ran."""
    import train

    _, world, device = train.init()
    base = dict(dtype="float32", logprob_chunk=16, share_prefix=False, activation_checkpointing="off")
    cfg = train.Config(**(base | flags))
    policy = train.build_learner(copy.deepcopy(tiny_model), cfg, device, world)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, tiny_model.config.vocab_size, (3, 24), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 17:] = 0  # a right-padded row
    weights = torch.randn(3, 23, generator=gen)
    lp, ent = policy(ids, mask, entropy=True)
    loss = -(lp * weights).sum() - 0.01 * ent.sum()
    with CountMatmuls() as count:
        loss.backward()
    grads = {n: p.grad.full_tensor().clone() for n, p in policy.named_parameters()}
    return grads, count.n


@pytest.mark.parametrize("flags", [dict(activation_checkpointing="full"), dict(activation_checkpointing="selective"),
                                   dict(compile=True), dict(activation_checkpointing="selective", compile=True)],
                         ids=["full", "selective", "compile", "selective+compile"])
def test_learner_flags_keep_the_gradients(flags, tiny_model):
    import torch._dynamo

    want, plain_mm = _pass(tiny_model)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    got, mm = _pass(tiny_model, **flags)
    assert got.keys() == want.keys()
    for name, g in want.items():
        torch.testing.assert_close(got[name], g, rtol=1e-4, atol=1e-6, msg=name)
    frames = torch._dynamo.utils.counters["frames"]["ok"]
    assert (frames > 0) == flags.get("compile", False)  # dynamo captured the decoder layers, or never ran
    if flags == dict(activation_checkpointing="full"):
        assert mm > plain_mm  # backward reran each layer's projections
    if flags == dict(activation_checkpointing="selective"):
        assert mm == plain_mm  # it kept their outputs: nothing heavy recomputed


def test_checkpointing_modes_reach_every_layer(tiny_model):
    import train

    _, world, device = train.init()
    for mode, on in (("off", False), ("full", True), ("selective", True)):
        policy = train.build_learner(copy.deepcopy(tiny_model), train.Config(activation_checkpointing=mode), device,
                                     world)
        assert [layer.gradient_checkpointing for layer in policy.lm.model.layers] == [on] * 2, mode
    with pytest.raises(ValueError, match="--activation_checkpointing|--activation-checkpointing"):
        train.resolve_config({"activation_checkpointing": "some"})


@pytest.mark.parametrize("world", range(1, 9))
def test_the_7b_preset_keeps_every_rank_generating(world):
    """A rank's share of task groups is range(rank, tasks_per_step, world): equal and non-empty on every rank."""
    import train

    cfg = train.fit_world(train.resolve_config({"model": "Qwen2.5-7B-Coder"}), world)
    shares = [len(range(rank, cfg.tasks_per_step, world)) for rank in range(world)]
    assert min(shares) == max(shares) >= 1
    assert train.PRESETS["Qwen2.5-7B-Coder"]["tasks_per_step"] % 8 == 0  # one node: nothing to round
    assert train.fit_world(train.Config(tasks_per_step=6), world).tasks_per_step == -(-6 // world) * world


def test_a_gpu_without_flash_attn_says_so_once(capsys, monkeypatch):
    import transformers.utils

    from trainer import hardware

    monkeypatch.setattr(transformers.utils, "is_flash_attn_2_available", lambda: False)
    hardware._say_once.cache_clear()
    assert [hardware.attention(torch.device("cuda")) for _ in range(3)] == ["sdpa"] * 3
    assert hardware.attention(torch.device("cpu")) == "sdpa"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("flash-attn is not installed: the learner uses sdpa"), err


def test_release_update_memory_drops_gradients_and_returns_the_freed_heap():
    """keep_freed_memory keeps an update's freed blocks in the heap; release_update_memory hands them back once
    the update is done (and drops the gradients), so a run's resident memory does not grow step after step."""
    import os

    from trainer import hardware

    def rss() -> int:
        return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    hardware.keep_freed_memory()
    p = torch.nn.Parameter(torch.zeros(8))
    p.grad = torch.ones(8)
    blocks = [torch.ones(4 << 20) for _ in range(40)]  # 40 x 16 MiB: heap blocks, under the 32 MiB mmap threshold
    del blocks
    kept = rss()
    hardware.release_update_memory(torch.optim.SGD([p], lr=0.1))
    assert p.grad is None
    assert rss() < kept - 300 * 2**20, (kept, rss())
