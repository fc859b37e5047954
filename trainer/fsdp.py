"""FSDP2 for the learner: shard a model built on the meta device, fill the shards from rank 0.

    python -m pytest -q tests/test_train_node.py -k load   # 2 ranks: every shard equals a plain load, exactly

`shard(policy, lm, device, world, bf16, frozen)`: fully_shard each decoder layer of `policy.lm`, then the policy
(the forward's root, so embedding / lm_head are gathered for it); allocate only this rank's shards and receive
rank 0's tensors (`lm`, None on other ranks) one at a time by broadcast, keeping its slice. Non-persistent
buffers (rotary inv_freq) are broadcast separately. bf16: bf16 compute, fp32 master weights and gradient
reduction. frozen (the KL reference): no gradients, offloaded to host memory on GPU, resharded after each
forward. Gradients are summed across ranks, not averaged: the loss is already divided by the global token count.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def shard(policy: torch.nn.Module, lm: torch.nn.Module | None, device: torch.device, world: int, bf16: bool,
          frozen: bool) -> torch.nn.Module:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

    rank, shell = dist.get_rank(), policy.lm
    offload = frozen and device.type == "cuda"
    mesh = init_device_mesh(device.type, (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 \
        else MixedPrecisionPolicy()
    kw = dict(mesh=mesh, mp_policy=mp, offload_policy=CPUOffloadPolicy() if offload else OffloadPolicy())
    for layer in shell.model.layers:
        fully_shard(layer, **kw)
    # The root keeps embedding / lm_head gathered after forward for the backward; the reference has none: free them.
    fully_shard(policy, **kw, **({"reshard_after_forward": True} if frozen else {}))
    # Collectives run on the training device (NCCL: CUDA only): shards are loaded there, then an offload moves them.
    policy.to_empty(device=device)
    full = lm.state_dict() if rank == 0 else {}
    set_model_state_dict(shell, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    src = dict(lm.named_buffers()) if rank == 0 else {}
    for name, buf in shell.named_buffers():
        if rank == 0:
            buf.copy_(src[name])
        dist.broadcast(buf, 0)
    del full, src
    if offload:
        policy.to("cpu")
        for module in shell.modules():  # buffers stay on the GPU: they are inputs of the forward
            for name, buf in module.named_buffers(recurse=False):
                module._buffers[name] = buf.to(device)
    if frozen:
        return policy.requires_grad_(False).eval()
    # Sum gradients across ranks with plain SUM collectives (gloo lacks NCCL's PREMUL_SUM). Each setter
    # acts on one FSDP module's own parameter group, so every one is set.
    for module in [*shell.model.layers, policy]:
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)
    return policy
