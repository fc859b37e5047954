"""DiDPO (Diff-in-Diff Policy Optimization) and its baselines GRPO and GiGPO: token advantages for one task group.

    python bench/credit.py          # which estimator puts credit on the right tokens
    python bench/advantage.py       # how long it takes

The paper's estimator (AdvConfig.paper(), `train.py --paper`). One task group τ_1..τ_G; trajectory i has
turns t = 1..T_i, step rewards r_{i,t} = Turn.reward and final reward R_i = Trajectory.reward:

    G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k}, with R_i added to the last turn's r       step returns
    Y_i     = R_i + Σ_t r_{i,t}  (episode_return="total"; "final": R_i)
    A^E_i   = Y_i − mean_j Y_j   (÷ std_j Y_j under mean_std_norm)              episode advantage (GRPO)
    anchors = diffs.find_anchors(group): each turn's diff cut into sub-diffs (hunk > block > line),
              clustered across the group (same text, then near-duplicates at similarity ≥ η),
              ranked by GS = φ(L̄)·ψ(n), picked greedily, at most one per changed line
    A^D_m   = G_{i,t} − mean_{m'∈g} G_{m'}    for member m = (i, t) of anchor g  diff-level advantage
    Â_{i,k} = A^E_i + λ·A^D_{m(k)}            for response token k inside member m(k)'s chars (A^D 0 outside);
              0 wherever loss_mask is 0

The default, AdvConfig(), is DiDPO with this project's refinements, each a flag that departs from the paper
(AdvConfig.paper() turns every one off):
  1. baseline="ridge" (paper: "group_mean"): A^D_g = β_g of the ridge regression of G_{i,1} on the anchors i holds.
     The paper's mean subtracts the writers' own return: a correct sub-diff in a loser scores below its bug
     (DESIGN.md §3 pitfall b). "contrast": β_g with g alone.
  2. survive=True: under ridge, i holds g only if every line its member added is in i's final workspace.
  3. verdict=True: A^V, each function version's posterior of being correct (verdict.py): messy groups 0.58 → 0.91-1.00.
  4. eta=1.0 (paper: 0.8): at 0.8 a lone bug joins its correct twin's cluster (−0.05 to −0.15 at G = 8, pitfall a).
  5. lift_contrast=True: an anchor that every trajectory holds (no contrast) ranks below any with contrast.
  6. hunk_exclusion=True: a hunk whose statement blocks form groups is no anchor; its blocks are (pitfall a).
  7. docstring_blind=True: sub-diff texts drop docstrings, worded each its own way (0.58 → 0.69 without verdict).
  8. line_scope=True: a line unit is keyed by its top-level statement, never pooled across functions.

GRPO: A^E only. GiGPO: A^E + λ·A^S on each turn's tokens (step_group_credit). Degenerate groups (one
trajectory, equal returns, no diffs, no anchors) give finite zeros. The loss on Â: trainer/ppo.py.
"""

from __future__ import annotations

import gc
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

import credit as credit_mod
import diffs
import verdict

if TYPE_CHECKING:
    from env import Trajectory

ALGOS = ("grpo", "gigpo", "didpo")
BASELINES = ("ridge", "contrast", "group_mean")
COVERAGE = "token_coverage"  # the stats key of the share of response tokens inside an anchor (train reads it)
NORMS = ("mean_norm", "mean_std_norm")


