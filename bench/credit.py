"""Credit accuracy: does an estimator put higher advantage on correct code than on its buggy twin?

    python bench/credit.py                # the full table (a few minutes: every distinct trajectory is replayed)
    python bench/credit.py --groups 40    # fewer groups per column, faster and noisier

Synthetic tasks: each task's solution has 3 independent functions (regions); each region has a
correct version and a buggy twin that differs in one token. Public tests check each region once,
hidden tests check each region 3 times; both fail the twin. A trajectory picks every region's
version at random (correct with probability 1/2) and writes it either
    whole-file:      all three regions in one fenced block, in one turn, or
    search/replace:  one SEARCH/REPLACE block per region per turn (3 turns, random order),
each trajectory in one of two writing styles (a comment line and different spacing in the code,
other prose around it: normalization must see through it), and is replayed through the
environment (`env.replay`: parsing, edits with provenance, the SmolLM2 tokenizer's tokens,
sandboxed tests). Rewards:
    binary:           R = 1 iff every hidden test passes, no step rewards;
    graded per turn:  the same R plus potential-based shaping r_t = Φ(S_t) − Φ(S_{t−1}),
                      Φ = share of public tests passed (EnvConfig.shaping_coef = 1).
Groups of G trajectories of one task are drawn with DAPO dynamic sampling, as a trainer does:
a group whose episode returns are all equal carries no signal for any estimator (every
advantage is 0) and is dropped and redrawn; how many were dropped is printed per column.

Metrics, over the same groups for every estimator:
    within-trajectory accuracy: for each trajectory and each pair (correct region, buggy region)
        in it, 1 if the correct region's tokens have the higher mean advantage, 1/2 on a tie.
        GRPO gives every token of a trajectory the same advantage: 0.5 by construction.
    token AUC: P(advantage of a correct-region token > that of a buggy-region token) over all
        region tokens of all groups of the column (ties count 1/2).
Goal (issue 8): DiDPO accuracy >= 0.90 at G = 32 and >= 0.80 at G = 8, AUC >= 0.85, in every column.

Measured (`python bench/credit.py`, seed 0; within-trajectory accuracy / token AUC):
                      whole-file binary   whole-file graded   s/r binary          s/r graded
                      G=8       G=32      G=8       G=32      G=8       G=32      G=8       G=32
    grpo              0.50/0.68 0.50/0.61 0.50/0.78 0.50/0.80 0.50/0.67 0.50/0.63 0.50/0.78 0.50/0.81
    gigpo             0.50/0.68 0.50/0.61 0.50/0.78 0.50/0.80 0.58/0.68 0.66/0.66 0.61/0.79 0.74/0.85
    didpo group_mean  0.00/0.43 0.00/0.38 0.01/0.63 0.00/0.62 0.00/0.44 0.00/0.38 0.15/0.65 0.08/0.64
    didpo contrast    1.00/0.98 1.00/0.97 1.00/0.96 1.00/0.98 1.00/0.98 1.00/0.98 0.99/0.96 1.00/0.99
group_mean subtracts the mean return of the writers of the same sub-diff, which removes its own
value (DESIGN §3 pitfall b): below GRPO. `contrast` is therefore didpo's default baseline.
Without dynamic sampling (the 27-30% of G = 8 binary groups with one reward kept, all ties)
didpo contrast scores 0.83/0.91 (WF) and 0.84/0.92 (SR) there.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import credit  # noqa: E402
import didpo  # noqa: E402
import env  # noqa: E402
import rollout  # noqa: E402
from tasks import Task, Test  # noqa: E402

# name, signature, correct body, the token that is correct, its buggy twin, public test, hidden tests
REGIONS = [
    ("add_all", "xs", "    total = 0\n    for x in xs:\n        total = total + x\n    return total\n", "+", "-",
     "add_all([1, 2, 3]) == 6", ["add_all([]) == 0", "add_all([5, 7]) == 12", "add_all([-1, 4]) == 3"]),
    ("count_even", "xs", "    n = 0\n    for x in xs:\n        if x % 2 == 0:\n            n += 1\n    return n\n",
     "== 0", "== 1", "count_even([1, 2, 4]) == 2",
     ["count_even([]) == 0", "count_even([3, 5]) == 0", "count_even([0, 6, 7]) == 2"]),
    ("max_of", "xs",
     "    best = xs[0]\n    for x in xs[1:]:\n        if x > best:\n            best = x\n    return best\n",
     ">", "<", "max_of([3, 9, 2]) == 9",
     ["max_of([5]) == 5", "max_of([-4, -1, -7]) == -1", "max_of([1, 8, 8]) == 8"]),
    ("reverse_str", "s", "    out = ''\n    for ch in s:\n        out = ch + out\n    return out\n", "ch + out",
     "out + ch", "reverse_str('abc') == 'cba'",
     ["reverse_str('') == ''", "reverse_str('ab') == 'ba'", "reverse_str('xyz!') == '!zyx'"]),
    ("factorial", "n",
     "    result = 1\n    for k in range(2, n + 1):\n        result = result * k\n    return result\n",
     "n + 1", "n", "factorial(4) == 24", ["factorial(0) == 1", "factorial(5) == 120", "factorial(3) == 6"]),
    ("is_palindrome", "s", "    t = s.lower()\n    return t == t[::-1]\n", "==", "!=",
     "is_palindrome('Abba') is True",
     ["is_palindrome('abc') is False", "is_palindrome('') is True", "is_palindrome('Racecar') is True"]),
    ("count_vowels", "s",
     "    n = 0\n    for ch in s.lower():\n        if ch in 'aeiou':\n            n += 1\n    return n\n",
     "in 'aeiou'", "not in 'aeiou'", "count_vowels('hello') == 2",
     ["count_vowels('') == 0", "count_vowels('AEIOU') == 5", "count_vowels('xyz') == 0"]),
    ("mean_of", "xs", "    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n", "/", "//",
     "mean_of([1, 2]) == 1.5", ["mean_of([]) == 0.0", "mean_of([2, 3]) == 2.5", "mean_of([1, 2, 4]) == 7 / 3"]),
    ("clamp", "x, lo, hi", "    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n",
     "return hi", "return lo", "clamp(9, 0, 5) == 5",
     ["clamp(-1, 0, 5) == 0", "clamp(3, 0, 5) == 3", "clamp(7, 1, 6) == 6"]),
]
ESTIMATORS = [("grpo", didpo.AdvConfig(algo="grpo")), ("gigpo", didpo.AdvConfig(algo="gigpo")),
              ("didpo group_mean", didpo.AdvConfig(baseline="group_mean")),
              ("didpo contrast", didpo.AdvConfig(baseline="contrast"))]
PROTOCOLS = ("whole-file", "search/replace")
REWARDS = {"binary": {"shaping_coef": 0.0}, "graded": {"shaping_coef": 1.0}}


def region_code(r, ok: bool, style: int = 0) -> str:
    """A region's code; style 1 is the same code as a different writer spells it (a comment line, spacing)."""
    name, sig, body, good, bad = r[:5]
    assert body.count(good) == 1, name
    body = body if ok else body.replace(good, bad)
    if style:  # normalization must see through this: comments dropped, whitespace folded
        body = f"    # {name}: straightforward loop\n" + body.replace(" = ", " =  ", 1)
    return f"def {name}({sig}):\n{body}"


