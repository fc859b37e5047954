"""Run one `train.learn` step on fixed trajectories; write the updated parameters.

    python tests/dist_learn.py OUT.pt MICRO [TOKENS] [pack]                     # one process
    torchrun --nproc_per_node 2 tests/dist_learn.py OUT.pt MICRO [TOKENS] [pack]  # two gloo processes
    torchrun --nproc_per_node 3 tests/dist_learn.py OUT.pt MICRO uneven  # rollouts 5 / 1 / 0 per rank

MICRO sequences per micro-batch, or with TOKENS > 0 micro-batches by token budget; `pack` runs
each micro-batch padding-free (Config.pack on). Used by test_train.py and test_train_node.py, in
fp32: the update must not depend on world size, micro-batch size, token budget or packing beyond
rounding, nor on which rank rolled out which trajectories (train.spread hands each rank its share first).
"""

import sys
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]
from conftest import build_tiny_model, leave_torchrun  # noqa: E402

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


def main():
    out, micro, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    uneven, pack = "uneven" in extra, "pack" in extra
    tokens = int(extra[0]) if extra and extra[0].isdigit() else 0
    rank, world, device = train.init()
    cfg = train.Config(micro_batch_size=micro, micro_batch_tokens=tokens, dtype="float32", lr=1.0, entropy_coef=0.01,
                       logprob_chunk=5, pack="on" if pack else "off")
    lm = build_tiny_model(600)
    policy = train.build_learner(lm, cfg, device, world)
    # SGD, so the update is exactly -lr * grad: Adam's per-element normalization would turn
    # fp32 noise in near-zero gradients into full-size steps and hide what is being compared.
    opt = torch.optim.SGD(policy.parameters(), lr=cfg.lr)
    trajs, advs = fixed_batch(600)
    if uneven:  # rollout shares as the ranks might have them: one rank all but one, the last idle
        mine = {0: slice(0, 5), 1: slice(5, 6)}.get(rank, slice(0, 0))
        m = train.learn(policy, opt, *train.spread(trajs[mine], advs[mine], rank, world), cfg, device)
    else:
        m = train.learn(policy, opt, trajs[rank::world], advs[rank::world], cfg, device)
    params = {n: t.clone() for n, t in train.full_named_parameters(policy)}
    if rank == 0:
        torch.save({"params": params, "metrics": m}, out)


if __name__ == "__main__":
    # In a function, so the FSDP module and its collectives' state are freed before the group is
    # destroyed, and the group before interpreter teardown (gloo aborts a process whose group is
    # still alive while Python clears its modules: "terminate called without an active exception").
    main()
    leave_torchrun()
