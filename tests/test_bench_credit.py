"""bench/credit.py keeps running: a small run of one scenario with the partial-credit reward replays its
trajectories twice (graded and fraction), checks one against the other, and prints its table; bad flags are
one line; its `rates across groups` solver learns what it should, by hand."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/credit.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_a_small_fraction_run_prints_its_table():
    r = _run("--only", "stdio", "--groups", "2", "--seeds", "0", "--pool", "32", "--rewards", "fraction")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^(stdio WF fra G=(?:8|32))\s+\d+%(.*)$", r.stdout, re.M)}
    assert set(rows) == {"stdio WF fra G=8", "stdio WF fra G=32"}, r.stdout
    # six estimators, exact (G = 8 only), the oracle at both sizes (stdio's versions have three states), across, true π
    cells = {g: len(re.findall(r"\d\.\d\d/\d\.\d\d", row)) for g, row in rows.items()}
    assert cells == {"stdio WF fra G=8": 10, "stdio WF fra G=32": 9}, rows
    assert " bin " not in r.stdout and " gra " not in r.stdout   # only the reward asked for
    assert "goal (didpo ridge" in r.stdout


def test_bad_flags_are_one_line():
    for args, flag in ((("--rewards", "binary,partial"), "--rewards"), (("--pool", "16"), "--pool")):
        r = _run(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and flag in lines[0], r.stderr


def _bench_credit():
    spec = importlib.util.spec_from_file_location("bench_credit", ROOT / "bench" / "credit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rates_across_groups_by_hand():
    """One EM round. Group 1: two of f's versions failed f's test, one (d) passed; g's version was verified. The
    verdict's own mean field reads d as q₁ = 1/(1 + π̂), π̂ = (3 + 1 − q₁)/(6 + 1 − q₁ + 2): the root of
    2q² − 14q + 9, q₁ = (7 − √31)/2. So ρ̂_f = (25 + q₁)/(50 + 3), π̂_f = (4 − q₁)/(9 − q₁), and d reads
    ρ̂/(ρ̂ + (1 − ρ̂)·π̂). Group 2 (the same task: f and g), a lone pass e of f, which the verdict reads
    q₂ = (6 − √22)/2 (test below): both groups together give ρ̂_f = (25 + q₁ + q₂)/(50 + 4),
    π̂_f = (3 + 2 − q₁ − q₂)/(6 + 4 − q₁ − q₂). With no memory, group 2 alone: ρ̂_f = (25 + q₂)/(50 + 1),
    π̂_f = (4 − q₂)/(7 − q₂)."""
    bench_credit = _bench_credit()
    f = lambda name: ("f", (name,))  # noqa: E731
    group1 = ([], {f("a"): 0.0, f("b"): 0.0, ("g", ("c",)): 1.0}, {f("d")})
    q1, q2 = (7 - 31 ** 0.5) / 2, (6 - 22 ** 0.5) / 2
    read = lambda rho, pi: rho / (rho + (1 - rho) * pi)  # noqa: E731
    for memory, (rho, pi) in ((16, ((25 + q1 + q2) / 54, (5 - q1 - q2) / (10 - q1 - q2))),
                              (0, ((25 + q2) / 51, (4 - q2) / (7 - q2)))):
        solve = bench_credit.AcrossGroups(memory=memory, rounds=1)
        got, pis = solve(*group1)
        assert abs(got[f("d")] - read((25 + q1) / 53, (4 - q1) / (9 - q1))) < 1e-6
        got, pis = solve([], {("g", ("c",)): 1.0}, {f("e")})
        assert abs(got[f("e")] - read(rho, pi)) < 1e-6 and abs(pis["f"] - pi) < 1e-6


def test_true_pi_reads_a_pass_by_hand():
    """With f's true π_f = 1/4 a pass of f reads 1/2 / (1/2 + 1/2·1/4) = 4/5. Learned from this one pass,
    π̂_f = (3 + 1 − q)/(6 + 1 − q) (Beta(3, 3) and the pass's own expected escape) with q = 1/(1 + π̂_f): the root
    of 2q² − 12q + 7, q = (6 − √22)/2 ≈ 0.655: what the default's mean field, given no rates, reads."""
    bench_credit = _bench_credit()
    f = ("f", ("x",))
    q, pi = bench_credit.true_pi({"f": 0.25})([], {}, {f})
    assert abs(q[f] - 0.8) < 1e-9 and pi == {"f": 0.25}
    learned, *_ = bench_credit.verdict.mean_field([], {}, {f})
    assert abs(learned[f] - (6 - 22 ** 0.5) / 2) < 1e-6


def test_the_solvers_read_a_caught_clause_by_hand():
    """A failed stdio test: some version there is a bug that the test catches. exact: a version seen passing that
    test is not it (b is the bug; a's pass, π_f ~ Beta(3, 3) integrated, gives odds 1/(1/2): q = 2/3). oracle: an
    assignment weighs P(the test catches one of its bugs) = 1 − Π π: (f ok, g bug) .25·(1 − .5), (f bug, g ok)
    .25·(1 − .25), both bugs .25·(1 − .25·.5); f's bugs are caught more often, so f takes more of the blame.
    A version of h that shares no clause with them is solved apart."""
    bench_credit = _bench_credit()
    caught = bench_credit.verdict.Caught
    a, b = ("f", ("a",)), ("g", ("b",))
    q, _ = bench_credit.exact([caught({a, b})], {}, {a})
    assert q[b] == 0.0 and abs(q[a] - 2 / 3) < 1e-9
    c = ("h", ("c",))  # in no clause with a or b: enumerated apart, a lone pass, 0.8/(0.8 + 0.2·1/2) = 8/9
    q, _ = bench_credit.oracle({"f": (0.5, 0.25), "g": (0.5, 0.5), "h": (0.8, 0.5)})([caught({a, b})], {}, {c})
    w = {"f ok": .25 * .5, "g ok": .25 * .75, "none": .25 * (1 - .25 * .5)}
    assert abs(q[a] - w["f ok"] / sum(w.values())) < 1e-9 and abs(q[b] - w["g ok"] / sum(w.values())) < 1e-9
    assert abs(q[c] - 8 / 9) < 1e-9


def test_every_solver_reads_versions_that_behave_apart_by_hand():
    """Two free versions of f in no clause, apart (both correct weighs A = verdict.APART): exact and oracle (ρ = 1/2)
    enumerate (ok, ok) A/4, (ok, bug) 1/4, (bug, ok) 1/4, (bug, bug) 1/4, so q = (1 + A)/(3 + A); mean field's fixed
    point q = (1 − (1 − A)q)/(2 − (1 − A)q) is the root of (1 − A)q² − (3 − A)q + 1. Apart from a verified version,
    the odds are A: q = A/(1 + A)."""
    bench_credit = _bench_credit()
    A = bench_credit.verdict.APART
    u, w, v = ("f", ("u",)), ("f", ("w",)), ("f", ("v",))
    apart = {u: [w], w: [u]}
    root = ((3 - A) - ((3 - A) ** 2 - 4 * (1 - A)) ** 0.5) / (2 * (1 - A))
    solvers = [bench_credit.exact, bench_credit.oracle({"f": (0.5, 0.5)}), bench_credit.MEAN_FIELD]
    for solve, want in zip(solvers, [(1 + A) / (3 + A), (1 + A) / (3 + A), root]):
        q = solve([], {}, frozenset(), apart=apart)[0]
        assert abs(q[u] - want) < 1e-6 and abs(q[w] - want) < 1e-6, solve
        q = solve([], {v: 1.0}, frozenset(), apart={u: [v]})[0]
        assert abs(q[u] - A / (1 + A)) < 1e-6, solve
