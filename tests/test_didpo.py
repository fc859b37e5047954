"""didpo.py: every estimator by hand on small groups, masking, degenerate groups, and the policy loss."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import credit
import didpo
import env
import models
import rollout
import sandbox
import tasks
import verdict
from protocol import chat, functions
from tools import explain
from trainer import ppo

STUBS = "def f(a, b):\n    pass\n\n\ndef g(x):\n    pass\n"
F_OK = "def f(a, b):\n    s = a+b\n    return s\n"
F_BAD = "def f(a, b):\n    s = a-b\n    return s\n"
G_OK = "def g(x):\n    y = x*3\n    return y\n"
G_BAD = "def g(x):\n    y = x*4\n    return y\n"
# normalized lines are shorter than min_line_chars (10): the only sub-diffs are hunks and function blocks


def whole(f: str, g: str, thought: str = "Here it is.") -> str:
    return f"{thought}\n```python\n{f}\n\n{g}```\n"


def sr(search: str, replace: str) -> str:
    return f"Edit.\nsolution.py\n```python\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def sr_f(f: str) -> str:
    return sr("def f(a, b):\n    pass\n", f)


def sr_g(g: str) -> str:
    return sr("def g(x):\n    pass\n", g)


def build(tok, responses: list[str], rewards: list[float], R: float, files=None) -> env.Trajectory:
    """A trajectory as the rollout loop lays it out (prompt, sampled ids + eot, observation ids), by hand rewards."""
    ok = [tasks.Test("assert", "assert True")]
    task = tasks.Task(id="t", prompt="p", files=files or {"solution.py": STUBS}, public_tests=ok, hidden_tests=ok)
    ep = env.Episode(task, env.EnvConfig(max_turns=len(responses)))
    ids = chat.prompt_ids(tok, ep.messages)
    mask = [0] * len(ids)
    eot = chat.eot_id(tok)
    for k, (resp, r) in enumerate(zip(responses, rewards)):
        rid = tok.encode(resp, add_special_tokens=False)
        text, offsets = credit.token_offsets(tok, rid)
        job = ep.act(text)
        ep.observe(None if job is None else [sandbox.Verdict(True, "pass", "")] * len(job.tests))
        turn = ep.turns[-1]
        a = len(ids)
        ids += rid + [eot]
        mask += [1] * (len(rid) + 1)
        turn.span, turn.offsets, turn.reward = (a, len(ids)), offsets + [(len(text), len(text))], r
        turn.public = None  # its one test, `assert True`, faked to pass, is no evidence for the verdict
        if k + 1 < len(responses):
            obs = chat.observation_ids(tok, turn.observation, ended_with_eot=True)
            ids += obs
            mask += [0] * len(obs)
    return env.Trajectory(task_id="t", token_ids=ids, loss_mask=mask, turns=ep.turns, reward=R)


def region(turn: env.Turn, code: str) -> tuple[int, int]:
    """Char range of a function's body (the lines a sub-diff covers) inside a response."""
    body = code.split("\n", 1)[1].rstrip("\n")
    s = turn.response.index(body)
    return s, s + len(body)


def values(tr: env.Trajectory, adv: torch.Tensor, t: int, rng: tuple[int, int]) -> set[float]:
    """Advantages of the tokens of turn t that lie wholly inside rng."""
    turn = tr.turns[t]
    return {round(float(adv[turn.span[0] + k]), 5) for k, (s, e) in enumerate(turn.offsets)
            if rng[0] <= s and e <= rng[1] and e > s}


def outside(tr: env.Trajectory, adv: torch.Tensor, t: int, rngs) -> set[float]:
    turn = tr.turns[t]
    return {round(float(adv[turn.span[0] + k]), 5) for k, (s, e) in enumerate(turn.offsets)
            if all(e <= a or s >= b for a, b in rngs)}


@pytest.fixture(scope="module")
def wf(tiny_tokenizer):
    """Whole-file rewrites of both functions, all four combinations; only (ok, ok) passes."""
    combos = [(F_OK, G_OK), (F_OK, G_BAD), (F_BAD, G_OK), (F_BAD, G_BAD)]
    return [build(tiny_tokenizer, [whole(f, g)], [0.0], float(i == 0)) for i, (f, g) in enumerate(combos)]


@pytest.fixture(scope="module")
def sr3(tiny_tokenizer):
    """Two search/replace turns each: A = f ok, g ok; B = f ok, g bad; C = f bad, g ok."""
    spec = [([sr_f(F_OK), sr_g(G_OK)], [0.5, 0.5], 1.0), ([sr_f(F_OK), sr_g(G_BAD)], [0.5, 0.0], 0.0),
            ([sr_f(F_BAD), sr_g(G_OK)], [0.0, 0.5], 0.0)]
    return [build(tiny_tokenizer, r, rw, R) for r, rw, R in spec]


def _masked_zero(group, advs):
    for tr, a in zip(group, advs):
        assert a.dtype == torch.float32 and a.shape == (len(tr.token_ids),) and torch.isfinite(a).all()
        assert (a[torch.tensor(tr.loss_mask) == 0] == 0).all()


def test_grpo_by_hand(wf):
    advs = didpo.compute_advantages(wf, didpo.AdvConfig(algo="grpo"))
    _masked_zero(wf, advs)
    for tr, a, want in zip(wf, advs, [0.75, -0.25, -0.25, -0.25]):
        on = torch.tensor(tr.loss_mask) == 1
        assert torch.allclose(a[on], torch.full_like(a[on], want))
    sd = math.sqrt(0.1875)
    advs = didpo.compute_advantages(wf, didpo.AdvConfig(algo="grpo", norm="mean_std_norm"))
    assert float(advs[0][wf[0].turns[0].span[0]]) == pytest.approx(0.75 / (sd + 1e-6), rel=1e-6)


def test_ridge_values_by_hand():
    # one anchor held by trajectory 0 of 2, y = (1, 0), α = 1: the primal is β = x_c·y_c / (|x_c|² + α)
    # = (0.5·0.5 + 0.5·0.5) / (0.5 + 1) = 1/3; an anchor held by all (or none) has β = 0
    assert didpo.ridge_values([1.0, 0.0], [{0}], 1.0).tolist() == pytest.approx([1 / 3])
    assert didpo.ridge_values([1.0, 0.0, 0.0], [{0, 1, 2}, set()], 1.0).tolist() == [0.0, 0.0]
    # two anchors, one the complement of the other: β = (b, -b), X_c β = 2b·(.5, -.5), and
    # 2(.5 - b)² + 2b² is least at b = 1/4: the value splits between them, opposite signs
    b = didpo.ridge_values([1.0, 0.0], [{0}, {1}], 1.0)
    assert b.tolist() == pytest.approx([1 / 4, -1 / 4])
    # mean_std_norm: y divided by its std (0.5) first, so β doubles
    assert didpo.ridge_values([1.0, 0.0], [{0}], 1.0, "mean_std_norm", eps=0.0).tolist() == pytest.approx([2 / 3])


def test_didpo_ridge_by_hand(wf):
    stats: dict = {}
    cr = didpo.compute_credit(wf, didpo.AdvConfig(verdict=False), stats)
    _masked_zero(wf, cr.token_adv)
    assert stats[didpo.COVERAGE] == stats["token_coverage"] and 0 < stats[didpo.COVERAGE] < 1
    # R = (1, 0, 0, 0), y_c = (.75, -.25, -.25, -.25); f ok is held by {0, 1}, f bad by {2, 3}, g ok by {0, 2},
    # g bad by {1, 3}. Centered columns ±u, ±v with u = (.5, .5, -.5, -.5), v = (.5, -.5, .5, -.5), orthonormal,
    # X_c X_cᵀ = 2uuᵀ + 2vvᵀ; w = (X_c X_cᵀ + I)⁻¹ y_c puts u·y_c / 3 = (.5)/3 on u, so β(f ok) = u·w = 1/6,
    # β(f bad) = -1/6, and the same for g (v·y_c = .5). The contrast would give ±0.5.
    assert sorted(cr.holders.values()) == [[0, 1], [0, 2], [1, 3], [2, 3]]
    for i, (f, g, ae) in enumerate([(F_OK, G_OK, .75), (F_OK, G_BAD, -.25), (F_BAD, G_OK, -.25), (F_BAD, G_BAD, -.25)]):
        tr, a = wf[i], cr.token_adv[i]
        rf, rg = region(tr.turns[0], f), region(tr.turns[0], g)
        assert values(tr, a, 0, rf) == {round(ae + (1 / 6 if f == F_OK else -1 / 6), 5)}
        assert values(tr, a, 0, rg) == {round(ae + (1 / 6 if g == G_OK else -1 / 6), 5)}
        assert outside(tr, a, 0, [rf, rg]) == {ae}