@dataclass
class AdvConfig:
    algo: str = "didpo"              # grpo | gigpo | didpo
    baseline: str = "ridge"          # didpo: ridge (controls for the other anchors) | contrast | group_mean
    ridge: float = 1.0               # α of baseline="ridge", in units of one trajectory's squared indicator
    norm: str = "mean_norm"          # mean_norm: x − mean | mean_std_norm: (x − mean) / std
    episode_return: str = "total"    # A^E on R + Σ r_t ("total") or on R alone ("final")
    gamma: float = 0.95              # discount of step returns G_{i,t}
    lam: float = 1.0                 # Â = A^E + λ·A^D (didpo) or A^E + λ·A^S (gigpo)
    # anchors (diffs.find_anchors)
    eta: float = diffs.ETA           # similarity for attaching stragglers; 1 = off (departure 4)
    s0: float = 8.0                  # size scale of φ(L)
    g0: float = 8.0                  # group-size scale of ψ(n)
    K: int = 64                      # at most this many anchors per task group
    gs_form: str = "saturating"      # saturating | log | linear
    min_group: int = 2               # members a cluster needs to be a group on its own
    min_line_chars: int = 10         # shortest normalized line that is a line-level candidate
    context: int = 3                 # unified-diff context lines (decides what is one hunk)
    line_scope: bool = True          # a line unit is keyed by its top-level statement too (never pools across blocks)
    survive: bool = True             # ridge: a trajectory holds an anchor only if its member survives to the end
    lift_contrast: bool = True       # anchors with contrast rank above every anchor that all trajectories hold
    hunk_exclusion: bool = True      # a hunk whose blocks form groups is not an anchor
    docstring_blind: bool = True     # sub-diff texts drop docstrings
    verdict: bool = True             # didpo: A^V, each function version's posterior of being correct (verdict.py)
    eps: float = 1e-6                # added to std in mean_std_norm

    def __post_init__(self):
        for name, allowed in (("algo", ALGOS), ("baseline", BASELINES), ("norm", NORMS),
                              ("episode_return", ("total", "final")), ("gs_form", diffs.GS_FORMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"AdvConfig.{name}={getattr(self, name)!r}; use one of {', '.join(allowed)}")
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"AdvConfig gamma={self.gamma}, eta={self.eta}; both must lie in [0, 1]")
        if self.ridge <= 0:
            raise ValueError(f"AdvConfig.ridge={self.ridge}; the ridge penalty α must be > 0")
        if self.s0 <= 0 or self.g0 <= 0 or self.K < 1 or self.min_group < 2 or self.context < 0:
            raise ValueError("AdvConfig needs s0 > 0, g0 > 0, K >= 1, min_group >= 2, context >= 0")

    @classmethod
    def paper(cls, **overrides) -> AdvConfig:
        """The paper's DiDPO: group_mean baseline, η = 0.8, none of the departures (module docstring)."""
        off = dict(baseline="group_mean", eta=0.8, survive=False, verdict=False, lift_contrast=False,
                   hunk_exclusion=False, docstring_blind=False, line_scope=False)
        return cls(**{**off, **overrides})


@dataclass
class Credit:
    """Everything compute_advantages computed for one group (tests, explain and diagnostics read it)."""
    episode: list[float]                     # A^E_i
    returns: list[list[float]]               # G_{i,t}
    diff: list[np.ndarray]                   # per token, A^D (+ A^V) for didpo, A^S for gigpo, before λ
    owner: list[np.ndarray]                  # per token, the anchor id whose member covers it (-1 none)
    token_adv: list[torch.Tensor] = field(default_factory=list)  # Â per token, one [T] tensor per trajectory
    anchors: list[diffs.Anchor] = field(default_factory=list)
    anchor_values: dict[int, list[float]] = field(default_factory=dict)  # anchor id -> A^D of its kept members
    holders: dict[int, list[int]] = field(default_factory=dict)  # anchor id -> trajectories i with x_{i,g} = 1
    contrast: dict[int, float] = field(default_factory=dict)     # anchor id -> the DiD contrast on the holders
    posterior: verdict.Posterior | None = None  # the verdict's (A^V), where AdvConfig.verdict
    stats: dict = field(default_factory=dict)


def step_returns(traj: Trajectory, gamma: float) -> list[float]:
    """G_t = Σ_{k≥t} γ^{k-t} r_k with the final reward added to the last turn's r."""
    r = [t.reward + (traj.reward if k + 1 == len(traj.turns) else 0.0) for k, t in enumerate(traj.turns)]
    out, acc = [0.0] * len(r), 0.0
    for t in range(len(r) - 1, -1, -1):
        acc = r[t] + gamma * acc
        out[t] = acc
    return out


def center(xs: list[float], norm: str, eps: float = 1e-6) -> list[float]:
    """x − mean (÷ population std for mean_std_norm); exactly 0 when all x are equal (or there is one)."""
    if not xs or max(xs) == min(xs):
        return [0.0] * len(xs)
    m = math.fsum(xs) / len(xs)
    if norm == "mean_std_norm":
        sd = math.sqrt(math.fsum((x - m) ** 2 for x in xs) / len(xs))
        return [(x - m) / (sd + eps) for x in xs]
    return [x - m for x in xs]


def episode_returns(group: list[Trajectory], cfg: AdvConfig) -> list[float]:
    if cfg.episode_return == "final":
        return [tr.reward for tr in group]
    return [tr.reward + math.fsum(t.reward for t in tr.turns) for tr in group]


