"""Advantage estimators (GRPO, GiGPO, DiDPO) and the PPO-clip policy loss; pure functions of records and tensors.

    python bench/credit.py          # which estimator puts credit on the right tokens
    python bench/advantage.py       # how long it takes

For one task group τ_1..τ_G (trajectory i has turns t = 1..T_i, step rewards
r_{i,t} = Turn.reward and final reward R_i = Trajectory.reward):

    G_{i,t} = Σ_{k≥t} γ^{k-t} r_{i,k}, with R_i added to the last turn's r          step returns
    A^E_i   = Y_i − mean_j Y_j   (mean_std_norm: ÷ std_j Y_j)                        episode advantage (GRPO)
              Y_i = R_i + Σ_t r_{i,t} (episode_return="total", the default; it is R_i when there are no
              step rewards, and keeps invalid-action penalties in GRPO) or Y_i = R_i ("final")
    A^D_m   for a member m = (i, t) of an anchor g (diffs.find_anchors: shared sub-diffs, disjoint inside a turn):
              baseline="ridge" (default):  A^D_g = β_g of the ridge regression of the episode on the anchors
                  β = argmin_β Σ_i (y_i − b − Σ_g β_g·x_{i,g})² + α·Σ_g β_g²,   y_i = G_{i,1}, b unpenalized,
                  x_{i,g} = 1 iff trajectory i wrote g (a kept member) and, with survive=True, every line that
                  member added is still in i's final workspace (a bug fixed in a later turn is not held).
                  Solved in the dual, β = X_cᵀ (X_c X_cᵀ + α I)⁻¹ y_c on column-centered X, y (G × G, any K).
                  Why: y_i depends on every piece i holds. The contrast below credits a piece with the pieces
                  its writers happened to hold too (a correct version written only by losers scores like a bug);
                  the regression holds the other anchors fixed. β_g = 0 when every trajectory (or none) holds g.
              baseline="contrast":  A^D_g = mean_{i∈I_g} G_{i,1} − mean_{j∉I_g} G_{j,1}
                  I_g = the trajectories that wrote g; the single-anchor difference in differences (it is β_g
                  of the regression above with g's indicator alone and α → 0). 0 when g is in every
                  trajectory. Its own value is not subtracted away (DESIGN §3 pitfall b).
              baseline="group_mean" (the reference estimator):  A^D_m = G_{i,t} − mean_{m'∈g} G_{m'}
              mean_std_norm divides by the std of the same returns (contrast, ridge: over the task group).
    A^V     verdict=True (default): credit of a function version by the posterior that it is correct.
              A version u = (f, the normalized lines of f, docstrings dropped) of a top-level def/class f ("" outside
              any) in the workspace after a turn; a piece (i, t, u) = the lines turn t of i wrote in u. Each version
              is correct (prior 1/2), an escaped bug ((1/2)·π_f) or a caught bug ((1/2)(1 − π_f)), π_f how often
              f's bugs get past f's public tests. Evidence (Turn.public after each turn, R):
              u fails f's public tests (those whose code names f) ⇒ u is caught, or a clause {u, f's callees}
              where they fail their own tests too; u passes them ⇒ u is not caught; no test names a function of
              the workspace ⇒ they judge the program: a pass for each version, a failure ⇒ a caught clause (one
              of its versions is caught); R_i ≥ 1 ⇒ every version in i's final workspace is correct; R_i < 1 ⇒
              a clause: one of them is a bug (explained if one is a known bug). Glue (the "" version beside a
              def/class: imports, the entry call) in every final workspace of the group leaves every clause.
              Behaviour (Turn.behaviour, protocol.behaviour): two versions of f that call no other function of the
              workspace and give different outputs on an input both were probed with are apart, and both correct
              has weight APART = 0.2 (implementations of one task agree on valid inputs; a probed input may not
              be valid: one where two verified versions of f differ is outside the task and not compared).
              π̂_f = (b + B_f)/(2b + B_f + F_f), the mean of π_f ~ Beta(b, b) (b = ESCAPE = 3) with B_f, F_f the
              escaped and caught bugs expected among f's versions with a public result. Mean field over the three
              states, iterated: log P(correct) += Σ_{clauses c ∋ u} log(1 − Π_{w∈c, w≠u} q_w) + Σ_{w apart
              from u} log(1 − (1 − APART)·q_w), and log P(correct or escaped) += Σ_{caught c ∋ u} log(1 −
              Π_{w∈c, w≠u} (1 − k_w)); q_w = P(correct), k_w = P(caught).
              A^V_{i,t,u} = s·(q_u − q̄) − A^E_i: the version's posterior against q̄ = mean_j (the mean q of the
              pieces j wrote, or R_j if none), in s = one unit of Y in A^E's units (1 under mean_norm; 0 where
              every Y_j is equal). A^D, centered over each piece's tokens, only redistributes credit inside it,
              except where some 0 < R_i < 1 (partial credit): R's size, read only by the ridge, keeps its mean.
              Why: most versions are written once in a group of 8 and form no anchor, and an anchor's value
              mixes in its writers' other pieces; the clauses exonerate a loser's correct version that a winner
              wrote too, or whose other versions are known bugs, and convict the one left to blame. π_f: a pass
              means more where f's bugs are seen to fail. Apart: a bug that escapes f's test is often seen
              once, and differs from the correct versions near it (at G = 8 +0.12-0.17 accuracy in the three
              cells where the rates alone fell short, bench/credit.py). Glue in every clause would be the one
              cause of every loss and exonerate the bugs beside it (a function all got wrong is still blamed). s, not
              the spread of A^E: AUC +.01-.05 (bench/credit.py). q̄ by trajectory: equal R, equal credit where q
              agrees with R.
    Â_{i,k} = A^E_i + λ·(A^D_{m(k)} + A^V_{i,t,u}) for response token k of turn t: A^D of the anchor member
              m(k) whose char ranges hold k (0 if none), A^V where turn t wrote k's line in version u (0 elsewhere);
              0 wherever loss_mask is 0.

Char ranges become token ranges through Turn.offsets, each sampled token's exact char range (credit.token_offsets);
credit.project gives a token the A^D of the member whose ranges it intersects (best-ranked first, one per token).

gigpo: step groups = turns (i, t) that start from the identical workspace S_{i,t-1};
A^S_{i,t} = G_{i,t} − mean over its step group (same norm); every token of the turn gets A^E + λ·A^S.
grpo:  A^E only.

Degenerate groups are finite zeros: one trajectory, identical returns, no diffs, no anchors. `ridge` with the
verdict is the default: it assigns credit best in bench/credit.py (whose docstring has the measured comparison).

policy_loss, per response token with ratio ρ = exp(logp − old_logp):
    ℓ = max(−Â·ρ, −Â·clip(ρ, 1 − ε_low, 1 + ε_high))        PPO-clip with clip-higher (DAPO)
    ℓ = min(ℓ, −c·Â) where Â < 0                             dual clip (optional)
      + β·(e^d − d − 1), d = ref_logp − logp                 k3 KL to a frozen reference (optional)
      − α·entropy                                            entropy bonus (optional)
aggregated as token-mean: Σ mask·ℓ / (response tokens of the GLOBAL batch, passed by the caller,
so micro-batches and ranks add up to the unsplit loss), or seq-mean-token-mean.
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

import credit as credit_mod
import diffs
from protocol.behaviour import differ
from protocol.functions import callees, code_of, passes, tests_naming, written_functions

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
    eta: float = 1.0                 # similarity for attaching stragglers; 1 = off (measured: η = 0.8 joins
                                     # a lone bug to the correct cluster and loses 0.05-0.15 accuracy at G = 8)
    s0: float = 8.0                  # size scale of φ(L)
    g0: float = 8.0                  # group-size scale of ψ(n)
    K: int = 64                      # at most this many anchors per task group
    gs_form: str = "saturating"      # saturating | log | linear
    min_group: int = 2               # members a cluster needs to be a group on its own
    min_line_chars: int = 10         # shortest normalized line that is a line-level candidate
    context: int = 3                 # unified-diff context lines (decides what is one hunk)
    line_scope: bool = True          # a line unit is keyed by its top-level statement too (never pools across blocks)
    survive: bool = True             # ridge: a trajectory holds an anchor only if its member survives to the end
    verdict: bool = True             # didpo: A^V, each function version's posterior of being correct (Turn.public, R)
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


@dataclass
class Credit:
    """Everything compute_advantages computed for one group (tests, explain and diagnostics read it)."""
    token_adv: list[torch.Tensor]            # Â per token, one [T] float tensor per trajectory
    episode: list[float]                     # A^E_i
    returns: list[list[float]]               # G_{i,t}
    diff: list[np.ndarray]                   # per token, A^D (didpo) or A^S (gigpo) before λ
    owner: list[np.ndarray]                  # per token, the anchor id whose member covers it (-1 none)
    anchors: list[diffs.Anchor] = field(default_factory=list)
    anchor_values: dict[int, list[float]] = field(default_factory=dict)  # anchor id -> A^D of its kept members
    holders: dict[int, list[int]] = field(default_factory=dict)  # anchor id -> trajectories i with x_{i,g} = 1
    contrast: dict[int, float] = field(default_factory=dict)     # anchor id -> the DiD contrast on the holders
    verdicts: dict[tuple[str, tuple], float] = field(default_factory=dict)  # version (f, lines) -> q (A^V)
    escape: dict[str, float] = field(default_factory=dict)  # function -> π̂_f, how often its bugs pass its tests
    apart: dict[tuple, list] = field(default_factory=dict)  # version -> the versions it behaves apart from
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


def _contrast(values: list[float], inside: set[int], norm: str, eps: float) -> float:
    if len(inside) == len(values) or not inside or max(values) == min(values):
        return 0.0
    a = math.fsum(values[i] for i in inside) / len(inside)
    b = math.fsum(v for i, v in enumerate(values) if i not in inside) / (len(values) - len(inside))
    if norm == "mean_std_norm":
        m = math.fsum(values) / len(values)
        sd = math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))
        return (a - b) / (sd + eps)
    return a - b


def _norm_lines(text: str, memo: dict[str, list[str]]) -> list[str]:
    out = memo.get(text)
    if out is None:  # S_t recurs (after of turn t, before of t+1, final): normalize each version once
        out = memo[text] = [diffs.normalize_line(x) for x in diffs.lines_of(text)]
    return out


def _survives(m: diffs.SubDiff, turn, final: dict[str, set[str]], memo: dict[str, list[str]]) -> bool:
    """Every line the member added is still in the final workspace (a later turn did not replace it)."""
    for path, sign, no in m.units:
        if sign == "+":
            lines = _norm_lines(turn.files_after.get(path, ""), memo)
            if no < len(lines) and lines[no] not in final.get(path, ()):
                return False
    return True


def ridge_values(values: list[float], holders: list[set[int]], alpha: float, norm: str = "mean_norm",
                 eps: float = 1e-6) -> np.ndarray:
    """β of the ridge regression y_i ≈ b + Σ_g β_g·x_{i,g} (b unpenalized), x_{i,g} = 1 iff i ∈ holders[g].

    Solved in the dual, β = X_cᵀ (X_c X_cᵀ + α I)⁻¹ y_c with X_c, y_c centered over the group: a G × G
    system whatever the number of anchors. An anchor that every trajectory (or none) holds has a zero
    centered column, so β = 0 there, like the contrast. mean_std_norm divides y by its std first.
    """
    y = np.asarray(values, dtype=np.float64)                                   # [G]
    beta = np.zeros(len(holders))
    if len(y) < 2 or not holders or y.max() == y.min():
        return beta
    X = np.zeros((len(y), len(holders)))                                       # [G, K] anchor indicators
    for g, h in enumerate(holders):
        X[list(h), g] = 1.0
    y = y - y.mean()
    if norm == "mean_std_norm":
        y = y / (y.std() + eps)
    Xc = X - X.mean(0)                                                         # [G, K]
    w = np.linalg.solve(Xc @ Xc.T + alpha * np.eye(len(y)), y)                 # [G]
    return Xc.T @ w                                                            # [K]


PRIOR = 0.5   # P(a function version is correct) before any evidence
ESCAPE = 3.0  # b of π_f ~ Beta(b, b), how often a bug of f passes f's public tests (module docstring)
APART = 0.2   # P(two versions of f both correct | they behave differently somewhere near its tests)


class Caught(frozenset):
    """A clause whose evidence is a failed test: some version in it is a bug that the test catches."""


def verdict(group: list[Trajectory], solve=None) -> tuple[list[list], dict[tuple, float], dict[str, float], dict]:
    """(per trajectory the pieces (turn, version, char ranges) its turns wrote, version -> q, function -> π̂_f,
    version -> the versions it behaves apart from); module docstring. solve(clauses, known, passed, apart=...) ->
    (q of the free versions, π̂): mean_field, or another solver."""
    pieces: list[list] = [[] for _ in group]
    bugs, good, clauses, passed, finals, acts = set(), set(), [], set(), [], {}
    for i, tr in enumerate(group):
        for t, turn in enumerate(tr.turns):
            wrote, body = written_functions(turn)
            index = tests_naming(turn.public) if turn.public else None
            program = index is not None and not any(index.get(f) for f in body if f)  # the tests judge the program
            whole = (broke := program and not all(turn.public.values())) or t + 1 == len(tr.turns)  # broke: it failed
            version = {f: _version(body, f) for f in (body if whole else wrote)}  # what it wrote; all S_t for a clause
            for f, io in (turn.behaviour or {}).items():  # a version's behaviour, where it calls no other function
                if (u := version.get(f)) and not callees(body, f) and (had := acts.get(u, io)) is not None:
                    acts[u] = None if differ(had, io) else had | io  # None: it acts differently in another S_t
            for f, rs in wrote.items():
                pieces[i].append((t, version[f], rs))
                if index and index.get(f):  # tests that name f judge it; a failure a callee may share is a clause
                    if (ok := passes(turn.public, f, calls := functools.partial(callees, body, f), index)) is None:
                        clauses.append({version[f]} | {version.get(g) or _version(body, g) for g in calls()})
                    else:
                        (passed if ok else bugs).add(version[f])
            if broke:  # some version of S_t is a bug (that one, if it is alone there)
                (bugs.update if len(body) == 1 else clauses.append)(Caught(version.values()))
            elif program:  # a pass for each version it wrote
                passed.update(version[f] for f in wrote)
        if tr.turns:
            finals.append(set(version.values()))
            (good.update if tr.reward >= 1.0 else clauses.append)(finals[-1])
    shared = {u for u in set.intersection(*finals) if not u[0]} if finals and min(map(len, finals)) > 1 else set()
    known = {u: 0.0 for u in bugs - good} | dict.fromkeys(good, 1.0)  # the reward overrides the public tests
    passed -= known.keys()
    live = [type(c)(c - shared) for c in clauses if c - shared and not any(known.get(u) == 0.0 for u in c)]
    by_f = defaultdict(list)
    for u, io in acts.items():
        if io:
            by_f[u[0]].append((u, io))
    outside = {f: {k for u, io in us if u in good for w, jo in us if w in good for k, v in io.items()
                   if jo.get(k, v) != v} for f, us in by_f.items()}  # inputs where verified versions differ
    apart = {u: ws for f, us in by_f.items() for u, io in us
             if (ws := [w for w, jo in us if w != u and differ(io, jo, outside[f])])}
    free, escape = (solve or mean_field)(live, known, passed, apart=apart)[:2]
    q = defaultdict(lambda: PRIOR, known | free)
    return pieces, {u: q[u] for ps in pieces for _, u, _ in ps}, escape, apart


def _version(body: dict[str, list[str]], f: str) -> tuple[str, tuple[str, ...]]:
    return f, code_of(tuple(body[f]))  # (f, its normalized code lines)


def escape_rates(q: dict, caught: dict, tested: list, failed: Counter) -> dict[str, float]:
    """π̂_f of every function with a tested free version (module docstring): B_f = Σ P(escaped) = Σ 1 − q_u − k_u
    over them, F_f = Σ k_u = P(caught) over them plus f's versions that failed their tests (known bugs)."""
    e, k = defaultdict(list), defaultdict(list, {f: [float(n)] for f, n in failed.items()})  # f -> B_f's, F_f's terms
    for u in tested:  # fsum below: exact in any order
        e[u[0]].append(max(1.0 - q[u] - caught.get(u, 0.0), 0.0))
        k[u[0]].append(caught.get(u, 0.0))
    return {f: (ESCAPE + math.fsum(b)) / (2 * ESCAPE + math.fsum(b) + math.fsum(k[f])) for f, b in e.items()}


