"""Run one `train.learn` step on fixed trajectories; write the updated parameters.

    python tests/dist_learn.py OUT.pt MICRO                     # one process
    torchrun --nproc_per_node 2 tests/dist_learn.py OUT.pt MICRO  # two gloo processes

Used by test_train.py: the update must not depend on world size or micro-batch size.
"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]
from conftest import build_tiny_model  # noqa: E402

import train  # noqa: E402
from env import Trajectory  # noqa: E402


def fixed_batch(vocab: int, n: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    trajs, advs = [], []
    for i in range(n):
        T = 12 + 5 * i  # different lengths: padding and per-sequence token counts matter
        ids = torch.randint(3, vocab, (T,), generator=g).tolist()
        mask = [0] * 4 + [1] * (T - 4)
        adv = torch.randn(T, generator=g) * torch.tensor(mask, dtype=torch.float)
        trajs.append(Trajectory(task_id=f"t{i // 3}", token_ids=ids, loss_mask=mask))
        advs.append(adv)
    return trajs, advs


def main(out: str, micro: int, rank: int, world: int, device) -> None:
    cfg = train.Config(micro_batch_size=micro, lr=1.0, entropy_coef=0.01, logprob_chunk=5)
    lm = build_tiny_model(600)
    policy = train.build_learner(lm, cfg, device, world)
    # SGD, so the update is exactly -lr * grad: Adam's per-element normalization would turn
    # fp32 noise in near-zero gradients into full-size steps and hide what is being compared.
    opt = torch.optim.SGD(policy.parameters(), lr=cfg.lr)
    trajs, advs = fixed_batch(600)
    m = train.learn(policy, opt, trajs[rank::world], advs[rank::world], cfg, device)
    params = {n: t.clone() for n, t in train.full_named_parameters(policy)}
    if rank == 0:
        torch.save({"params": params, "metrics": m}, out)


if __name__ == "__main__":
    rank, world, device = train.init()
    try:
        main(sys.argv[1], int(sys.argv[2]), rank, world, device)
        # Tear down only when every rank is done: gloo's barrier first waits for this rank's
        # in-flight async work (FSDP's collectives), then for the peer. Without it a fast rank shut
        # its gloo pairs down and exited while work still held tensors, and the interpreter's
        # finalization then aborted the process ("terminate called without an active exception").
        dist.barrier()
    finally:
        # Also on error, so a failing rank shows its Python traceback instead of a C++ abort.
        dist.destroy_process_group()
