"""The verdict, this project's extension of DiDPO: each function version's posterior of being correct (A^V).

    python -m pytest tests/test_didpo.py -q -k "verdict or behave"   # by-hand posteriors
    python bench/credit.py --only 'variants WF'                      # what it buys, and where it breaks

`attach` adds A^V to didpo.py's credit where AdvConfig.verdict (--no-verdict turns it and the behaviour probe off).

A version u = (f, f's normalized lines, docstrings dropped) of a top-level def/class f ("" for the glue) in
the workspace after a turn; a piece (i, t, u) = the lines turn t of i wrote in u, or re-emitted unchanged
where i wrote u before (Turn.emitted: no diff, but the same version's credit). u is correct (prior 1/2),
an escaped bug ((1/2)·π_f) or a caught bug ((1/2)(1 − π_f)); π_f = how often f's bugs pass f's public tests.
Evidence (Turn.public after each turn, and R):
  u fails the public tests that name f  ⇒ u is caught (a clause {u, f's callees} if those fail theirs too)
  u passes them                         ⇒ u is not caught
  no test names a workspace function    ⇒ a pass for each version the turn wrote, a failure a caught clause
  R_i ≥ 1 / R_i < 1                     ⇒ every version of i's final workspace is correct / a clause
  behaviour (Turn.behaviour)            ⇒ two versions of f (calling no other function) that differ on an input
                                          both were probed with (not one where verified ones differ): APART = 0.2
Glue that every final workspace holds leaves every clause: else it would exonerate the bugs beside it.
π̂_f = (b + B_f)/(2b + B_f + F_f), the mean of π_f ~ Beta(b, b), b = ESCAPE = 3, with B_f, F_f the escaped and
caught bugs expected among f's tested versions. Mean field over the three states, q = P(correct), k = P(caught):
  log P(correct)            += Σ_{c ∋ u} log(1 − Π_{w∈c, w≠u} q_w) + Σ_{w apart from u} log(1 − (1 − APART)·q_w)
  log P(correct or escaped) += Σ_{caught c ∋ u} log(1 − Π_{w∈c, w≠u} (1 − k_w))
A^V_{i,t,u} = s·(q_u − q̄) − A^E_i on the piece's tokens; q̄ = the mean over trajectories of their judged pieces'
mean q (R_j if none), s = one unit of Y in A^E's units (didpo.return_unit) in every group, also where no return
differs (s was the spread ratio, 0 there unless an invalid turn set returns apart; bench/credit_live.py --runs,
equal returns: a response's correct function above its wrong one 0.87 at s = 1, 0.78 before). u is
judged where a test, R ≥ 1 or the probe bears on u itself, or a loss that only u explains (the rest of that final
workspace verified or passing); else A^V = −max(A^E_i, 0): no push up (at q = 1/2, code that never ran, cut off or
a syntax error, drew credit and a run learned to write long unclosed blocks: bench/learn.py, seed 3), and a loss
blames it as GRPO does (at no push, −A^E_i, a loser's repeated lines went unblamed until a run wrote them to the cap).
Where R is win/loss, A^D is first centred inside each piece: the verdict has read R. Why: most versions are
written once in a group and form no anchor; the clauses exonerate a loser's correct version that a winner also
wrote and convict the one left to blame (behaviour: +0.12-0.17).
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

import credit as credit_mod
from protocol.behaviour import differ
from protocol.functions import callees, code_of, passes, tests_naming, written_functions

if TYPE_CHECKING:
    from env import Trajectory

PRIOR = 0.5   # P(a function version is correct) before any evidence
ESCAPE = 3.0  # b of π_f ~ Beta(b, b), how often a bug of f passes f's public tests (module docstring)
APART = 0.2   # P(two versions of f both correct | they behave differently somewhere near its tests)


class Caught(frozenset):
    """A clause whose evidence is a failed test: some version in it is a bug that the test catches."""


class Version(NamedTuple):  # u: a top-level def/class f ("" for the glue) and its normalized lines
    function: str
    lines: tuple[str, ...]


class Piece(NamedTuple):  # the lines turn t wrote in u (or re-emitted unchanged): their char ranges
    turn: int
    version: Version
    ranges: list


class Posterior(NamedTuple):
    """What the verdict read from one group."""
    pieces: list[list[Piece]]       # per trajectory, the pieces its turns wrote
    q: dict[Version, float]         # version -> P(correct)
    escape: dict[str, float]        # function -> π̂_f, how often its bugs pass its public tests
    apart: dict[Version, list]      # version -> the versions it behaves apart from
    judged: frozenset               # the versions some evidence bears on (A^V reads q̄ for the rest: no push)


def posterior(group: list[Trajectory], solve=None) -> Posterior:
    """The verdict on every version a group wrote (module docstring). solve(clauses, known, passed, apart=...)
    -> (q of the free versions, π̂): mean_field, or another solver (bench/credit.py's exact ones)."""
    pieces: list[list[Piece]] = [[] for _ in group]
    bugs, good, clauses, passed, finals, acts, judged = set(), set(), [], set(), [], {}, set()
    for i, tr in enumerate(group):
        for t, turn in enumerate(tr.turns):
            wrote, body, echoed = written_functions(turn)
            index = tests_naming(turn.public) if turn.public else None
            program = index is not None and not any(index.get(f) for f in body if f)  # the tests judge the program
            whole = (broke := program and not all(turn.public.values())) or t + 1 == len(tr.turns)  # broke: it failed
            version = {f: _version(body, f) for f in (body if whole else wrote)}  # what it wrote; all S_t for a clause
            for f, io in (turn.behaviour or {}).items():  # a version's behaviour, where it calls no other function
                if (u := version.get(f)) and not callees(body, f) and (had := acts.get(u, io)) is not None:
                    acts[u] = None if differ(had, io) else had | io  # None: it acts differently in another S_t
            for f, rs in wrote.items():
                pieces[i].append(Piece(t, version[f], rs))
                if index and index.get(f):  # tests that name f judge it; a failure a callee may share is a clause
                    if (ok := passes(turn.public, f, calls := functools.partial(callees, body, f), index)) is None:
                        clauses.append({version[f]} | {version.get(g) or _version(body, g) for g in calls()})
                        judged.update(clauses[-1])
                    else:
                        (passed if ok else bugs).add(version[f])
            mine = {u for _, u, _ in pieces[i]}
            for f, rs in echoed.items():  # re-emitted whole, unchanged: credited
                if f and f not in wrote and (u := version.get(f) or _version(body, f)) in mine:  # as it was written
                    pieces[i].append(Piece(t, u, rs))
            if broke:  # some version of S_t is a bug (that one, if it is alone there)
                (bugs.update if len(body) == 1 else clauses.append)(Caught(version.values()))
                judged.update(version.values())
            elif program:  # a pass for each version it wrote
                passed.update(version[f] for f in wrote)
        if tr.turns:
            finals.append(set(version.values()))
            (good.update if tr.reward >= 1.0 else clauses.append)(finals[-1])
    shared = {u for u in set.intersection(*finals) if not u.function} if finals and min(map(len, finals)) > 1 else set()
    known = {u: 0.0 for u in bugs - good} | dict.fromkeys(good, 1.0)  # the reward overrides the public tests
    passed -= known.keys()
    live = [type(c)(c - shared) for c in clauses if c - shared and not any(known.get(u) == 0.0 for u in c)]
    by_f = defaultdict(list)
    for u, io in acts.items():
        if io:
            by_f[u.function].append((u, io))
    outside = {f: {k for u, io in us if u in good for w, jo in us if w in good for k, v in io.items()
                   if jo.get(k, v) != v} for f, us in by_f.items()}  # inputs where verified versions differ
    apart = {u: ws for f, us in by_f.items() for u, io in us
             if (ws := [w for w, jo in us if w != u and differ(io, jo, outside[f])])}
    free, escape = (solve or mean_field)(live, known, passed, apart=apart)[:2]
    q = defaultdict(lambda: PRIOR, known | free)
    judged |= known.keys() | passed | apart.keys()  # a test, R >= 1 or the probe bears on u itself; or a failure
    judged |= {u for c in live for u in c if c - {u} <= good | passed}  # that only u can explain (the rest passed)
    return Posterior(pieces, {u: q[u] for ps in pieces for _, u, _ in ps}, escape, apart, frozenset(judged))


def _version(body: dict[str, list[str]], f: str) -> Version:
    return Version(f, code_of(tuple(body[f])))


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


def attach(group: list[Trajectory], diff: list[np.ndarray], episode: list[float], s: float) -> Posterior:
    """Add A^V to each trajectory's per-token diff term, in place (module docstring: Credit); s: one unit of return
    in A^E's units (didpo.return_unit), also where no return differs: the verdict reads the tests, not the spread."""
    post = posterior(group)
    pieces, q = post.pieces, post.q
    qbar = math.fsum(np.mean(qs) if (qs := [q[u] for _, u, _ in ps if u in post.judged]) else min(tr.reward, 1.0)
                     for ps, tr in zip(pieces, group)) / max(len(group), 1)  # mean over trajectories
    win_loss = not any(0.0 < tr.reward < 1.0 for tr in group)  # the verdict read R; A^D's mean would repeat it
    for i, tr in enumerate(group):
        if not pieces[i]:
            continue
        av, own = credit_mod.project(tr, [(t, rs, s * (q[u] - qbar) - episode[i] if u in post.judged
                                           else -max(episode[i], 0.0), n) for n, (t, u, rs) in enumerate(pieces[i])])
        sel = own >= 0                                                         # [T] tokens inside a piece
        if win_loss:  # A^D centred inside each piece
            sums = np.bincount(own[sel], weights=diff[i][sel], minlength=len(pieces[i]))
            counts = np.maximum(np.bincount(own[sel], minlength=len(pieces[i])), 1)
            diff[i][sel] -= (sums / counts)[own[sel]]
        diff[i] += av
    return post