def has_signal(group: list[Trajectory], cfg: AdvConfig) -> bool:
    """DAPO dynamic sampling keeps a group only if its episode returns differ."""
    ys = episode_returns(group, cfg)
    return len(ys) > 1 and max(ys) != min(ys)


def return_unit(ys: list[float], norm: str, eps: float = 1e-6) -> float:
    """One unit of return in center()'s units: 1 under mean_norm; 1/std under mean_std_norm, std floored at a lone
    win's among G (√(G−1)/G): returns that barely differ (one invalid turn's 0.01) gave A^V ±150, not a win's unit."""
    if norm != "mean_std_norm" or not ys:
        return 1.0
    return 1.0 / (max(float(np.std(ys)), math.sqrt(len(ys) - 1) / len(ys)) + eps)


def _contrast(values: list[float], inside: set[int], norm: str, eps: float) -> float:
    """The holders' mean of the centred values minus the others' (baseline="contrast"); 0 without contrast."""
    if len(inside) == len(values) or not inside:
        return 0.0
    c = center(values, norm, eps)
    return (math.fsum(c[i] for i in inside) / len(inside)
            - math.fsum(v for i, v in enumerate(c) if i not in inside) / (len(values) - len(inside)))


def ridge_values(values: list[float], holders: list[set[int]], alpha: float, norm: str = "mean_norm",
                 eps: float = 1e-6) -> np.ndarray:
    """β = argmin Σ_i (y_i − b − Σ_g β_g·x_{i,g})² + α·Σ_g β_g², b unpenalized, x_{i,g} = 1 iff i ∈ holders[g].
    In the dual, β = X_cᵀ (X_c X_cᵀ + α I)⁻¹ y_c (X, y centered): G × G whatever the number of anchors. β_g = 0
    where every trajectory (or none) holds g, like the contrast. mean_std_norm divides y by its std first."""
    y = np.asarray(values, dtype=np.float64)                                   # [G]
    beta = np.zeros(len(holders))
    if len(y) < 2 or not holders or y.max() == y.min():
        return beta
    X = np.array([[i in h for h in holders] for i in range(len(y))], dtype=np.float64)  # [G, K] x_{i,g}
    y = y - y.mean()
    if norm == "mean_std_norm":
        y = y / (y.std() + eps)
    Xc = X - X.mean(0)                                                         # [G, K]
    w = np.linalg.solve(Xc @ Xc.T + alpha * np.eye(len(y)), y)                 # [G]
    return Xc.T @ w                                                            # [K]


def compute_credit(group: list[Trajectory], cfg: AdvConfig, stats: dict | None = None) -> Credit:
    """A^E, the diff-level (or step-level) terms and Â for one task group; see the module docstring."""
    # For speed only: a batch holds millions of small tuples (token offsets), and the cyclic GC would walk them
    # all on every collection that the many small allocations here trigger (cost growing faster than the group).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        cr = _compute_credit(group, cfg)
        cr.stats["time_s"] = time.perf_counter() - t0
        if stats is not None:
            stats.update(cr.stats)
        return cr
    finally:
        if was_enabled:
            gc.enable()


def _compute_credit(group: list[Trajectory], cfg: AdvConfig) -> Credit:
    """The paper's steps in order, then this project's verdict on top."""
    ys = episode_returns(group, cfg)
    cr = Credit(episode=center(ys, cfg.norm, cfg.eps),                                  # A^E
                returns=[step_returns(tr, cfg.gamma) for tr in group],                  # G_{i,t}
                diff=[np.zeros(len(tr.token_ids), dtype=np.float32) for tr in group],   # [T] per trajectory
                owner=[np.full(len(tr.token_ids), -1, dtype=np.int64) for tr in group])  # [T] per trajectory
    if cfg.algo == "gigpo":
        step_group_credit(group, cfg, cr)                                             # A^S
    elif cfg.algo == "didpo":
        anchor_credit(group, cfg, cr)                                                 # A^D
        if cfg.verdict:                                                               # A^V (verdict.py)
            cr.posterior = verdict.attach(group, cr.diff, cr.episode, return_unit(ys, cfg.norm, cfg.eps))
    token_advantages(group, cfg, cr)                                                  # Â
    return cr