def test_didpo_verdict_by_hand(wf):
    """The default: trajectory 0 passes, so f ok and g ok are correct (q = 1); trajectory 1's clause {f ok, g bad}
    then convicts g bad, trajectory 2's convicts f bad (q -> 0), and trajectory 3's loss is explained. A^V moves each
    version to s·(q − q̄) = q − 1/2 (s = 1 under mean_norm; q̄ = 1/2, the trajectories' mean q averaged): .5 for a
    correct one, -.5 for a bug, whichever trajectory wrote it; the anchors cover whole versions, so their A^D,
    centered inside each version, is 0. The rest of each response keeps its A^E."""
    cr = didpo.compute_credit(wf, didpo.AdvConfig())
    _masked_zero(wf, cr.token_adv)
    q = {lines[1]: v for (f, lines), v in cr.posterior.q.items()}
    assert q["s = a+b"] == q["y = x*3"] == 1.0 and q["s = a-b"] < 1e-6 and q["y = x*4"] < 1e-6
    for i, (f, g, ae) in enumerate([(F_OK, G_OK, .75), (F_OK, G_BAD, -.25), (F_BAD, G_OK, -.25), (F_BAD, G_BAD, -.25)]):
        tr, a = wf[i], cr.token_adv[i]
        rf, rg = region(tr.turns[0], f), region(tr.turns[0], g)
        assert values(tr, a, 0, rf) == {0.5 if f == F_OK else -0.5}
        assert values(tr, a, 0, rg) == {0.5 if g == G_OK else -0.5}
        assert outside(tr, a, 0, [rf, rg]) == {ae}
    std = didpo.compute_credit(wf, didpo.AdvConfig(norm="mean_std_norm"))  # s: one unit of R is 1/std of A^E
    unit = 1 / (math.sqrt(3 / 16) + 1e-6)
    assert values(wf[1], std.token_adv[1], 0, region(wf[1].turns[0], F_OK)) == {round(0.5 * unit, 5)}
    assert values(wf[1], std.token_adv[1], 0, region(wf[1].turns[0], G_BAD)) == {round(-0.5 * unit, 5)}


def test_equal_outcomes_keep_equal_credit_where_the_verdict_agrees(tiny_tokenizer):
    """One function, R = (1, 0, 0, 0): the winner's f is verified, each loser's f is its workspace's only version
    (convicted), and the last loser wrote no code. q̄ counts each trajectory once, at its R where it wrote nothing:
    (1 + 0 + 0 + 0)/4, so every piece gets its trajectory's A^E (.75, -.25): the verdict moves credit only where it
    disagrees with R, and a wrong f costs no more than writing nothing. (Over pieces, q̄ = 1/3: .67 and -.33.)"""
    stub = {"solution.py": "def f(a, b):\n    pass\n"}
    code = [f"Here.\n```python\n{F_OK}```\n", f"Here.\n```python\n{F_BAD}```\n",
            f"Here.\n```python\n{F_BAD.replace('a-b', 'a*b')}```\n", "I do not know how to do this."]
    group = [build(tiny_tokenizer, [c], [0.0], R, files=stub) for c, R in zip(code, (1.0, 0.0, 0.0, 0.0))]
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    assert cr.episode == pytest.approx([.75, -.25, -.25, -.25])
    for tr, a, ae in zip(group, cr.token_adv, cr.episode):
        assert {round(float(x), 5) for x, m in zip(a, tr.loss_mask) if m} == {round(ae, 5)}


def test_partial_credit_keeps_the_ridge_value_of_a_piece(tiny_tokenizer):
    """With R = share of hidden tests passed, R = (1, .5, .5, 0): the verdict reads only win or loss (the same
    verdicts as above), but R also says the half-right files are better than the all-wrong one, which the ridge
    reads. So A^D keeps its mean over each piece: y_c = (.5, 0, 0, -.5) gives u·y_c = v·y_c = .5 as in
    test_didpo_ridge_by_hand, β = ±1/6 on top of A^V's q − q̄ = ±.5 (s = 1, q̄ = 1/2)."""
    combos = [(F_OK, G_OK), (F_OK, G_BAD), (F_BAD, G_OK), (F_BAD, G_BAD)]
    group = [build(tiny_tokenizer, [whole(f, g)], [0.0], R) for (f, g), R in zip(combos, (1.0, 0.5, 0.5, 0.0))]
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    _masked_zero(group, cr.token_adv)
    for i, ((f, g), ae) in enumerate(zip(combos, (.5, 0.0, 0.0, -.5))):
        tr, a = group[i], cr.token_adv[i]
        rf, rg = region(tr.turns[0], f), region(tr.turns[0], g)
        assert values(tr, a, 0, rf) == {round(.5 + 1 / 6, 5) if f == F_OK else round(-.5 - 1 / 6, 5)}
        assert values(tr, a, 0, rg) == {round(.5 + 1 / 6, 5) if g == G_OK else round(-.5 - 1 / 6, 5)}
        assert outside(tr, a, 0, [rf, rg]) == {ae}


def test_verdict_posterior_by_hand(tiny_tokenizer):
    """Mean field on the clauses: a passing trajectory verifies its versions; a version whose public test fails
    is a bug and explains its trajectory's loss, so the other version there (g has no test) keeps the prior.
    Trajectory 1's clause holds f' = "s = b+a", which passed f's test, and g' = "y = x*4", untested: the odds
    of f' are (1 − q_g')/π̂_f, with π̂_f = (3 + 1 − q_f')/(6 + 1 − q_f' + 1) (one bug of f failed, 1 − q_f'
    expected among those that passed), and those of g' are 1 − q_f'."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert g(2) == 6")])
    f_ok2, g_bad2 = F_OK.replace("s = a+b", "s = b+a"), G_BAD.replace("x*4", "x*5")
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1)
             for f, g in [(F_OK, G_OK), (f_ok2, G_BAD), (F_BAD, g_bad2)]]
    assert [tr.reward for tr in group] == [1.0, 0.0, 0.0]
    pieces, q, escape = verdict.posterior(group)[:3]
    q = {lines[1]: v for (f, lines), v in q.items()}
    assert q["s = a+b"] == q["y = x*3"] == 1.0 and q["s = a-b"] == 0.0   # verified; fails its public test
    assert q["y = x*5"] == verdict.PRIOR                                    # trajectory 2's loss is F_BAD's
    f1, g1 = q["s = b+a"], q["y = x*4"]
    assert g1 == pytest.approx((1 - f1) / (2 - f1), abs=1e-6)
    assert f1 / (1 - f1) == pytest.approx((8 - f1) / ((2 - f1) * (4 - f1)), abs=1e-6)
    assert (f1, g1) == pytest.approx((0.6108, 0.2802), abs=1e-4)  # the pass lifts f' above g', the untested one
    assert escape == {"f": pytest.approx((4 - f1) / (8 - f1))}                # g has no test: no pass, no π̂
    assert [[u[1][1] for _, u, _ in ps] for ps in pieces] == [["s = a+b", "y = x*3"], ["s = b+a", "y = x*4"],
                                                              ["s = a-b", "y = x*5"]]


def test_didpo_contrast_by_hand(wf):
    stats: dict = {}
    advs = didpo.compute_advantages(wf, didpo.AdvConfig(baseline="contrast", verdict=False), stats)
    _masked_zero(wf, advs)
    assert stats["anchors"] == 4 and stats["anchors_block"] == 1.0 and 0 < stats["token_coverage"] < 1
    # A^D(f ok) = mean R over {0, 1} - mean over {2, 3} = 0.5; the twin gets -0.5; the same for g
    for i, (f, g, ae) in enumerate([(F_OK, G_OK, .75), (F_OK, G_BAD, -.25), (F_BAD, G_OK, -.25), (F_BAD, G_BAD, -.25)]):
        tr, a = wf[i], advs[i]
        rf, rg = region(tr.turns[0], f), region(tr.turns[0], g)
        assert values(tr, a, 0, rf) == {round(ae + (0.5 if f == F_OK else -0.5), 5)}
        assert values(tr, a, 0, rg) == {round(ae + (0.5 if g == G_OK else -0.5), 5)}
        assert outside(tr, a, 0, [rf, rg]) == {ae}
    # within trajectory 1, the correct f outranks the buggy g: the credit DiDPO exists for
    t1 = wf[1].turns[0]
    assert min(values(wf[1], advs[1], 0, region(t1, F_OK))) > max(values(wf[1], advs[1], 0, region(t1, G_BAD)))


def test_didpo_group_mean_by_hand_shows_pitfall_b(wf):
    advs = didpo.compute_advantages(wf, didpo.AdvConfig(baseline="group_mean", verdict=False))
    _masked_zero(wf, advs)
    # f ok members (0, 1) have returns (1, 0): A^D = +0.5, -0.5; f bad members (2, 3) returns (0, 0): A^D = 0
    tr, a = wf[1], advs[1]
    assert values(tr, a, 0, region(tr.turns[0], F_OK)) == {-0.75}    # the correct f of a failed trajectory ...
    assert values(tr, a, 0, region(tr.turns[0], G_BAD)) == {-0.25}   # ... ranks below its buggy g
    assert values(wf[0], advs[0], 0, region(wf[0].turns[0], F_OK)) == {1.25}


def test_the_paper_setting_is_the_reference_estimator_by_hand(wf, sr3):
    """AdvConfig.paper(): A^D_m = G_{i,t} − mean over the anchor's members, η = 0.8, and none of the departures;
    Â = A^E + A^D on a member's tokens, A^E elsewhere (didpo's module docstring, the reference's formulas)."""
    cfg = didpo.AdvConfig.paper()
    assert (cfg.baseline, cfg.eta, cfg.verdict, cfg.survive, cfg.lift_contrast, cfg.hunk_exclusion,
            cfg.docstring_blind, cfg.line_scope) == ("group_mean", 0.8, False, False, False, False, False, False)
    advs = didpo.compute_advantages(wf, cfg)
    _masked_zero(wf, advs)
    # R = 1, 0, 0, 0: A^E = .75, -.25, -.25, -.25. f ok is held by 0, 1 (G = 1, 0): A^D = +.5, -.5; f bad by 2, 3
    # (G = 0, 0): A^D = 0. g ok by 0, 2: +.5, -.5; g bad by 1, 3: 0.
    want = [(F_OK, 1.25, G_OK, 1.25), (F_OK, -0.75, G_BAD, -0.25), (F_BAD, -0.25, G_OK, -0.75),
            (F_BAD, -0.25, G_BAD, -0.25)]
    for tr, a, (f, af, g, ag), ae in zip(wf, advs, want, (0.75, -0.25, -0.25, -0.25)):
        rf, rg = region(tr.turns[0], f), region(tr.turns[0], g)
        assert values(tr, a, 0, rf) == {af} and values(tr, a, 0, rg) == {ag}
        assert outside(tr, a, 0, [rf, rg]) == {ae}
    # Two turns, γ = .5: G_{i,t} per member, not G_{i,1}. f ok members A1, B1 (1.25, .5) -> ±.375 on A^E = 1, -.5;
    # g ok members A2, C2 (1.5, .5) -> ±.5 on A^E = 1, -.5.
    advs = didpo.compute_advantages(sr3, didpo.AdvConfig.paper(gamma=0.5))
    for i, t, code, want in [(0, 0, F_OK, 1.375), (1, 0, F_OK, -0.875), (0, 1, G_OK, 1.5), (2, 1, G_OK, -1.0)]:
        assert values(sr3[i], advs[i], t, region(sr3[i].turns[t], code)) == {want}