def mean_field(clauses: list[set], known: dict, passed: set = frozenset(), iters: int = 10,
               rates: tuple[dict, dict] = ({}, {}), apart: dict | None = None) -> tuple[dict, dict, dict]:
    """(q of each free version in an unexplained clause or in `passed`, π̂_f, P(caught) where a caught clause holds a
    version no pass rules out) by mean-field updates over three states, correct, escaped bug, caught bug (module
    docstring). rates = (ρ, π): each function's P(correct) and π_f in (0, 1), learned elsewhere, for 1/2 and π̂_f."""
    q = defaultdict(lambda: PRIOR, known)
    k: dict = {}                                 # P(caught) of each version that a caught clause holds, not passed
    of = defaultdict(list)                       # free version -> (caught?, members) of the clauses that hold it
    for c in clauses:
        members, caught = sorted(c), isinstance(c, Caught)  # sorted: the updates' order (so q) is the same anywhere
        for u in (w for w in members if w not in known):
            of[u].append((caught, members))
            if caught and u not in passed:
                k[u] = (1 - PRIOR) / 2           # the prior's P(caught)
    of.update({u: of.get(u, []) for u in sorted(passed)})  # a pass is evidence outside every clause too
    apart = apart or {}
    of.update({u: of.get(u, []) for u in sorted(apart) if u not in known})  # so is behaving apart from another
    tested, failed = sorted(passed | k.keys()), Counter(u[0] for u, v in known.items() if v == 0.0)
    for _ in range(iters):
        pi = escape_rates(q, k, tested, failed) | rates[1]
        for u, cs in of.items():  # log P of its states: correct, escaped (a bug, if untested), caught
            hit = sum(math.log(max(1.0 - math.prod(1.0 - k.get(w, 0.0) for w in c if w != u), 1e-9))
                      for x, c in cs if x)
            ls = [math.log(r := rates[0].get(u[0], PRIOR)) + hit + sum(math.log(max(1.0 - math.prod(
                      q[w] for w in c if w != u), 1e-9)) for x, c in cs if not x)
                  + sum(math.log(1.0 - (1.0 - APART) * q[w]) for w in apart.get(u, ())),
                  math.log((1 - r) * (pi[u[0]] if u in passed or u in k else 1.0)) + hit,
                  math.log((1 - r) * (1 - pi[u[0]])) if u in k else -math.inf]
            z = [math.exp(x - max(ls)) for x in ls]
            q[u] = z[0] / sum(z)
            if u in k:
                k[u] = z[2] / sum(z)
    return {u: q[u] for u in of}, escape_rates(q, k, tested, failed) | rates[1], k