def step_group_credit(group: list[Trajectory], cfg: AdvConfig, cr: Credit) -> None:
    """GiGPO: A^S_{i,t} = G_{i,t} − mean over the turns that start from the same workspace, on turn t's tokens."""
    steps: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for i, tr in enumerate(group):
        for t, turn in enumerate(tr.turns):
            steps[tuple(sorted(turn.files_before.items()))].append((i, t))
    for members in steps.values():
        for (i, t), a in zip(members, center([cr.returns[i][t] for i, t in members], cfg.norm, cfg.eps)):
            lo, hi = group[i].turns[t].span
            cr.diff[i][lo:hi] = a
    sizes = [len(m) for m in steps.values()]
    cr.stats = {"step_groups": len(sizes), "step_group_size_mean": sum(sizes) / len(sizes) if sizes else 0.0,
                "singleton_rate": sum(s == 1 for s in sizes) / len(sizes) if sizes else 0.0}


def anchor_credit(group: list[Trajectory], cfg: AdvConfig, cr: Credit) -> None:
    """DiDPO: the anchors, each member's A^D (the baseline), projected onto the tokens that wrote it."""
    res = diffs.find_anchors(group, eta=cfg.eta, s0=cfg.s0, g0=cfg.g0, K=cfg.K, min_group=cfg.min_group,
                             min_line_chars=cfg.min_line_chars, form=cfg.gs_form, context=cfg.context,
                             line_scope=cfg.line_scope, lift_contrast=cfg.lift_contrast,
                             hunk_exclusion=cfg.hunk_exclusion, docstring_blind=cfg.docstring_blind)
    cr.anchors, cr.stats = res.anchors, res.stats()
    first = [r[0] if r else tr.reward for r, tr in zip(cr.returns, group)]             # G_{i,1}
    holders = diffs.holders(group, res.anchors, cfg.survive)                           # x_{i,g} = 1 iff i in it
    beta = ridge_values(first, holders, cfg.ridge, cfg.norm, cfg.eps) if cfg.baseline == "ridge" else None
    regions: list[list] = [[] for _ in group]
    for a in res.anchors:  # best-ranked first, so project() lets the best member claim a shared token
        keys = [(m.traj, m.turn) for m in a.members]
        if cfg.baseline == "group_mean":  # the paper's: G_{i,t} − the mean over the anchor's members
            values = dict(zip(keys, center([cr.returns[i][t] for i, t in keys], cfg.norm, cfg.eps)))
        elif cfg.baseline == "ridge":
            values = dict.fromkeys(keys, float(beta[a.id]))
        else:
            values = dict.fromkeys(keys, _contrast(first, a.trajs, cfg.norm, cfg.eps))
        for (i, t), ranges in a.kept.items():
            regions[i].append((t, ranges, values[(i, t)], a.id))
        cr.anchor_values[a.id] = [values[k] for k in a.kept]
        cr.holders[a.id] = sorted(holders[a.id])
        cr.contrast[a.id] = _contrast(first, holders[a.id], cfg.norm, cfg.eps)
    for i, tr in enumerate(group):
        cr.diff[i], cr.owner[i] = credit_mod.project(tr, regions[i])


def token_advantages(group: list[Trajectory], cfg: AdvConfig, cr: Credit) -> None:
    """Â = A^E + λ·(the diff-level terms), 0 off the loss mask; and the share of tokens an anchor covers."""
    covered, n_resp = 0, 0
    for i, tr in enumerate(group):
        mask = _mask(tr.loss_mask)                                                        # [T]
        cr.token_adv.append(torch.from_numpy(mask * (cr.episode[i] + cfg.lam * cr.diff[i])))  # [T]
        n_resp += int(mask.sum())
        covered += int(((cr.owner[i] >= 0) & (mask > 0)).sum())
    cr.stats[COVERAGE] = covered / n_resp if n_resp else 0.0


def _mask(loss_mask: list[int]) -> np.ndarray:
    # bytes() of a 0/1 list is ~4x faster than np.asarray on it: this is most of GRPO's cost.
    try:
        return np.frombuffer(bytes(loss_mask), dtype=np.uint8).astype(np.float32)
    except ValueError:
        return np.asarray(loss_mask, dtype=np.float32)


def compute_advantages(group: list[Trajectory], cfg: AdvConfig, stats: dict | None = None) -> list[torch.Tensor]:
    """Â per token for one task group: one float tensor per trajectory, len(token_ids), 0 where loss_mask is 0."""
    return compute_credit(group, cfg, stats).token_adv