def test_multi_turn_returns_gigpo_and_didpo_by_hand(sr3):
    G = [didpo.step_returns(tr, 0.5) for tr in sr3]
    assert G == [[1.25, 1.5], [0.5, 0.0], [0.25, 0.5]]
    # episode returns R + Σr = 2, .5, .5 -> A^E = 1, -.5, -.5
    advs = didpo.compute_advantages(sr3, didpo.AdvConfig(algo="gigpo", gamma=0.5))
    _masked_zero(sr3, advs)
    # turn 1: one step group (same start) G = 1.25, .5, .25; turn 2: A and B share the state (f ok), C alone
    want = [[1 + 1.25 - 2 / 3, 1 + 0.75], [-0.5 + 0.5 - 2 / 3, -0.5 - 0.75], [-0.5 + 0.25 - 2 / 3, -0.5]]
    for tr, a, w in zip(sr3, advs, want):
        for t, turn in enumerate(tr.turns):
            assert torch.allclose(a[turn.span[0]:turn.span[1]], torch.tensor(w[t]))
    # didpo contrast on G_{i,1}: f ok in {A, B}: (1.25 + .5)/2 - .25 = .625; g ok in {A, C}: .75 - .5 = .25;
    # the lone twins f bad (C) and g bad (B) stay singletons (joining would make the anchor universal)
    advs = didpo.compute_advantages(sr3, didpo.AdvConfig(baseline="contrast", eta=0.8, gamma=0.5, verdict=False))
    cases = [(0, 0, F_OK, 1.625), (0, 1, G_OK, 1.25), (1, 0, F_OK, 0.125), (1, 1, G_BAD, -0.5),
             (2, 0, F_BAD, -0.5), (2, 1, G_OK, -0.25)]
    for i, t, code, want in cases:
        assert values(sr3[i], advs[i], t, region(sr3[i].turns[t], code)) == {want}
    advs = didpo.compute_advantages(sr3, didpo.AdvConfig(gamma=0.5, baseline="group_mean", verdict=False))
    # f ok members A1, B1 (1.25, .5) -> +-.375; g ok members A2, C2 (1.5, .5) -> +-.5
    for i, t, code, want in [(0, 0, F_OK, 1.375), (1, 0, F_OK, -0.875), (0, 1, G_OK, 1.5), (2, 1, G_OK, -1.0)]:
        assert values(sr3[i], advs[i], t, region(sr3[i].turns[t], code)) == {want}


def test_reemitted_subdiff_earns_no_diff_credit(tiny_tokenizer):
    b = tiny_tokenizer
    group = [build(b, [whole(F_BAD, G_OK), whole(F_OK, G_OK, "Fixed f.")], [0.0, 0.0], 1.0),
             build(b, [whole(F_OK, G_BAD)], [0.0], 0.0), build(b, [whole(F_BAD, G_BAD)], [0.0], 0.0),
             build(b, [whole(F_OK, G_OK)], [0.0], 1.0),
             build(b, [whole(F_BAD, G_BAD), whole(F_OK, G_BAD, "Fixed f.")], [0.0, 0.0], 0.0)]
    cr = didpo.compute_credit(group, didpo.AdvConfig(verdict=False))
    tr, a = group[0], cr.token_adv[0]
    ae = round(cr.episode[0], 5)
    assert values(tr, a, 0, region(tr.turns[0], G_OK)) != {ae}          # g written in turn 1: diff credit
    assert values(tr, a, 1, region(tr.turns[1], G_OK)) == {ae}          # the same g re-emitted in turn 2: none
    # f bad, replaced in turn 2: no evidence on it (traj 2's loss is explained by g bad, convicted by traj 1): q = 1/2,
    # and no push either way (A^V = −A^E: the group's mean q, q̄, in place of q), where A^D has none to give
    on = didpo.compute_credit(group, didpo.AdvConfig())
    pieces, q, _, _, judged = verdict.posterior(group)
    qbar = sum(sum(qs) / len(qs) for ps in pieces if (qs := [q[u] for _, u, _ in ps if u in judged])) / len(pieces)
    assert q[(fb := ("f", ("def f(a, b):", "s = a-b", "return s")))] == pytest.approx(0.5) and fb not in judged
    assert values(tr, on.token_adv[0], 0, region(tr.turns[0], F_BAD)) == {0.0}
    # but the verdict credits the re-emitted g as the version it is (verified by the winners): q = 1
    assert [u[0] for t, u, _ in pieces[0] if t == 1] == ["f", "g"]
    assert values(tr, on.token_adv[0], 1, region(tr.turns[1], G_OK)) == {round(1 - qbar, 5)}
    assert values(tr, a, 1, region(tr.turns[1], F_OK)) != {ae}          # the fix of f (made twice): credit
    fix = [x for x in cr.anchors if x.text == "s = a+b"]
    assert len(fix) == 1 and sorted(fix[0].kept) == [(0, 1), (4, 1)]    # the changed line only, not `return s`


def test_a_losers_re_emitted_correct_function_outranks_its_bugs(tiny_tokenizer):
    """Whole-file rewrites under graded (per-turn) reward: B keeps f ok, verified by A's win, and rewrites g, wrong
    twice. f's re-emission in turn 2 is in no diff, but it is the version the verdict verified: it gets that credit,
    above both of B's g bugs. (It had B's A^E alone, below the bugs' A^V: the class a held-out check found at 0.55.)"""
    b, g_bad2 = tiny_tokenizer, G_BAD.replace("x*4", "x*5")
    group = [build(b, [whole(F_OK, G_OK)], [0.5], 1.0),
             build(b, [whole(F_OK, G_BAD), whole(F_OK, g_bad2, "Fixed g.")], [0.5, 0.0], 0.0),
             build(b, [whole(F_BAD, G_BAD)], [0.0], 0.0), build(b, [whole(F_BAD, G_OK)], [0.5], 0.0)]
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    tr, a = group[1], cr.token_adv[1]
    f_again = values(tr, a, 1, region(tr.turns[1], F_OK))
    assert len(f_again) == 1 and f_again != {round(cr.episode[1], 5)}
    bugs = values(tr, a, 0, region(tr.turns[0], G_BAD)) | values(tr, a, 1, region(tr.turns[1], g_bad2))
    assert min(f_again) > max(bugs)
    assert f_again == values(tr, a, 0, region(tr.turns[0], F_OK))  # as much as when B first wrote it


def test_failed_edit_earns_no_diff_credit(tiny_tokenizer):
    b = tiny_tokenizer
    bad = sr("def f(a, b):\n    return 0\n", F_OK)                          # SEARCH matches nothing
    group = [build(b, [sr_f(F_OK)], [0.0], 1.0), build(b, [sr_f(F_OK)], [0.0], 1.0),
             build(b, [sr_f(F_BAD)], [0.0], 0.0), build(b, [sr_f(F_BAD)], [0.0], 0.0), build(b, [bad], [0.0], 0.0)]
    assert not group[4].turns[0].applied
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    assert cr.anchors and values(group[4], cr.token_adv[4], 0, region(group[4].turns[0], F_OK)) == {
        round(cr.episode[4], 5)}
    assert (cr.owner[4] == -1).all()