def compute_credit(group: list[Trajectory], cfg: AdvConfig, stats: dict | None = None) -> Credit:
    """A^E, the diff-level (or step-level) terms and Â for one task group; see the module docstring."""
    # For speed only: a batch holds millions of small tuples (token offsets), and the cyclic GC would walk them
    # all on every collection that the many small allocations here trigger (cost growing faster than the group).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _compute_credit(group, cfg, stats)
    finally:
        if was_enabled:
            gc.enable()


def _compute_credit(group: list[Trajectory], cfg: AdvConfig, stats: dict | None) -> Credit:
    t0 = time.perf_counter()
    episode = center(ys := episode_returns(group, cfg), cfg.norm, cfg.eps)
    returns = [step_returns(tr, cfg.gamma) for tr in group]
    diff = [np.zeros(len(tr.token_ids), dtype=np.float32) for tr in group]      # [T] per trajectory
    owner = [np.full(len(tr.token_ids), -1, dtype=np.int64) for tr in group]   # [T] per trajectory
    info, verdicts, escape, apart = {}, {}, {}, {}
    anchors: list[diffs.Anchor] = []
    anchor_values: dict[int, list[float]] = {}
    held, dd = {}, {}  # anchor id -> its holders (sorted), and the DiD contrast on them

    if cfg.algo == "gigpo":
        steps: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
        for i, tr in enumerate(group):
            for t, turn in enumerate(tr.turns):
                steps[tuple(sorted(turn.files_before.items()))].append((i, t))
        for members in steps.values():
            for (i, t), a in zip(members, center([returns[i][t] for i, t in members], cfg.norm, cfg.eps)):
                lo, hi = group[i].turns[t].span
                diff[i][lo:hi] = a
        sizes = [len(m) for m in steps.values()]
        info = {"step_groups": len(sizes), "step_group_size_mean": sum(sizes) / len(sizes) if sizes else 0.0,
                "singleton_rate": sum(s == 1 for s in sizes) / len(sizes) if sizes else 0.0}

    elif cfg.algo == "didpo":
        res = diffs.find_anchors(group, eta=cfg.eta, s0=cfg.s0, g0=cfg.g0, K=cfg.K, min_group=cfg.min_group,
                                 min_line_chars=cfg.min_line_chars, form=cfg.gs_form, context=cfg.context,
                                 line_scope=cfg.line_scope)
        anchors = res.anchors
        info = res.stats()
        first = [r[0] if r else tr.reward for r, tr in zip(returns, group)]  # G_{i,1}
        memo: dict[str, list[str]] = {}
        final = [{p: set(_norm_lines(x, memo)) for p, x in tr.turns[-1].files_after.items()} if tr.turns and cfg.survive
                 else {} for tr in group]                                    # normalized lines of the final files
        holders = [{m.traj for m in a.members if (m.traj, m.turn) in a.kept and (
                    not cfg.survive or m.turn + 1 == len(group[m.traj].turns)
                    or _survives(m, group[m.traj].turns[m.turn], final[m.traj], memo))}
                   for a in anchors]                                         # x_{i,g} = 1 iff i in holders[g]
        if cfg.baseline == "ridge":
            beta = ridge_values(first, holders, cfg.ridge, cfg.norm, cfg.eps)
        regions: list[list] = [[] for _ in group]
        for a in anchors:  # best-ranked first, so project() lets the best member claim a shared token
            if cfg.baseline == "ridge":
                values = {(m.traj, m.turn): float(beta[a.id]) for m in a.members}
            elif cfg.baseline == "contrast":
                v = _contrast(first, a.trajs, cfg.norm, cfg.eps)
                values = {(m.traj, m.turn): v for m in a.members}
            else:
                keys = [(m.traj, m.turn) for m in a.members]
                values = dict(zip(keys, center([returns[i][t] for i, t in keys], cfg.norm, cfg.eps)))
            for (i, t), ranges in a.kept.items():
                regions[i].append((t, ranges, values[(i, t)], a.id))
            anchor_values[a.id] = [values[k] for k in a.kept]
            held[a.id] = sorted(holders[a.id])
            dd[a.id] = _contrast(first, holders[a.id], cfg.norm, cfg.eps)
        pieces, verdicts, escape, apart = verdict(group) if cfg.verdict else ([[] for _ in group], {}, {}, {})
        s = (max(episode) - min(episode)) / (max(ys) - min(ys)) if group and max(ys) > min(ys) else 0.0  # A^E per Y
        qbar = math.fsum(np.mean([verdicts[u] for _, u, _ in ps]) if ps else min(tr.reward, 1.0)
                         for ps, tr in zip(pieces, group)) / max(len(group), 1)  # mean over trajectories
        win_loss = not any(0.0 < r.reward < 1.0 for r in group)  # the verdict read R; A^D's mean would repeat it
        for i, tr in enumerate(group):
            diff[i], owner[i] = credit_mod.project(tr, regions[i])
            if pieces[i]:  # A^D centered inside each piece where R is win/loss, then A^V of the piece's version on top
                av, own = credit_mod.project(tr, [(t, rs, s * (verdicts[u] - qbar) - episode[i], n)
                                                  for n, (t, u, rs) in enumerate(pieces[i])])
                sel = own >= 0
                if win_loss:
                    sums = np.bincount(own[sel], weights=diff[i][sel], minlength=len(pieces[i]))
                    diff[i][sel] -= (sums / np.maximum(np.bincount(own[sel], minlength=len(pieces[i])), 1))[own[sel]]
                diff[i] += av

    token_adv, covered, n_resp = [], 0, 0
    for i, tr in enumerate(group):
        mask = _mask(tr.loss_mask)                                               # [T]
        token_adv.append(torch.from_numpy(mask * (episode[i] + cfg.lam * diff[i])))  # [T], 0 off the mask
        n_resp += int(mask.sum())
        covered += int(((owner[i] >= 0) & (mask > 0)).sum())
    info.update({COVERAGE: covered / n_resp if n_resp else 0.0, "time_s": time.perf_counter() - t0})
    if stats is not None:
        stats.update(info)
    return Credit(token_adv, episode, returns, diff, owner, anchors, anchor_values, held, dd, verdicts, escape, apart,
                  info)