def make_task(k: int, regions) -> Task:
    starter = "\n\n".join(f"def {r[0]}({r[1]}):\n    pass\n" for r in regions)
    public = [Test("assert", f"assert {r[5]}") for r in regions]
    hidden = [Test("assert", f"assert {h}") for r in regions for h in r[6]]
    return Task(id=f"bench/credit/{k}", prompt="Implement the three functions of solution.py.",
                files={"solution.py": starter}, public_tests=public, hidden_tests=hidden)


THOUGHTS = ("I will write all three functions.", "Here is a complete solution.")


def script(regions, ok: tuple[bool, ...], order: tuple[int, ...], protocol: str, style: int):
    """(responses, [(turn, char start, char end, correct?) for each region written])."""
    spans = []
    if protocol == "whole-file":
        resp = f"{THOUGHTS[style]}\n```python\n"
        for j, r in enumerate(regions):
            code = region_code(r, ok[j], style)
            spans.append((0, len(resp), len(resp) + len(code) - 1, ok[j]))
            resp += code + ("\n\n" if j + 1 < len(regions) else "")
        return [resp + "```\nfinish\n"], spans
    out = []
    for t, j in enumerate(order):
        r = regions[j]
        code = region_code(r, ok[j], style)
        head = f"Next, `{r[0]}`." if style == 0 else f"Now I implement {r[0]}."
        resp = f"{head}\nsolution.py\n```python\n<<<<<<< SEARCH\ndef {r[0]}({r[1]}):\n    pass\n=======\n"
        spans.append((t, len(resp), len(resp) + len(code) - 1, ok[j]))
        resp += code + ">>>>>>> REPLACE\n```\n" + ("finish\n" if t + 1 == len(order) else "")
        out.append(resp)
    return out, spans


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann–Whitney AUC with ties counted 1/2."""
    allv = np.concatenate([pos, neg])
    _, inv, counts = np.unique(allv, return_inverse=True, return_counts=True)
    rank_of = np.cumsum(counts) - (counts - 1) / 2.0     # average rank of each distinct value
    r = rank_of[inv]
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def region_tokens(tr, spans):
    out = []
    for t, s, e, ok in spans:
        turn = tr.turns[t]
        out.append((ok, [turn.span[0] + k for k in credit.tokens_in_range(turn.offsets, s, e)]))
    return out


def measure(groups, cfg) -> tuple[float, float]:
    wins, pairs, pos, neg = 0.0, 0, [], []
    for group in groups:
        advs = didpo.compute_advantages([tr for tr, _ in group], cfg)
        for (tr, spans), adv in zip(group, advs):
            a = adv.numpy().astype(np.float64)  # exact means: equal values tie exactly
            regs = [(ok, a[idx]) for ok, idx in region_tokens(tr, spans)]
            for ok, v in regs:
                (pos if ok else neg).append(v)
            means = [(ok, float(v.mean())) for ok, v in regs]
            for ok_c, mc in means:
                for ok_b, mb in means:
                    if ok_c and not ok_b:
                        pairs += 1
                        wins += 1.0 if mc > mb else 0.5 if mc == mb else 0.0
    return wins / max(pairs, 1), auc(np.concatenate(pos), np.concatenate(neg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=0, help="groups per column (default: 1600 / G trajectories)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = transformers.AutoTokenizer.from_pretrained(rollout.embedded_model_dir())
    tasks_ = [(make_task(k, REGIONS[3 * k: 3 * k + 3]), REGIONS[3 * k: 3 * k + 3]) for k in range(3)]
    for task, regions in tasks_:  # the benchmark's premise, checked: the twin fails the tests the correct code passes
        from sandbox import grade
        for j, r in enumerate(regions):
            for ok, style in itertools.product((True, False), (0, 1)):
                got = grade(region_code(r, ok, style), [task.public_tests[j]] + task.hidden_tests[3 * j: 3 * j + 3],
                            stop_on_first_failure=False)
                assert all(v.passed for v in got) == ok and (ok or not got[0].passed), (r[0], ok, got)

    cache: dict[tuple, env.Trajectory] = {}
    keys = [(k, p, rw, ok, order, style) for k in range(3) for p in PROTOCOLS for rw in REWARDS
            for ok in itertools.product((False, True), repeat=3)
            for order in ([(0, 1, 2)] if p == "whole-file" else itertools.permutations(range(3)))
            for style in (0, 1)]
    t0 = time.perf_counter()

    def run(key):
        k, p, rw, ok, order, style = key
        task, regions = tasks_[k]
        responses, spans = script(regions, ok, order, p, style)
        tr = env.replay(task, responses, tok, max_turns=len(responses), **REWARDS[rw])
        for (t, s, e, _), r in zip(spans, [regions[j] for j in order] if p != "whole-file" else regions):
            assert tr.turns[t].response[s:e].startswith(f"def {r[0]}("), "replay changed the response text"
        return key, (tr, spans)

    with ThreadPoolExecutor(2) as pool:
        for key, val in pool.map(run, keys):
            cache[key] = val
    print(f"replayed {len(cache)} distinct trajectories (env.replay: tokens, edits, sandbox) "
          f"in {time.perf_counter() - t0:.0f} s")

    rng = random.Random(args.seed)
    columns = [(p, rw, G) for p in PROTOCOLS for rw in REWARDS for G in (8, 32)]
    results: dict[tuple, tuple[float, float]] = {}
    dropped = {}
    for p, rw, G in columns:
        n_groups = args.groups or 1600 // G
        groups, drops, skipped = [], 0, []
        while len(groups) < n_groups:
            k = rng.randrange(3)
            group = []
            for _ in range(G):
                ok = tuple(rng.random() < 0.5 for _ in range(3))
                order = (0, 1, 2) if p == "whole-file" else tuple(rng.sample(range(3), 3))
                group.append(cache[(k, p, rw, ok, order, rng.randrange(2))])
            if not didpo.has_signal([tr for tr, _ in group], ESTIMATORS[0][1]):
                drops += 1
                skipped.append(group)
                continue
            groups.append(group)
        dropped[(p, rw, G)] = drops / (drops + n_groups)
        for name, cfg in ESTIMATORS:
            results[(name, p, rw, G)] = measure(groups, cfg)
        results[("contrast, no DS", p, rw, G)] = measure(groups + skipped, ESTIMATORS[-1][1])

    head = [f"{'WF' if p == 'whole-file' else 'SR'} {rw[:3]} G={G}" for p, rw, G in columns]
    print("\nwithin-trajectory accuracy / token AUC   (WF = whole-file rewrite in one turn, SR = one "
          "search/replace per region per turn; bin = binary reward, gra = graded per turn)")
    print(f"{'estimator':18s}" + "".join(f"{h:>14s}" for h in head))
    for name, _ in ESTIMATORS:
        cells = [results[(name, *c)] for c in columns]
        print(f"{name:18s}" + "".join(f"{a:8.2f}/{u:.2f}" for a, u in cells))
    print(f"{'groups dropped':18s}" + "".join(f"{dropped[c]:>14.0%}" for c in columns))
    cells = [results[("contrast, no DS", *c)] for c in columns]
    print(f"{'contrast, no DS':18s}" + "".join(f"{a:8.2f}/{u:.2f}" for a, u in cells)
          + "   (didpo contrast with the dropped groups kept: every advantage there is 0, pairs tie)")
    ok = all(results[("didpo contrast", p, rw, G)][0] >= (0.90 if G == 32 else 0.80)
             and results[("didpo contrast", p, rw, G)][1] >= 0.85 for p, rw, G in columns)
    print(f"\ngoal (didpo contrast: acc >= 0.90 @ G=32, >= 0.80 @ G=8, AUC >= 0.85 everywhere): "
          f"{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