@pytest.mark.parametrize("algo,baseline", [("grpo", "contrast"), ("gigpo", "contrast"), ("didpo", "contrast"),
                                           ("didpo", "ridge"), ("didpo", "group_mean")])
@pytest.mark.parametrize("norm", ["mean_norm", "mean_std_norm"])
def test_degenerate_groups_give_finite_zeros(wf, sr3, tiny_tokenizer, algo, baseline, norm):
    cfg = didpo.AdvConfig(algo=algo, baseline=baseline, norm=norm)
    same = [build(tiny_tokenizer, [whole(F_OK, G_BAD)], [0.0], 0.0) for _ in range(3)]
    no_diffs = [build(tiny_tokenizer, ["Thinking.\nrun tests\n"], [0.0], r) for r in (0.0, 0.0)]
    for group in ([wf[1]], same, no_diffs, [sr3[0]]):
        for a in didpo.compute_advantages(group, cfg):
            assert torch.isfinite(a).all() and (a == 0).all()
    mixed = wf[1:3] + [build(tiny_tokenizer, ["Thinking.\nrun tests\n"], [0.0], 1.0)]
    for tr, a in zip(mixed, didpo.compute_advantages(mixed, cfg)):
        assert torch.isfinite(a).all() and (a[torch.tensor(tr.loss_mask) == 0] == 0).all()
    assert not didpo.has_signal(same, cfg) and didpo.has_signal(wf, cfg)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="AdvConfig.algo='ppo'"):
        didpo.AdvConfig(algo="ppo")
    with pytest.raises(ValueError, match="LossConfig.agg"):
        ppo.LossConfig(agg="sum")


# --- the policy loss ------------------------------------------------------------------


def test_policy_loss_by_hand():
    cfg = ppo.LossConfig(clip_low=0.2, clip_high=0.28, dual_clip=3.0)
    r = torch.tensor([[1.0, 1.5, 0.5, 1.5, 5.0, 1.0]])
    adv = torch.tensor([[1.0, 2.0, 1.0, -1.0, -1.0, 7.0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0]])
    old = torch.zeros(1, 6)
    loss, m = ppo.policy_loss(r.log(), old, adv, mask, cfg)
    # -A·r, clipped at 1 + ε_high for A > 0; max(1.5, 1.28) for A < 0; dual clip caps 5 at c = 3
    per = [-1.0, -2.0 * 1.28, -0.5, 1.5, 3.0]
    assert float(loss) == pytest.approx(sum(per) / 5)
    assert m["clip_frac"] == pytest.approx(1 / 5) and m["dual_clip_frac"] == pytest.approx(1 / 5)
    assert m["ratio_max"] == pytest.approx(5.0) and m["tokens"] == 5


def test_kl_and_entropy_terms_by_hand():
    logp, ref = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.5, -1.0]])
    ent, mask, zero = torch.tensor([[0.3, 0.7]]), torch.ones(1, 2), torch.zeros(1, 2)
    cfg = ppo.LossConfig(kl_coef=0.1, entropy_coef=0.01)
    loss, m = ppo.policy_loss(logp, logp.detach(), zero, mask, cfg, ref_logp=ref, entropy=ent)
    kl = [math.exp(d) - d - 1 for d in (-0.5, 1.0)]
    assert m["kl"] == pytest.approx(sum(kl) / 2) and m["entropy"] == pytest.approx(0.5)
    assert float(loss) == pytest.approx(0.1 * sum(kl) / 2 - 0.01 * 0.5)
    with pytest.raises(ValueError, match="ref_logp"):
        ppo.policy_loss(logp, logp, zero, mask, cfg)


def _batch(seed: int = 0, B: int = 6, T: int = 9):
    g = torch.Generator().manual_seed(seed)
    logp = (-torch.rand(B, T, generator=g) * 3).requires_grad_(True)
    old = logp.detach() + 0.3 * torch.randn(B, T, generator=g)
    adv = torch.randn(B, T, generator=g)
    mask = (torch.rand(B, T, generator=g) > 0.3).long()
    mask[2] = 0  # an empty row
    ref = logp.detach() + 0.2 * torch.randn(B, T, generator=g)
    ent = torch.rand(B, T, generator=g)
    return logp, old, adv, mask, ref, ent


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean"])
def test_loss_is_invariant_to_micro_batches_and_ranks(agg):
    cfg = ppo.LossConfig(kl_coef=0.05, entropy_coef=0.01, agg=agg)
    logp, old, adv, mask, ref, ent = _batch()
    full, _ = ppo.policy_loss(logp, old, adv, mask, cfg, ref, ent)
    full.backward()
    g_full = logp.grad.clone()
    logp.grad = None
    n_tok, n_seq = float(mask.sum()), float((mask.sum(-1) > 0).sum())
    total = 0.0
    for rank in ([0, 1, 2], [3, 4, 5]):           # 2 ranks, each with 2 micro-batches of its rows
        for rows in (rank[:2], rank[2:]):
            part, _ = ppo.policy_loss(logp[rows], old[rows], adv[rows], mask[rows], cfg, ref[rows], ent[rows],
                                        global_tokens=n_tok, global_seqs=n_seq)
            part.backward()
            total += float(part.detach())
    assert total == pytest.approx(float(full.detach()), rel=1e-6, abs=1e-7)
    assert torch.allclose(logp.grad, g_full, atol=1e-7)


def test_values_under_the_mask_change_nothing():
    cfg = ppo.LossConfig(kl_coef=0.05, entropy_coef=0.01)
    logp, old, adv, mask, ref, ent = _batch(1)
    base, _ = ppo.policy_loss(logp, old, adv, mask, cfg, ref, ent)
    off = mask == 0
    junk = [t.detach().clone() for t in (logp, old, adv, ref, ent)]
    for t, v in zip(junk, (float("nan"), float("inf"), 1e30, float("-inf"), float("nan"))):
        t[off] = v
    lp = junk[0].requires_grad_(True)
    loss, m = ppo.policy_loss(lp, junk[1], junk[2], mask, cfg, junk[3], junk[4])
    loss.backward()
    assert float(loss.detach()) == pytest.approx(float(base.detach())) and torch.isfinite(lp.grad).all()
    assert (lp.grad[off] == 0).all() and all(math.isfinite(v) for v in m.values())


def test_replayed_group_puts_credit_on_the_correct_function(tiny_tokenizer):
    """End to end: rollout.replay (rollout loop, sandbox rewards, the sampled tokens' offsets) into didpo."""
    hidden = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=hidden[:1],
                      hidden_tests=hidden)
    combos = [(F_OK, G_OK), (F_OK, G_BAD), (F_BAD, G_OK), (F_BAD, G_BAD)]
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1) for f, g in combos]
    assert [tr.reward for tr in group] == [1.0, 0.0, 0.0, 0.0]
    advs = didpo.compute_advantages(group, didpo.AdvConfig())
    _masked_zero(group, advs)
    t = group[1].turns[0]
    assert min(values(group[1], advs[1], 0, region(t, F_OK))) > max(values(group[1], advs[1], 0, region(t, G_BAD)))


def test_verdict_and_ridge_beat_contrast_on_a_messy_scenario():
    """bench/credit.py's "imbalanced SR" scenario (3 implementations and 3 bug kinds per function, one function
    right 15% of the time, one search/replace per function per turn, binary reward), 3 groups of 32 replayed
    through the environment with the embedded tokenizer. The contrast credits a correct version of the hard
    function with its writers' other pieces; the ridge holds those fixed; the verdict convicts the versions that
    fail their public test or are left to blame in a losing workspace. Measured: default (ridge + verdict) 0.98,
    ridge alone 0.93, contrast 0.81."""
    import random

    import transformers

    import rollout
    from bench import credit as bench

    tok = transformers.AutoTokenizer.from_pretrained(models.embedded_model_dir())
    regions = bench.MESSY_TASKS[2]
    task = bench.messy_task(2, regions)
    public_ok = [[True] * 6 for _ in regions]  # only the repair and rewrite scenarios read it
    rng, groups = random.Random(0), []
    while len(groups) < 3:
        group = []
        for _ in range(32):
            responses, spans = bench.messy_script(regions, bench.plan("imbalanced SR", regions, rng, public_ok))
            group.append((rollout.replay(task, responses, tok, max_turns=len(responses)), spans))
        if didpo.has_signal([tr for tr, _ in group], didpo.AdvConfig()):
            groups.append(group)
    default, _ = bench.measure(groups, didpo.AdvConfig())
    ridge, _ = bench.measure(groups, didpo.AdvConfig(verdict=False))
    contrast, _ = bench.measure(groups, didpo.AdvConfig(baseline="contrast", eta=0.8, verdict=False))
    assert default >= 0.95 and default > ridge >= 0.88 and contrast <= 0.85, (default, ridge, contrast)