def _mask(loss_mask: list[int]) -> np.ndarray:
    # bytes() of a 0/1 list is ~4x faster than np.asarray on it: this is most of GRPO's cost.
    try:
        return np.frombuffer(bytes(loss_mask), dtype=np.uint8).astype(np.float32)
    except ValueError:
        return np.asarray(loss_mask, dtype=np.float32)


def compute_advantages(group: list[Trajectory], cfg: AdvConfig, stats: dict | None = None) -> list[torch.Tensor]:
    """Â per token for one task group: one float tensor per trajectory, len(token_ids), 0 where loss_mask is 0."""
    return compute_credit(group, cfg, stats).token_adv


# --- the policy loss ----------------------------------------------------------------


@dataclass
class LossConfig:
    clip_low: float = 0.2              # ε_low: ratio floor 1 − ε_low
    clip_high: float = 0.28            # ε_high: ratio ceiling 1 + ε_high (clip-higher, DAPO)
    dual_clip: float | None = 3.0      # c > 1 bounds the loss of A < 0 tokens at c·|A|; None turns it off
    kl_coef: float = 0.0               # β for the k3 KL to the reference; 0 needs no ref_logp
    entropy_coef: float = 0.0          # α: loss −= α·entropy
    agg: str = "token-mean"            # token-mean (global token count) | seq-mean-token-mean

    def __post_init__(self):
        if self.agg not in ("token-mean", "seq-mean-token-mean"):
            raise ValueError(f"LossConfig.agg={self.agg!r}; use token-mean or seq-mean-token-mean")
        if self.clip_low < 0 or self.clip_high < 0:
            raise ValueError("LossConfig clip_low and clip_high must be >= 0")
        if self.dual_clip is not None and self.dual_clip <= 1:
            raise ValueError(f"LossConfig.dual_clip={self.dual_clip}; pass c > 1 or None")


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                cfg: LossConfig, ref_logp: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
                global_tokens: float | None = None, global_seqs: float | None = None
                ) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO-clip loss on [B, T] tensors and its metrics.

    token-mean divides the masked sum by `global_tokens` (the response tokens of the whole global
    batch; default: this call's), so losses of micro-batches and ranks add up to the unsplit one.
    seq-mean-token-mean averages each sequence's tokens, then divides the sum over sequences by
    `global_seqs` (default: this call's non-empty sequences). Values under mask == 0 never matter.
    """
    if cfg.kl_coef and ref_logp is None:
        raise ValueError("policy_loss: kl_coef > 0 needs ref_logp (log-probs of the reference model)")
    m = mask.bool()                                                              # [B, T]
    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    a = torch.where(m, adv.to(logp.dtype), zero)                                 # [B, T]
    log_ratio = torch.where(m, logp - old_logp, zero)                            # [B, T]
    ratio = torch.exp(log_ratio)                                                 # [B, T]
    clipped = ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    pg1, pg2 = -a * ratio, -a * clipped
    pg = torch.maximum(pg1, pg2)                                                 # [B, T]
    clip_hit = (pg2 > pg1) & m
    dual_hit = torch.zeros_like(m)
    if cfg.dual_clip is not None:
        cap = -a * cfg.dual_clip
        dual_hit = (a < 0) & (pg > cap) & m
        pg = torch.where(a < 0, torch.minimum(pg, cap), pg)
    loss_tok = pg
    kl = None
    if ref_logp is not None:
        d = torch.where(m, ref_logp - logp, zero)                               # log(p_ref / p)
        kl = torch.exp(d) - d - 1.0                                              # k3, >= 0, unbiased
        if cfg.kl_coef:
            loss_tok = loss_tok + cfg.kl_coef * kl
    ent = torch.where(m, entropy, zero) if entropy is not None else None
    if ent is not None and cfg.entropy_coef:
        loss_tok = loss_tok - cfg.entropy_coef * ent
    loss_tok = torch.where(m, loss_tok, zero)
    mf = m.to(logp.dtype)
    n_local = mf.sum()
    if cfg.agg == "token-mean":
        denom = global_tokens if global_tokens is not None else n_local.clamp(min=1.0)
        loss = loss_tok.sum() / denom
    else:
        per_seq = mf.sum(-1)                                                     # [B]
        seq_loss = loss_tok.sum(-1) / per_seq.clamp(min=1.0)                     # [B]
        denom = global_seqs if global_seqs is not None else (per_seq > 0).sum().clamp(min=1)
        loss = seq_loss.sum() / denom

    with torch.no_grad():
        n = max(float(n_local), 1.0)
        r = ratio[m]
        metrics = {
            "loss": float(loss.detach()), "tokens": float(n_local),
            "pg_loss": float(torch.where(m, pg, zero).sum() / n),
            "clip_frac": float(clip_hit.sum() / n), "dual_clip_frac": float(dual_hit.sum() / n),
            "ratio_mean": float(r.mean()) if r.numel() else 1.0,
            "ratio_min": float(r.min()) if r.numel() else 1.0,
            "ratio_max": float(r.max()) if r.numel() else 1.0,
            "approx_kl_old": float(((ratio - 1) - log_ratio)[m].sum() / n),     # k3 of old vs new
            "adv_mean": float(a.sum() / n),
        }
        if kl is not None:
            metrics["kl"] = float(kl[m].sum() / n)
        if ent is not None:
            metrics["entropy"] = float(ent.sum() / n)
    return loss, metrics
