"""A micro-batch's shared prefix runs once: one row holding the prefix, then each sequence's rest.

    python -m pytest -q tests/test_train.py -k prefix   # log-probs and gradients equal the padded batch's

A group's G trajectories share their prompt (467 of ~570 tokens on the CPU demo). `tree_row` lays a right-padded
batch out as

    [ p_0 .. p_{P-1} | rest of row 0 | rest of row 1 | ... ]       one row of N = P + sum(n_b - P) tokens

with each rest's position ids continuing from P and a boolean (N, N) mask under which a token sees the prefix
and the earlier tokens of its own rest: every row's attention is what it was in the padded batch, so log-probs
equal the padded forward's up to float order, and the prefix's gradient is the sum over its rows. `index[b, j]`
is where row b's position j sits. The N^2 mask (`tokens` counts N) needs a kernel that takes any (sdpa, eager).
"""

from __future__ import annotations

import torch


def common_prefix(rows: list[list[int]]) -> int:
    """Length of the longest prefix every row shares."""
    return next((j for j, col in enumerate(zip(*rows)) if len(set(col)) > 1), min(map(len, rows)))


def worth(prefix: int, longest: int) -> bool:
    """Share when the prefix is over half the longest row (the masked row attends slower than padded rows)."""
    return 2 * prefix > longest


def tokens(lengths: list[int], prefix: int) -> int:
    """Tokens the forward computes for sequences of these lengths sharing `prefix` tokens: the tree row's
    where it is `worth` it, else the padded batch's B x T."""
    longest = max(lengths)
    return prefix + sum(n - prefix for n in lengths) if worth(prefix, longest) else len(lengths) * longest


def tree_row(input_ids: torch.Tensor, attention_mask: torch.Tensor, prefix: int):
    """(ids (1, N), position ids (1, N), mask (1, 1, N, N) bool, index (B, T)) of right-padded rows
    whose first `prefix` tokens are equal. index is -1 at padding."""
    B, T = input_ids.shape
    dev = input_ids.device
    real = attention_mask.bool()  # (B, T)
    rest = attention_mask.sum(1) - prefix  # (B,)
    start = prefix + torch.nn.functional.pad(rest.cumsum(0), (1, 0))[:-1]  # (B,) where each rest begins
    j = torch.arange(T, device=dev)  # (T,)
    index = torch.where(j < prefix, j, start[:, None] + j - prefix)  # (B, T)
    index = torch.where(real, index, -1)
    N = prefix + int(rest.sum())
    ids = input_ids.new_zeros(N)
    ids[index[real]] = input_ids[real]  # the prefix is written B times, with the same tokens
    pos = torch.zeros(N, dtype=torch.long, device=dev)
    pos[index[real]] = j.expand(B, T)[real]
    owner = torch.full((N,), -1, device=dev)  # (N,): the row a token's rest belongs to; -1 = the prefix
    mine = real & (j >= prefix)
    owner[index[mine]] = torch.arange(B, device=dev)[:, None].expand(B, T)[mine]
    sees = (owner[None, :] == -1) | (owner[None, :] == owner[:, None])  # (N, N): query row, key column
    mask = torch.ones(N, N, dtype=torch.bool, device=dev).tril() & sees
    return ids[None], pos[None], mask[None, None], index


def shared_length(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> int:
    """Length of the prefix every row of a right-padded batch shares (0 for a single row: nothing to share)."""
    if input_ids.shape[0] < 2:
        return 0
    same = ((input_ids == input_ids[:1]) & attention_mask.bool()).all(0)  # (T,)
    return int(same.cumprod(0).sum())