def test_public_results_say_which_singleton_broke_what(tiny_tokenizer):
    """Every version of f is written once (no anchor can form); the public tests, one per function, say that
    trajectory 1's g fails, which explains its loss, and its f passed f's test, where both bugs of f failed:
    f outranks g. Without the verdict the two tie. explain prints the posteriors."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public)
    f_ok2, f_bad2 = F_OK.replace("a+b", "b+a"), F_BAD.replace("a-b", "a*b")
    combos = [(F_OK, G_OK), (f_ok2, G_BAD), (F_BAD, G_OK), (f_bad2, G_OK)]
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1) for f, g in combos]
    assert [tr.reward for tr in group] == [1.0, 0.0, 0.0, 0.0]
    assert list(group[1].turns[0].public.values()) == [True, False]  # as the model saw the tests
    t = group[1].turns[0]
    rf, rg = region(t, f_ok2), region(t, G_BAD)
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    _masked_zero(group, cr.token_adv)
    # A^E = (.75, -.25, -.25, -.25). f ok2 is in no unexplained clause; its pass has odds 1/π̂_f, π̂_f =
    # (3 + 1 - q)/(6 + 1 - q + 2) (2 failed, 1 - q expected to have passed): q/(1 - q) = (9 - q)/(4 - q),
    # 2q² - 14q + 9 = 0, q = (7 - √31)/2; g bad: q = 0. q̄ = mean of (1, q/2, 1/2, 1/2) = (4 + q)/8, s = 1
    q = (7 - 31 ** 0.5) / 2
    assert values(group[1], cr.token_adv[1], 0, rf) == {round(q - (4 + q) / 8, 5)}
    assert values(group[1], cr.token_adv[1], 0, rg) == {round(-(4 + q) / 8, 5)}
    off = didpo.compute_advantages(group, didpo.AdvConfig(verdict=False))
    assert values(group[1], off[1], 0, rf) == values(group[1], off[1], 0, rg)
    line = explain.verdict_line(cr.posterior.q, cr.posterior.escape)
    assert "f v2 0.72" in line and "g v2 0.00" in line  # g's versions are verified or failed: no π̂ for g
    assert line.endswith(f"π̂ (a bug of f passes f's public tests): f {(4 - q) / (9 - q):.2f}")


def test_where_no_one_passed_the_verdict_keeps_its_unit(tiny_tokenizer):
    """A^V = s·(q − q̄) − A^E also where no trajectory passed: a hidden test no one passes, step rewards c times the
    public tests' share (Φ_0 = 0), returns c·(1, .5, .5, .5). s is one unit of return in A^E's units, 1 under
    mean_norm whatever the returns' spread, so each piece gets q − q̄ (q̄: the trajectories' mean q, averaged) with
    c = 1 and c = 2 alike, while A^E doubles: a version's credit is its posterior in the reward's unit, not in the
    spread of this group's returns (the public tests' here, a win's where one won)."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert f(0, 0) == 1")])
    combos = [(F_OK, G_OK), (F_OK.replace("a+b", "b+a"), G_BAD), (F_BAD, G_OK), (F_BAD.replace("a-b", "a*b"), G_OK)]
    for c in (1.0, 2.0):
        group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1, shaping_coef=c) for f, g in combos]
        assert [tr.reward for tr in group] == [0.0] * 4 and [tr.turns[0].reward for tr in group] == [c] + [c / 2] * 3
        cr = didpo.compute_credit(group, didpo.AdvConfig())
        assert cr.episode == pytest.approx([.375 * c, -.125 * c, -.125 * c, -.125 * c])
        q = {u[1][1]: v for u, v in cr.posterior.q.items()}
        assert q["s = a+b"] > 0.5 > q["y = x*4"] == q["s = a-b"] == 0.0  # passed its test vs failed it
        qbar = sum(q[code.splitlines()[1].strip()] for fg in combos for code in fg) / 8
        for i, (f, g) in enumerate(combos):
            for code in (f, g):
                want = round(q[code.splitlines()[1].strip()] - qbar, 5)
                assert values(group[i], cr.token_adv[i], 0, region(group[i].turns[0], code)) == {want}, (c, i, code)


def test_the_verdict_speaks_where_every_return_is_equal(tiny_tokenizer):
    """Binary reward, a hidden test no one passes, every turn valid: every return is 0, so A^E is 0 everywhere. The
    public tests still say which f and g ran right, and the verdict reads them at its unit (s = 1): each response's
    passing function above its failing one. s used to be the returns' spread ratio, 0 here: the verdict spoke in
    such a group only when an invalid turn's 0.01 penalty set the returns apart (then at full unit)."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert f(0, 0) == 1")])
    combos = [(F_OK, G_BAD), (F_BAD, G_OK), (F_OK.replace("a+b", "b+a"), G_BAD), (F_BAD, G_BAD)]
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1) for f, g in combos]
    assert [tr.reward for tr in group] == [0.0] * 4 and [tr.turns[0].reward for tr in group] == [0.0] * 4
    for norm in ("mean_norm", "mean_std_norm"):
        cr = didpo.compute_credit(group, didpo.AdvConfig(norm=norm))
        assert cr.episode == [0.0] * 4
        for i, (f, g) in enumerate(combos):
            mean = {code: np.mean(sorted(values(group[i], cr.token_adv[i], 0, region(group[i].turns[0], code))))
                    for code in (f, g)}
            if i < 3:
                good, bad = (f, g) if i != 1 else (g, f)
                assert mean[good] > 0 > mean[bad], (norm, i, mean)
            else:
                assert mean[f] < 0 and mean[g] < 0, (norm, mean)


def test_a_penalty_sized_spread_leaves_a_bounded_verdict_under_mean_std_norm(tiny_tokenizer):
    """No one wins and one turn is invalid (returns 0, 0, 0, −0.01): mean_std_norm's A^E is ±2.6 / 0.4, and one unit
    of return in its units would be 1/std ≈ 231; the verdict's unit is floored at a lone win's (std √(G−1)/G), so
    every token's advantage stays within a win's scale (it read ±100 and more)."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert f(0, 0) == 1")])
    responses = [whole(F_OK, G_BAD), whole(F_BAD, G_OK), whole(F_BAD, G_BAD), "I would write f."]
    group = [rollout.replay(task, [r], tiny_tokenizer, max_turns=1) for r in responses]
    assert [tr.turns[0].reward for tr in group] == [0.0, 0.0, 0.0, -0.01]
    assert didpo.return_unit([0.0, 0.0, 0.0, -0.01], "mean_std_norm") == pytest.approx(1 / (3 ** 0.5 / 4), rel=1e-4)
    assert didpo.return_unit([0.0, 1.0, 0.0, 1.0], "mean_std_norm") == pytest.approx(2.0, rel=1e-4)
    assert didpo.return_unit([0.0, 0.0, 0.0, -0.01], "mean_norm") == 1.0
    cr = didpo.compute_credit(group, didpo.AdvConfig(norm="mean_std_norm"))
    top = max(float(a.abs().max()) for a in cr.token_adv)
    assert 1.0 < top < 6.0, top
    i = 0
    good = min(values(group[i], cr.token_adv[i], 0, region(group[i].turns[0], F_OK)))
    assert good > max(values(group[i], cr.token_adv[i], 0, region(group[i].turns[0], G_BAD)))


def test_code_the_tests_never_ran_gets_no_push(tiny_tokenizer):
    """No one wins; one response is cut off inside its fenced block (a syntax error: no public test runs) after an
    f of its own and a made-up h, another has no code (the invalid-turn penalty: s = 1). Nothing bears on the
    cut-off versions but the loss, which either explains: they keep the group's mean (A^D aside, no push). With the
    prior's 1/2 against a q̄ of bugs and empty trajectories they drew +0.2, and a run learned to write long,
    unclosed, untested blocks (bench/learn.py, seed 3). The versions that ran keep their verdict; and where the
    cut-off f is one that passed elsewhere, the loss is h's alone: h is convicted."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert g(0) == 1")])
    cut = "Here.\n```python\n{}\ndef h(x):\n    return (x +"
    responses = [whole(F_BAD, G_BAD), whole(F_OK, G_BAD), cut.format(F_OK.replace("a+b", "b+a")), "I would write f."]
    group = [rollout.replay(task, [r], tiny_tokenizer, max_turns=1) for r in responses]
    assert [tr.reward for tr in group] == [0.0] * 4 and group[2].turns[0].public is None
    assert [tr.turns[0].reward for tr in group] == [0.0, 0.0, 0.0, -0.01]
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    post = cr.posterior
    cut_versions = {u for _, u, _ in post.pieces[2]}
    assert {u.function for u in cut_versions} == {"f", "h"} and not cut_versions & post.judged
    cut_off = [v for _, _, rs in post.pieces[2] for r in rs for v in values(group[2], cr.token_adv[2], 0, r)]
    assert cut_off and max(map(abs, cut_off)) < 0.05, cut_off  # A^V = −A^E: A^D alone, centred in each piece
    q = {u[1][1]: v for u, v in post.q.items() if u in post.judged}
    assert q["s = a+b"] > 0.5 > q["s = a-b"] == q["y = x*4"] == 0.0     # the versions that ran: judged as before
    assert min(values(group[1], cr.token_adv[1], 0, region(group[1].turns[0], F_OK))) > 0.3
    assert max(values(group[1], cr.token_adv[1], 0, region(group[1].turns[0], G_BAD))) < 0
    group[2] = rollout.replay(task, [cut.format(F_OK)], tiny_tokenizer, max_turns=1)
    post = verdict.posterior(group)
    assert {u.function: post.q[u] < 0.5 for _, u, _ in post.pieces[2]} == {"f": False, "h": True}
    assert {u for _, u, _ in post.pieces[2]} <= post.judged


def test_a_losers_untested_code_keeps_the_loss_blame(tiny_tokenizer):
    """One response wins; a loser writes a g of its own, then repeats f's `return s` until the cap cuts it (a syntax
    error: no test runs). Nothing bears on its g and f but the loss, which either explains: no push up, and the loss
    blames them as GRPO does (A^E; A^D centred away). At no push (A^V = −A^E) the repeated lines went unblamed, and
    a run learned to repeat lines until the cut (bench/learn.py --stop, seed 1)."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert g(0) == 0")])
    loop = "Here.\n```python\n" + G_OK.replace("x*3", "3*x") + "\n\n" + F_OK + "    return s\n" * 6 + "    return (s +"
    responses = [whole(F_OK, G_OK), whole(F_OK, G_BAD), loop, whole(F_BAD, G_OK)]
    group = [rollout.replay(task, [r], tiny_tokenizer, max_turns=1) for r in responses]
    assert [tr.reward for tr in group] == [1.0, 0.0, 0.0, 0.0] and group[2].turns[0].public is None
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    pieces = cr.posterior.pieces[2]
    assert cr.episode[2] == pytest.approx(-0.25) and pieces and not {u for _, u, _ in pieces} & cr.posterior.judged
    for _, _, rs in pieces:
        own = [float(cr.token_adv[2][group[2].turns[0].span[0] + k]) for k, (s, e) in
               enumerate(group[2].turns[0].offsets) if e > s and any(a <= s and e <= b for a, b in rs)]
        assert own and np.mean(own) == pytest.approx(-0.25, abs=1e-6), own
    ok = min(values(group[1], cr.token_adv[1], 0, region(group[1].turns[0], F_OK)))  # a verified f in a loser
    assert ok > 0 > max(values(group[1], cr.token_adv[1], 0, region(group[1].turns[0], G_BAD)))


def test_glue_in_every_workspace_takes_no_blame(tiny_tokenizer):
    """Every trajectory imports math and no one passes (graded: the public share differs). The import is in every
    losing workspace; as a version like any other, it would be the one cause that explains every loss (q ≈ 0)
    and exonerate the bugs beside it (q ≈ .68). The group cannot contrast it: it leaves the clauses, keeps the
    prior, and each losing sum_to is left to blame."""
    task = tasks.Task(id="glue", prompt="sum_to(n)", files={"solution.py": "def sum_to(n):\n    pass\n"},
                      public_tests=[tasks.Test("assert", "assert sum_to(4) == 10")],
                      hidden_tests=[tasks.Test("assert", "assert sum_to(-3) == 0")])
    bodies = ["return n * (n + 1) // 2", "return math.comb(n + 1, 2)", "return n * (n - 1) // 2"]
    group = [rollout.replay(task, [f"Here.\n```python\nimport math\n\ndef sum_to(n):\n    {b}\n```\nfinish\n"],
                            tiny_tokenizer, max_turns=1, shaping_coef=1.0) for b in bodies + bodies[:2]]
    assert [tr.reward for tr in group] == [0.0] * 5 and [tr.turns[0].reward for tr in group] == [1, 1, 0, 1, 1]
    q = {u: v for u, v in verdict.posterior(group)[1].items()}
    assert q[("", ("import math",))] == verdict.PRIOR
    assert all(v < 1e-6 for u, v in q.items() if u[0] == "sum_to")
    same = verdict.posterior(group[1:2] * 3)[1]  # a function every trajectory got wrong (it passed its public test)
    assert [v for u, v in same.items() if u[0] == "sum_to"] < [1e-6]


def stdio_task(prompt: str, public: tuple[str, str], hidden: tuple[str, str]) -> tasks.Task:
    """A task graded on stdin/stdout: one public (input, output) test; the hidden tests are it and one more."""
    test = [tasks.Test("stdio", *public)]
    return tasks.Task(id="stdio", prompt=prompt, files={"solution.py": ""}, public_tests=test,
                      hidden_tests=test + [tasks.Test("stdio", *hidden)])


def test_tests_that_name_no_function_judge_the_program(tiny_tokenizer):
    """A stdio program: glue (import, entry call) and main; its test feeds stdin and names no function. Turn 1's
    main fails it, and is the only version there beside the glue every trajectory holds: the failure convicts
    it, though turn 2 fixed it and won. Before, tests naming no function judged only a one-statement program."""
    task = stdio_task("Read n, print 1 + ... + n.", ("4\n", "10\n"), ("-3\n", "0\n"))

    def program(expr, end=""):
        return (f"Here.\n```python\nimport sys\n\ndef main():\n    n = int(sys.stdin.readline())\n"
                f"    print({expr})\n\nmain()\n```\n{end}")
    group = [rollout.replay(task, [program("n * (n - 1) // 2"), program("max(n, 0) * (n + 1) // 2", "finish\n")],
                            tiny_tokenizer, max_turns=2),
             rollout.replay(task, [program("n * (n + 1) // 2", "finish\n")], tiny_tokenizer, max_turns=1)]
    assert [tr.reward for tr in group] == [1.0, 0.0]
    assert [list(t.public.values()) for t in group[0].turns] == [[False], [True]]
    q = {u[1][-1]: v for u, v in verdict.posterior(group)[1].items() if u[0] == "main"}
    assert q["print(max(n, 0) * (n + 1) // 2)"] == 1.0 and q["print(n * (n - 1) // 2)"] < 1e-6
    assert q["print(n * (n + 1) // 2)"] < 1e-6   # passed its public test, lost: the glue is verified
    script = "Here.\n```python\nn = int(input())\nprint(n * (n + 1) // 2)\n```\nfinish\n"  # top level only:
    script = rollout.replay(task, [script], tiny_tokenizer, max_turns=1)                    # the program, not glue
    assert [v for u, v in verdict.posterior([script] * 3)[1].items()] < [1e-6]


def test_a_failed_program_test_convicts_what_was_not_seen_passing_it(tiny_tokenizer):
    """A stdio program of a and b; its test names neither, so a failure says only that some version there is a bug
    the test catches. Trajectory 1 (a1, b1) passes it and loses: both bugs escape it. Trajectory 2 (a1, b2) fails
    it: a1 passed that same test, so b2 is the bug it caught (before, a failed program test was any bug: b2 kept
    q = .38 and a1 shared the blame). Trajectory 1's loss is left to a1 and b1, and b's passes mean more, since one
    of b's bugs was caught: π̂_a = (4 − q_a1)/(7 − q_a1), π̂_b = (4 − q_b1)/(8 − q_b1), odds(q_a1) = (1 − q_b1)/π̂_a,
    odds(q_b1) = (1 − q_a1)/π̂_b."""
    task = stdio_task("Read x and y; print a(x) = x + 1 and b(y) = 2y.", ("2 3\n", "3 6\n"), ("0 0\n", "1 0\n"))

    def program(a, b):
        return (f"Here.\n```python\nimport sys\n\ndef a(x):\n    return {a}\n\ndef b(y):\n    return {b}\n\n"
                f"x, y = map(int, sys.stdin.readline().split())\nprint(a(x), b(y))\n```\nfinish\n")
    a1, b1, b2 = "x + 1 if x else 9", "y * 2 if y else 5", "y + 2"
    group = [rollout.replay(task, [program(a, b)], tiny_tokenizer, max_turns=1, probe=False)  # by hand: no behaviour
             for a, b in [(a1, b1), (a1, b2), ("x + 1", "y * 2")]]
    assert [tr.reward for tr in group] == [0.0, 0.0, 1.0]
    assert [list(tr.turns[0].public.values()) for tr in group] == [[True], [False], [True]]
    _, q, escape = verdict.posterior(group)[:3]
    q = {u[1][-1].removeprefix("return "): v for u, v in q.items() if u[0]}
    assert q[b2] < 1e-6 and q["x + 1"] == q["y * 2"] == 1.0
    qa, qb = 0.5, 0.5
    for _ in range(200):
        qa = 1 / (1 + (4 - qa) / (7 - qa) / (1 - qb))
        qb = 1 / (1 + (4 - qb) / (8 - qb) / (1 - qa))
    assert (q[a1], q[b1]) == pytest.approx((qa, qb), abs=1e-4) and q[a1] < q[b1]
    assert (escape["a"], escape["b"]) == pytest.approx(((4 - qa) / (7 - qa), (4 - qb) / (8 - qb)), abs=1e-4)


def test_data_in_a_test_names_no_function(tiny_tokenizer):
    """A stdio test's stdin is data, not code: "count the words" does not name a function `count`. Read as a name,
    it made the program's failure count's own (count passes nothing, so fmt, the bug, got no evidence: q = 1/2).
    Words inside a string literal of a call or assert test are data too."""
    index = functions.tests_naming({"assert solve('count') == 3": False, "solve(\"fmt\") should return 1": True})
    assert set(index) == {"assert", "solve", "should", "return"}
    task = stdio_task("Count the words of a line; print '<n> words'.", ("count the words\n", "3 words\n"),
                      ("a b\n", "2 words\n"))

    def program(fmt, end=""):
        return (f"Here.\n```python\nimport sys\n\ndef count(s):\n    return len(s.split())\n\ndef fmt(n):\n"
                f"    return {fmt}\n\nprint(fmt(count(sys.stdin.readline())))\n```\n{end}")
    tr = rollout.replay(task, [program("f'{n + 1} words'"), program("f'{n} words'", "finish\n")], tiny_tokenizer,
                        max_turns=2)
    assert tr.reward == 1.0 and [list(t.public.values()) for t in tr.turns] == [[False], [True]]
    assert functions.tests_naming(tr.turns[0].public) == {}
    q = {u[1][-1]: v for u, v in verdict.posterior([tr])[1].items()}
    assert q["return len(s.split())"] == q["return f'{n} words'"] == 1.0 and q["return f'{n + 1} words'"] < 1e-6


def test_a_failure_a_callee_may_share_is_a_clause(tiny_tokenizer):
    """f calls a helper h that no test names, so h's own tests are all of them and fail with f's: passes() cannot
    say whose failure it is. Turn 1's h is wrong and f's test fails; turn 2 fixes h and wins. The failure is the
    clause {f, h of turn 1}; f is verified, so it convicts that h (before, it was no evidence: q = 1/2)."""
    test = [tasks.Test("assert", "assert f(2) == 7")]
    task = tasks.Task(id="callee", prompt="f(x) = 2·h(x) + 1, h(x) = x + 1.", files={"solution.py": ""},
                      public_tests=test, hidden_tests=test + [tasks.Test("assert", "assert f(0) == 3")])

    def file(h, end=""):
        return f"Here.\n```python\ndef h(x):\n    return {h}\n\ndef f(x):\n    return h(x) * 2 + 1\n```\n{end}"
    tr = rollout.replay(task, [file("x - 1"), file("x + 1", "finish\n")], tiny_tokenizer, max_turns=2)
    assert tr.reward == 1.0 and [list(t.public.values()) for t in tr.turns] == [[False], [True]]
    q = {u[1][-1]: v for u, v in verdict.posterior([tr])[1].items()}
    assert q["return x + 1"] == q["return h(x) * 2 + 1"] == 1.0 and q["return x - 1"] < 1e-6


def test_passes_reads_the_tests_that_name_the_function():
    pub = {"assert helper(3) == 3": False, "assert main(3) == 6": False, "assert other() == 1": True}
    assert functions.passes(pub, "other") is True and functions.passes(pub, "helper") is False
    assert functions.passes(pub, "main") is False
    assert functions.passes(pub, "main", {"helper"}) is None  # its callee fails: the failure may not be main's
    assert functions.passes(pub, "unnamed") is False  # no test names it: all tests are its tests


def test_a_def_that_a_later_one_overrides_is_dead_code_no_versions_credit(tiny_tokenizer):
    """Python binds the last def of a name: the ones before it are dead code, in no version. As part of f's version
    (the defs joined), a loser that repeats a verified function until the cap credited every copy as verified
    (+0.9 a token on the pairs tier, seed 4 with --stop, while GRPO blamed them): repetition paid in a loss."""
    src = "def f(a):\n    return 1\n\nx = 2\n\ndef f(a):\n    return a\n"
    turn = env.Turn(response="", files_after={"solution.py": src},
                    origin={"solution.py": [(k, k + 1) for k in range(7)]})
    wrote, body, _ = functions.written_functions(turn)
    assert body == {"": ["x = 2", ""], "f": ["def f(a):", "    return a"]}
    assert wrote == {"": [(3, 4), (4, 5)], "f": [(5, 6), (6, 7)]}
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert g(0) == 0")])
    loop = "Here.\n```python\n" + (F_OK + "\n\n") * 3 + G_BAD + "```\n"
    group = [rollout.replay(task, [r], tiny_tokenizer, max_turns=1) for r in [whole(F_OK, G_OK), loop]]
    cr = didpo.compute_credit(group + [rollout.replay(task, [whole(F_BAD, G_BAD)], tiny_tokenizer, max_turns=1)],
                              didpo.AdvConfig())
    assert [tr.reward for tr in group] == [1.0, 0.0] and cr.episode[1] == pytest.approx(-1 / 3)
    tr, a, body = group[1], cr.token_adv[1], F_OK.split("\n", 1)[1].rstrip("\n")
    copies = [(s, s + len(body)) for s in range(len(tr.turns[0].response)) if tr.turns[0].response.startswith(body, s)]
    got = [values(tr, a, 0, r) for r in copies]
    assert len(copies) == 3 and max(got[0] | got[1]) < 0 < min(got[2]), got  # dead (A^E, A^D), dead, live (verified)


def test_a_function_holds_its_decorators_and_strings():
    """A decorator opens the def it decorates. As glue, @cache on one trajectory's fib and not on another's would
    make them one version of fib (one of them may time out) and two versions of the glue, each a suspect. An
    unindented line inside a string opens nothing: split there, the rest of fib would be glue. A file that does
    not parse is split at its unindented lines."""
    src = ("from functools import cache\n\n@cache\n@other(1)\ndef fib(n):\n    return n\n\n"
           "@dataclass\nclass A:\n    x: int\n")
    turn = env.Turn(response="", files_after={"solution.py": src},
                    origin={"solution.py": [(k, k + 1) for k in range(10)]})
    wrote, body, _ = functions.written_functions(turn)
    assert body == {"": ["from functools import cache", ""], "A": ["@dataclass", "class A:", "    x: int"],
                    "fib": ["@cache", "@other(1)", "def fib(n):", "    return n", ""]}
    assert wrote == {"": [(0, 1), (1, 2)], "fib": [(k, k + 1) for k in range(2, 7)], "A": [(7, 8), (8, 9), (9, 10)]}
    plain = env.Turn(response="", files_after={"solution.py": src.replace("@cache\n", "")})
    assert verdict._version(functions.written_functions(plain)[1], "fib") != verdict._version(body, "fib")
    assert verdict._version(functions.written_functions(plain)[1], "") == verdict._version(body, "")
    text = 'import sys\n\n@cache\ndef fib(n):\n    doc = """a\nat column 0\n"""\n    return n\nx = f(\n    1)\n'
    assert functions.statements(text.splitlines()) == ([0, 2, 8], ["", "fib", ""])
    assert functions.statements("def f(:\n    x\nb\n    y\n".splitlines()) == ([0, 2], ["f", ""])


def test_a_docstring_does_not_make_another_version(tiny_tokenizer):
    """Writers vary docstrings more than code: the winner's f under one docstring and a loser's f under another (over
    three lines) are one version, verified by the win, so the loser's loss is its g's alone. A string that does
    something stays code, and so do the lines after a triple quote that never closes."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5")]
    task = tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert g(2) == 6")])
    one = F_OK.replace(":\n", ':\n    """Sum a and b."""\n', 1)
    three = F_OK.replace(":\n", ":\n    r\'\'\'The sum\n\n    of a and b.\'\'\'  # doc\n", 1)
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1) for f, g in [(one, G_OK), (three, G_BAD)]]
    assert [tr.reward for tr in group] == [1.0, 0.0]
    pieces, q = verdict.posterior(group)[:2]
    assert pieces[0][0][1] == pieces[1][0][1] == ("f", ("def f(a, b):", "s = a+b", "return s"))
    assert q[pieces[1][0][1]] == 1.0 and q[pieces[1][1][1]] < 0.01  # the loser's g is the bug
    kept = ["def f(a,", "b):", "'x'.join(a)", "return a", "def g():", '"""open', "return 1"]
    assert functions.without_docstrings(kept) == kept
    assert functions.without_docstrings(["class A:", "'doc'", "def m(self):", '"""doc"""', "x = 1"]) == [
        "class A:", "def m(self):", "x = 1"]


def test_mean_field_takes_rates_learned_elsewhere():
    """rates = (ρ, π) replace the prior's P(correct) = 1/2 and π̂_f: with ρ_f = 0.8, π_f = 1/2 a lone pass of f reads
    0.8/(0.8 + 0.2·1/2) = 8/9 and π̂_f is the given 1/2; g, not given, keeps the prior and its own π̂: its lone pass
    reads (6 − √22)/2 (bench/credit.py's test works it by hand). A caught clause {u of f, w of g} where g's bugs
    always escape (π_g ≈ 1) is f's bug: u's P(caught) and its 1 − q go to 1."""
    f, g = ("f", ("x",)), ("g", ("y",))
    q, pi, caught = verdict.mean_field([], {}, {f, g}, rates=({"f": 0.8}, {"f": 0.5}))
    assert abs(q[f] - 8 / 9) < 1e-9 and pi["f"] == 0.5 and caught == {}
    assert abs(q[g] - (6 - 22 ** 0.5) / 2) < 1e-6
    q, _, caught = verdict.mean_field([verdict.Caught({f, g})], {}, rates=({}, {"f": 0.5, "g": 1 - 1e-9}))
    assert caught[f] > 0.99 and q[f] < 0.01 and caught[g] < 1e-6


def test_the_verdict_is_the_same_in_every_process():
    """mean_field updates versions one after another, so their order changes q beyond rounding: it must not
    follow set order, which Python's per-process string hash seed decides (two runs crediting one group differently)."""
    code = ("import verdict; cs = [{('f', (str(i),)), ('g', (str(i + 1),)), ('h', (str(i % 3),))} for i in range(12)]; "
            "cs += [verdict.Caught(c) for c in cs[::3]]; "  # caught clauses: three states
            "print(repr(sorted(verdict.mean_field(cs, {}, {('f', ('2',))})[0].items())))")
    root = Path(__file__).resolve().parents[1]
    outs = {subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3, 4)}
    assert len(outs) == 1


def test_every_estimator_survives_whatever_a_model_writes(tiny_tokenizer):
    """Groups built the way the rollout loop builds them from random and adversarial responses (fences, broken
    search/replace, syntax errors, nested and duplicate defs, classes, NULs, deep nesting), with random public
    results, step and final rewards: every estimator returns finite advantages, zero off the loss mask, and the
    verdict judges something (its parsing of arbitrary workspaces is exercised, not skipped)."""
    import random

    code = ["def add(a, b):", "    return a + b", "    return a - b", "def sub(a, b):", "class Solution:",
            "    def add(self, a, b):", "        return a + b", "import sys", "print(add(1, 2))", "def input():",
            "async def add(a, b):", "@staticmethod", "if __name__ == '__main__':", "    main()", "def main():",
            "def add(:", "def add(a, b): return a+b", "def 日本(a):", "    def add(a, b):", "add = lambda a, b: 0",
            "def helper(a):\n    return a", "def add(a, b):\n    return helper(a) + b", "\x00", "\ufeff", "(" * 120,
            "'''", "def f():\n" + "".join("    " * k + "if x:\n" for k in range(1, 40)) + "    " * 40 + "pass",
            "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "```", "```python", "solution.py", "finish", "run tests"]
    pubs = [["assert add(1, 2) == 3"], ["assert add(1, 2) == 3", "assert sub(2, 1) == 1"], ["print(1)"],
            ["assert Solution().add(1, 2) == 3"], ["assert helper(1) == 1", "assert add(1, 2) == 3"]]
    rng = random.Random(7)

    def response():
        body = "\n".join(rng.choice(code) for _ in range(rng.randrange(1, 14)))
        return rng.choice(["Here.\n```python\n{}\n```\n", "{}", "solution.py\n```python\n<<<<<<< SEARCH\n"
                           "def add(a, b):\n    pass\n=======\n{}\n>>>>>>> REPLACE\n```\n"]).format(body)

    def trajectory(task, turns):
        ep = env.Episode(task, env.EnvConfig(max_turns=turns))
        ids = chat.prompt_ids(tiny_tokenizer, ep.messages)
        mask = [0] * len(ids)
        while not ep.done:
            rid = tiny_tokenizer.encode(response(), add_special_tokens=False)
            text, offsets = credit.token_offsets(tiny_tokenizer, rid)
            job = ep.act(text)
            ep.observe(None if job is None else [sandbox.Verdict(p, "pass" if p else "wrong", "")
                                                 for p in (rng.random() < 0.5 for _ in job.tests)])
            turn = ep.turns[-1]
            a = len(ids)
            ids += rid + [chat.eot_id(tiny_tokenizer)]
            mask += [1] * (len(rid) + 1)
            turn.span, turn.offsets = (a, len(ids)), offsets + [(len(text), len(text))]
            turn.reward = rng.choice([0.0, -0.1, 0.5])
            if not ep.done:
                obs = chat.observation_ids(tiny_tokenizer, turn.observation, ended_with_eot=True)
                ids, mask = ids + obs, mask + [0] * len(obs)
        return env.Trajectory(task_id=task.id, token_ids=ids, loss_mask=mask, turns=ep.turns,
                              reward=rng.choice([0.0, 0.0, 1.0]))

    cfgs = [didpo.AdvConfig(), didpo.AdvConfig(baseline="contrast", eta=0.8),
            didpo.AdvConfig(baseline="group_mean", norm="mean_std_norm"), didpo.AdvConfig(algo="gigpo")]
    judged = 0
    for _ in range(40):
        files = {"solution.py": rng.choice(["def add(a, b):\n    pass\n", "", "x = (\n",
                                            "def add(a, b):\n    pass\n\n\ndef sub(a, b):\n    pass\n"])}
        public = [tasks.Test("assert", p) for p in rng.choice(pubs)]
        task = tasks.Task(id="fuzz", prompt="p", files=files, public_tests=public,
                          hidden_tests=[tasks.Test("assert", "assert add(2, 2) == 4")])
        group = [trajectory(task, rng.choice([1, 2, 3])) for _ in range(rng.choice([2, 4, 8]))]
        for cfg in cfgs:
            _masked_zero(group, didpo.compute_advantages(group, cfg))
        judged += bool(didpo.compute_credit(group, didpo.AdvConfig()).posterior.q)
    assert judged >= 30


G_ESC = "def g(x):\n    y = x*3 if x < 5 else x\n    return y\n"  # passes g(2) == 6, fails g(9) == 27


def probed_task() -> tasks.Task:
    """f and g, each with a public test that seeds the probe, and a hidden test that escaped bugs fail."""
    public = [tasks.Test("assert", "assert f(2, 3) == 5"), tasks.Test("assert", "assert g(2) == 6")]
    return tasks.Task(id="fg", prompt="Write f and g.", files={"solution.py": STUBS}, public_tests=public,
                      hidden_tests=public + [tasks.Test("assert", "assert f(3, 3) == 6 and g(9) == 27")])


def test_versions_that_behave_apart_are_not_both_correct(tiny_tokenizer):
    """Three losers, every public test passed: f' and g' are bugs that escape it, each seen once. Without behaviour
    the clauses {f, g'}, {f', g}, {f2, g'} leave f' and g within 0.01 (π̂_f and π̂_g differ a little). The probe
    (Turn.behaviour) says f' differs from f and from f2 (another implementation that behaves as f) and g from g':
    f' is in two pairs that cannot both be right, g in one, against g' whom two losses blame, so the loser of the
    middle trajectory is f', not its g. tools/explain names the pairs."""
    task = probed_task()
    f2 = "def f(a, b):\n    t = b\n    t += a\n    return t\n"
    f_esc = "def f(a, b):\n    s = a+b if a < 3 else a*b\n    return s\n"
    plan = [(F_OK, G_ESC), (f_esc, G_OK), (f2, G_ESC)]
    q = {}
    for probe in (True, False):
        group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1, probe=probe) for f, g in plan]
        assert [tr.reward for tr in group] == [0.0] * 3 and all(all(tr.turns[0].public.values()) for tr in group)
        assert all(set(tr.turns[0].behaviour or {}) == ({"f", "g"} if probe else set()) for tr in group)
        pieces, q[probe] = verdict.posterior(group)[:2]
        f, g = (u for _, u, _ in pieces[1])
    assert abs(q[False][f] - q[False][g]) < 0.01, q[False]
    assert q[True][f] < q[True][g] - 0.1, q[True]
    cr = didpo.compute_credit(group, didpo.AdvConfig())  # the last group: no probe, no pairs
    assert cr.posterior.apart == {} and "apart" not in explain.verdict_line(*cr.posterior[1:4])
    group = [rollout.replay(task, [whole(f, g)], tiny_tokenizer, max_turns=1) for f, g in plan]
    cr = didpo.compute_credit(group, didpo.AdvConfig())
    assert explain.verdict_line(*cr.posterior[1:4]).endswith(
        "; apart (they behave differently near f's tests, so not both correct): f v1 / v2, f v2 / v3, g v1 / v2")


def test_inputs_where_verified_versions_differ_are_outside_the_task(tiny_tokenizer):
    """Two winners: f, and f_dom, which refuses a > 3 (no test asks for it); they differ on the probe's (4, 3) and
    (10, 3), so those inputs are outside the task. The loser's f_dom2 (another implementation that refuses a > 3)
    differs from f only there, so it is not apart from it; the loser's g', apart from the winners' g, is the bug."""
    f_dom = "def f(a, b):\n    if a > 3:\n        raise ValueError(a)\n    return a+b\n"
    f_dom2 = "def f(a, b):\n    assert a <= 3\n    s = b+a\n    return s\n"
    group = [rollout.replay(probed_task(), [whole(f, g)], tiny_tokenizer, max_turns=1)
             for f, g in [(F_OK, G_OK), (f_dom, G_OK), (f_dom2, G_ESC)]]
    assert [tr.reward for tr in group] == [1.0, 1.0, 0.0]
    pieces, q = verdict.posterior(group)[:2]
    f, g = (u for _, u, _ in pieces[2])
    assert q[f] > q[g] + 0.3, (q[f], q[g])
