"""Credit accuracy: does an estimator put higher advantage on correct code than on its buggy twin?

    python bench/credit.py                # the full table, seeds 0,1 (about 10 minutes: every trajectory replayed)
    python bench/credit.py --groups 10 --seeds 0 --only repair          # one scenario, fast and noisy
    python bench/credit.py --extra "a3:ridge=3" --extra "e08:eta=0.8"  # measure more didpo settings
    python bench/credit.py --rewards fraction                           # R = share of hidden tests passed
    python bench/credit.py --diverge     # stress: a third correct implementation that behaves apart (DIVERGE)

Synthetic tasks: each task's solution has 3 independent functions (regions); each region has a
correct version and a buggy twin that differs in one token. Public tests check each region once,
hidden tests check each region 3 times; both fail the twin. A trajectory picks every region's
version at random (correct with probability 1/2) and writes it either
    whole-file:      all three regions in one fenced block, in one turn, or
    search/replace:  one SEARCH/REPLACE block per region per turn (3 turns, random order),
each trajectory in one of two writing styles (a docstring, a comment line and different spacing in the
code, other prose around it: normalization must see through it), and is replayed through the
environment (`rollout.replay`: parsing, edits with provenance, the SmolLM2 tokenizer's tokens,
sandboxed tests). Rewards:
    binary:           R = 1 iff every hidden test passes, no step rewards;
    graded per turn:  the same R plus potential-based shaping r_t = Φ(S_t) − Φ(S_{t−1}),
                      Φ = share of public tests passed (EnvConfig.shaping_coef = 1);
    fraction (--rewards): R = share of hidden tests passed (EnvConfig.reward = "fraction"), no step
                      rewards; each trajectory is replayed again (every hidden test runs), not in the default.
Groups of G trajectories of one task are drawn with DAPO dynamic sampling, as a trainer does:
a group whose episode returns are all equal carries no signal for any estimator (every
advantage is 0) and is dropped and redrawn; how many were dropped is printed per column.

Metrics, over the same groups for every estimator:
    within-trajectory accuracy: for each trajectory and each pair (correct region, buggy region)
        in it, 1 if the correct region's tokens have the higher mean advantage, 1/2 on a tie.
        GRPO gives every token of a trajectory the same advantage: 0.5 by construction.
    token AUC: P(advantage of a correct-region token > that of a buggy-region token) over all
        region tokens of all groups of the column (ties count 1/2).
Goal (issues 8, 15): DiDPO accuracy >= 0.90 at G = 32 and >= 0.80 at G = 8, AUC >= 0.85, in every column.
For each cell that misses it, the default's accuracy per seed is printed with a 95% bootstrap interval over
its groups (whole groups resampled: the pairs of one group share its evidence), to tell a miss from the draw.

Messy groups (issue 15), beside the clean ones: 3 tasks of 3 functions, each with 3 correct
implementations and 3 bugs (off-by-one, wrong operator, missing edge case: a deleted guard or a
dropped conversion; some pass the public test). Scenarios: `variants` (each function right with
p = 1/2, WF or SR), `skill` (one skill per trajectory, 0.15/0.5/0.85, correlated correctness),
`imbalanced SR` (one function right 15% of the time, the others 85%), `repair` (whole file, then a
search/replace fix of each function whose public test failed), `rewrite` (whole file, then the
whole file again: parts already right re-emitted unchanged, so only rewritten functions are
scored), `reemit WF` (the same trajectories, every function of every whole file scored: a losing
trajectory's re-emitted correct function must outrank its bugs), `helper WF` (digits/digit_sum: a helper
bug breaks its caller's tests), `stdio WF` (variants WF
as a stdin program: the same top-level glue in every file reads one line per function and prints the
results; its tests feed stdin and name no function, so a failed public test says only that some function
of the program is wrong, as in LiveCodeBench). Each messy task
draws a pool of --pool plans per seed; groups sample G distinct plans from it. The binary copy
of a replay is the graded one with step rewards zeroed (checked against a shaping_coef = 0 replay).

Estimators: `didpo ridge` is the default (AdvConfig(): ridge anchors + the verdict A^V, each function
version's posterior of being correct from the rewards and the public tests); `didpo ridge -verdict` is
the ridge alone; `group_mean` and `contrast` are shown without the verdict. Beside them, the default with its
verdict's posterior solved another way (messy columns):
    exact verdict (G = 8)  every assignment of the free versions enumerated instead of mean field: the same
                           evidence and priors (a failed stdio test is a hard clause over the versions not seen
                           passing it: the escaped or caught state of each bug would square the enumeration);
    oracle rates           exact, with each function's true rates as the priors (its rate of correct versions,
                           the share of its bugs that pass its public test), in the columns whose functions are
                           drawn independently: not an estimator, no group shows those rates. Each version is
                           correct, an escaped bug or a caught bug; ordering pieces u, v by q is right in
                           expectation, P(u ok, v bug) − P(v ok, u bug) = q_u − q_v, so this is the most an
                           estimator of the evidence can expect, were versions drawn independently (oracle());
    rates across groups    each function's rates ρ_f, π_f learned by EM from this group and the last 16 earlier
                           groups of its task (AcrossGroups: a trainer would keep them per task across steps;
                           today's estimator sees one group);
    true π                 each function's true π_f in place of π̂_f, P(correct) still 1/2: not an estimator
                           either; the gap to the default is what learning π_f in one group costs.
Region tokens are a function's body: its def line is the stub's in every trajectory, written by no one.
Measured (`python bench/credit.py`, seeds 0,1, the worst of the two; acc / AUC; drop = DAPO):
    column                drop  contrast   -verdict   default    exact      oracle     across     true π
    clean, all 8 cells  0-36%  >=0.99/0.99 >=0.99/0.95 1.00/1.00
    variants WF bin G=8    43%  0.69/0.79  0.69/0.78  0.96/0.98  0.96/0.98  0.95/0.98  0.95/0.98  0.95/0.98
    variants WF bin G=32    2%  0.83/0.86  0.80/0.84  0.98/0.99             0.98/0.99  0.98/0.99  0.98/0.99
    variants WF gra G=8     0%  0.61/0.76  0.64/0.75  0.91/0.96  0.91/0.96  0.93/0.96  0.91/0.95  0.93/0.96
    variants SR gra G=8     0%  0.68/0.76  0.71/0.74  0.95/0.97  0.95/0.97  0.96/0.98  0.95/0.97  0.96/0.98
    skill WF gra G=8        0%  0.75/0.87  0.76/0.85  0.96/0.98  0.96/0.98             0.95/0.98  0.96/0.98
    imbalanced SR bin G=8  39%  0.58/0.72  0.62/0.73  0.97/0.99  0.97/0.99  0.98/0.99  0.99/0.99  0.98/0.99
    imbalanced SR gra G=8   7%  0.58/0.71  0.60/0.70  0.95/0.97  0.95/0.97  0.98/0.99  0.96/0.98  0.95/0.98
    imbalanced SR gra G=32  0%  0.65/0.72  0.87/0.77  1.00/1.00             0.99/1.00  1.00/1.00  1.00/1.00
    repair gra G=8          2%  0.62/0.69  0.69/0.68  0.98/0.98  0.98/0.98             0.97/0.98  0.98/0.98
    rewrite bin G=8         9%  0.59/0.67  0.69/0.68  0.97/0.98  0.97/0.98             0.97/0.98  0.98/0.98
    helper WF gra G=8       0%  0.74/0.79  0.77/0.77  0.99/0.99  0.99/0.99             0.99/0.99  1.00/0.99
    stdio WF bin G=8       32%  0.72/0.83  0.75/0.80  0.96/0.99  0.95/0.99  0.97/0.99  0.96/0.99  0.97/0.99
    stdio WF bin G=32       0%  0.82/0.92  0.91/0.92  0.99/1.00             1.00/1.00  1.00/1.00  1.00/1.00
    stdio WF gra G=8        1%  0.63/0.76  0.67/0.75  0.92/0.95  0.90/0.95  0.94/0.96  0.92/0.95  0.94/0.96
    stdio WF gra G=32       0%  0.79/0.84  0.88/0.83  0.99/1.00             1.00/1.00  1.00/1.00  1.00/1.00
    reemit WF bin G=8       8%  0.58/0.70  0.69/0.69  0.97/0.98  0.97/0.98             0.97/0.98  0.98/0.99
    reemit WF gra G=8       1%  0.62/0.73  0.68/0.71  0.97/0.98  0.97/0.98             0.97/0.98  0.98/0.98
reemit WF (issue 39's re-emission class): before a re-emitted version was credited as its own piece, its tokens held
A^E alone, below a loser's bugs: `--only reemit` (seeds 0,1) read 0.95/0.96, 0.98/0.99, 0.92/0.95, 0.95/0.96 (bin
G = 8, 32, graded G = 8, 32); now 0.97/0.99, 1.00/1.00, 0.98/0.98, 1.00/0.99. A held-out check read 0.55 on its own
generator of this class; this pool never fell that low, so the 0.55 itself was not reproduced here.
(the full table, every estimator and column, is what the script prints, in about 10 minutes). The goal is met in
every column: the default reads >= 0.91/0.95 at G = 8 and >= 0.98/0.99 at G = 32 in every messy cell, 1.00/1.00
on the clean ones. What carries it is behaviour (didpo's module docstring): the replay probes each workspace's
functions on inputs near their public tests' (protocol.behaviour, one more sandboxed run per turn), and two
versions of f that give different outputs there are not both correct (weight verdict.APART = 0.2; every solver
above, exact and oracle too, takes the same pairs). Of the pool's 27 bugs 24 behave apart from the correct
versions on the probed inputs; the 3 that do not (a guard against None, a tuple's equality) are caught by hidden
tests the probe cannot guess. The pool's correct implementations agree on every probed input but one: count_char
with c = '' (the empty string counted), outside what its tests ask, so two correct versions there are apart.
Where correct code behaves apart too (`--diverge`: each function's third correct implementation refuses an input
the probe makes and no test asks for), the inputs on which verified versions differ are set aside, and the default
reads >= 0.83/0.86 at G = 8 and >= 0.91/0.93 at G = 32 but for two graded G = 8 cells, which miss the goal:
imbalanced SR 0.77/0.84 (oracle 0.97/0.95) and stdio WF 0.80/0.86 (seed 0's 0.80 [0.76, 0.83]); variants WF
graded G = 8 reads 0.83/0.86 (13 min; bench/results/credit.md has its table).
Without behaviour (`EnvConfig.probe = False`) the default misses three cells: variants WF graded G = 8 (0.79),
imbalanced SR graded G = 8 (0.78), stdio WF graded G = 8 (0.75): there the evidence of one group is thin (most
versions are written once in a group of 8, 17 of the 27 bugs pass their public test) and the rates that would
settle it (how often f's bugs pass its test, π_f) barely show; known (oracle), they lifted the cells to 0.84,
0.94 and 0.81 only. The verdict without behaviour adds 0.07-0.22 accuracy at G = 8 over the ridge alone.
Style 1 writes a docstring, as a real model does in words of its own: the verdict's versions (code_of) and diffs'
unit texts drop docstrings (kept, they split each version in two and 12 messy cells missed the goal).
Every change measured on the way, with its numbers (each idea tried on these cells, the stdio column's holes,
A^V's unit, how much memory the rates need, behaviour): bench/results/credit.md.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import itertools
import math
import random
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import credit  # noqa: E402
import didpo  # noqa: E402
import models  # noqa: E402
import rollout  # noqa: E402
import verdict  # noqa: E402
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
              ("didpo group_mean", didpo.AdvConfig(baseline="group_mean", verdict=False)),
              ("didpo contrast", didpo.AdvConfig(baseline="contrast", verdict=False)),
              ("didpo ridge -verdict", didpo.AdvConfig(baseline="ridge", verdict=False)),
              ("didpo ridge", didpo.AdvConfig(baseline="ridge"))]
PROTOCOLS = ("whole-file", "search/replace")
REWARDS = {"binary": {"shaping_coef": 0.0}, "graded": {"shaping_coef": 1.0}, "fraction": {"reward": "fraction"}}


def region_code(r, ok: bool, style: int = 0) -> str:
    """A region's code; style 1 is the same code as another writer spells it (a docstring, a comment, spacing)."""
    name, sig, body, good, bad = r[:5]
    assert body.count(good) == 1, name
    body = body if ok else body.replace(good, bad)
    if style:  # the verdict must see through this: docstrings and comments dropped, whitespace folded
        doc = f'    """Return {name} of the inputs."""\n'
        body = f"{doc}    # {name}: straightforward loop\n" + body.replace(" = ", " =  ", 1)
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


# --- messy groups (issue 15): several correct implementations, several kinds of bug -------------
# name, signature, correct bodies (3 implementations), buggy bodies (off-by-one, wrong operator,
# missing edge case: a deleted guard or a dropped conversion), public test, hidden tests.
# Every bug fails some hidden test; some pass the public one (feedback does not always see them).
MESSY = [
    ("sum_to", "n",
     ["    total = 0\n    for k in range(1, n + 1):\n        total += k\n    return total\n",
      "    if n <= 0:\n        return 0\n    return n * (n + 1) // 2\n",
      "    total, k = 0, n\n    while k > 0:\n        total += k\n        k -= 1\n    return total\n"],
     ["    total = 0\n    for k in range(1, n):\n        total += k\n    return total\n",
      "    if n <= 0:\n        return 0\n    return n * (n - 1) // 2\n",
      "    return n * (n + 1) // 2\n"],
     "sum_to(4) == 10", ["sum_to(0) == 0", "sum_to(-3) == 0", "sum_to(10) == 55", "sum_to(1) == 1"]),
    ("count_pos", "xs",
     ["    n = 0\n    for x in xs:\n        if x is None:\n            continue\n"
      "        if x > 0:\n            n += 1\n"
      "    return n\n",
      "    return sum(1 for x in xs if x is not None and x > 0)\n",
      "    return len([x for x in xs if x and x > 0])\n"],
     ["    return len([x for x in xs[1:] if x and x > 0])\n",
      "    return sum(1 for x in xs if x is not None and x >= 0)\n",
      "    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n    return n\n"],
     "count_pos([3, -1, 2]) == 2", ["count_pos([]) == 0", "count_pos([0, 5]) == 1", "count_pos([None, 4]) == 1",
                                    "count_pos([7, 0, -2, 1]) == 2"]),
    ("last_index", "xs, v",
     ["    for i in range(len(xs) - 1, -1, -1):\n        if xs[i] == v:\n            return i\n    return -1\n",
      "    idx = -1\n    for i, x in enumerate(xs):\n        if x == v:\n            idx = i\n    return idx\n",
      "    if v not in xs:\n        return -1\n    return len(xs) - 1 - xs[::-1].index(v)\n"],
     ["    for i in range(len(xs) - 1, 0, -1):\n        if xs[i] == v:\n            return i\n    return -1\n",
      "    idx = -1\n    for i, x in enumerate(xs):\n        if x != v:\n            idx = i\n    return idx\n",
      "    return len(xs) - 1 - xs[::-1].index(v)\n"],
     "last_index([1, 2, 1], 1) == 2", ["last_index([], 3) == -1", "last_index([5, 6], 5) == 0",
                                       "last_index([4, 4, 4], 4) == 2", "last_index([1], 2) == -1"]),
    ("clip_list", "xs, hi",
     ["    if hi is None:\n        return list(xs)\n    return [min(x, hi) for x in xs]\n",
      "    out = []\n    for x in xs:\n        out.append(x if hi is None or x <= hi else hi)\n    return out\n",
      "    out = list(xs)\n    for i in range(len(out)):\n        if hi is not None and out[i] > hi:\n"
      "            out[i] = hi\n    return out\n"],
     ["    out = list(xs)\n    for i in range(len(out) - 1):\n        if hi is not None and out[i] > hi:\n"
      "            out[i] = hi\n    return out\n",
      "    if hi is None:\n        return list(xs)\n    return [max(x, hi) for x in xs]\n",
      "    return [min(x, hi) for x in xs]\n"],
     "clip_list([1, 5, 3], 4) == [1, 4, 3]", ["clip_list([], 2) == []", "clip_list([9, 9], 9) == [9, 9]",
                                              "clip_list([7, 1], None) == [7, 1]", "clip_list([6, 8], 5) == [5, 5]"]),
    ("first_word", "s",
     ["    parts = s.split()\n    if not parts:\n        return ''\n    return parts[0]\n",
      "    s = s.strip()\n    i = 0\n    while i < len(s) and not s[i].isspace():\n        i += 1\n    return s[:i]\n",
      "    for w in s.split():\n        return w\n    return ''\n"],
     ["    s = s.strip()\n    i = 0\n    while i < len(s) and not s[i].isspace():\n        i += 1\n"
      "    return s[:i + 1]\n",
      "    s = s.strip()\n    i = 0\n    while i < len(s) and s[i].isspace():\n        i += 1\n    return s[:i]\n",
      "    parts = s.split()\n    return parts[0]\n"],
     "first_word('hello world') == 'hello'", ["first_word('') == ''", "first_word('  a b') == 'a'",
                                              "first_word('one two') == 'one'", "first_word('   ') == ''"]),
    ("safe_div", "a, b",
     ["    if b == 0:\n        return None\n    return a / b\n",
      "    try:\n        return a / b\n    except ZeroDivisionError:\n        return None\n",
      "    return None if b == 0 else a / b\n"],
     ["    if b < 1:\n        return None\n    return a / b\n",
      "    return None if b == 0 else a // b\n",
      "    return a / b\n"],
     "safe_div(6, 4) == 1.5", ["safe_div(1, 0) is None", "safe_div(-6, 3) == -2.0", "safe_div(5, -2) == -2.5",
                               "safe_div(0, 7) == 0.0"]),
    ("count_char", "s, c",
     ["    return s.lower().count(c.lower())\n",
      "    n = 0\n    for ch in s.lower():\n        if ch == c.lower():\n            n += 1\n    return n\n",
      "    return sum(1 for ch in s if ch.lower() == c.lower())\n"],
     ["    return sum(1 for ch in s[1:] if ch.lower() == c.lower())\n",
      "    n = 0\n    for ch in s.lower():\n        if ch != c.lower():\n            n += 1\n    return n\n",
      "    return s.count(c)\n"],
     "count_char('banana', 'a') == 3", ["count_char('', 'x') == 0", "count_char('Aa', 'a') == 2",
                                        "count_char('abc', 'b') == 1", "count_char('bob', 'b') == 2"]),
    ("running_max", "xs",
     ["    out = []\n    best = None\n    for x in xs:\n        best = x if best is None or x > best else best\n"
      "        out.append(best)\n    return out\n",
      "    out = []\n    for i in range(len(xs)):\n        out.append(max(xs[: i + 1]))\n    return out\n",
      "    if not xs:\n        return []\n    out = [xs[0]]\n    for x in xs[1:]:\n"
      "        out.append(max(out[-1], x))\n"
      "    return out\n"],
     ["    out = []\n    for i in range(len(xs)):\n        out.append(max(xs[: i + 2]))\n    return out\n",
      "    out = []\n    best = None\n    for x in xs:\n        best = x if best is None or x < best else best\n"
      "        out.append(best)\n    return out\n",
      "    out = [xs[0]]\n    for x in xs[1:]:\n        out.append(max(out[-1], x))\n    return out\n"],
     "running_max([1, 3, 2]) == [1, 3, 3]", ["running_max([]) == []", "running_max([5]) == [5]",
                                             "running_max([2, 1, 4]) == [2, 2, 4]",
                                             "running_max([-1, -3]) == [-1, -1]"]),
    ("is_sorted", "xs",
     ["    for i in range(len(xs) - 1):\n        if xs[i] > xs[i + 1]:\n            return False\n    return True\n",
      "    return all(a <= b for a, b in zip(xs, xs[1:]))\n",
      "    return list(xs) == sorted(xs)\n"],
     ["    for i in range(len(xs) - 2):\n        if xs[i] > xs[i + 1]:\n            return False\n    return True\n",
      "    return all(a < b for a, b in zip(xs, xs[1:]))\n",
      "    return xs == sorted(xs)\n"],
     "is_sorted([1, 2, 5]) is True", ["is_sorted([]) is True", "is_sorted([3, 1]) is False",
                                      "is_sorted([2, 2, 3]) is True", "is_sorted((1, 2)) is True",
                                      "is_sorted([1, 3, 2]) is False"]),
]
# A helper whose bug breaks its caller's tests: digit_sum calls digits; the third region is independent.
HELPER = [
    ("digits", "n",
     ["    return [int(ch) for ch in str(abs(n))]\n",
      "    n = abs(n)\n    out = []\n    while True:\n        out.append(n % 10)\n        n //= 10\n"
      "        if n == 0:\n"
      "            return out[::-1]\n"],
     ["    return [int(ch) for ch in str(abs(n))[1:]]\n",
      "    n = abs(n)\n    out = []\n    while True:\n        out.append(n // 10)\n        n //= 10\n"
      "        if n == 0:\n"
      "            return out[::-1]\n",
      "    return [int(ch) for ch in str(n)]\n"],
     "digits(305) == [3, 0, 5]", ["digits(0) == [0]", "digits(-42) == [4, 2]", "digits(7) == [7]"]),
    ("digit_sum", "n",
     ["    return sum(digits(n))\n", "    total = 0\n    for d in digits(n):\n        total += d\n    return total\n"],
     ["    return sum(digits(n)[1:])\n", "    return max(digits(n))\n"],
     "digit_sum(123) == 6", ["digit_sum(-45) == 9", "digit_sum(0) == 0", "digit_sum(909) == 18"]),
    MESSY[5],
]
MESSY_TASKS = [MESSY[0:3], MESSY[3:6], MESSY[6:9]]
# --diverge: each function's third correct implementation refuses (raises) an input the probe makes and no test asks
# for, so it behaves apart from the other two, as correct code that checks its input's domain does: it is correct by
# the reward, and only the inputs where verified versions differ (didpo.verdict's `outside`) tell it from a bug.
DIVERGE = {"sum_to": "n < -3", "count_pos": "len(xs) > 4", "last_index": "v > 5",
           "clip_list": "hi is not None and hi < 0", "first_word": "s.isupper()", "safe_div": "a > 10",
           "count_char": "len(s) > 8", "running_max": "len(xs) > 4", "is_sorted": "len(xs) > 4"}


def diverge() -> None:
    """Swap in --diverge's third correct implementations (MESSY, MESSY_TASKS and HELPER's third region)."""
    for i, r in enumerate(MESSY):
        third = f"    if {DIVERGE[r[0]]}:\n        raise ValueError('outside the task')\n" + r[2][2]
        MESSY[i] = (r[0], r[1], [r[2][0], r[2][1], third], *r[3:])
    MESSY_TASKS[:] = [MESSY[0:3], MESSY[3:6], MESSY[6:9]]
    HELPER[2] = MESSY[5]
# scenario -> what a trajectory does (see plan()); the helper scenario uses the HELPER task only
SCENARIOS = ("variants WF", "variants SR", "skill WF", "imbalanced SR", "repair", "rewrite", "helper WF", "stdio WF",
             "reemit WF")  # a new scenario goes last: the ones before it keep their draws (one rng per seed)
# scenario -> each function's rate of correct versions, where they are independent (the oracle's ρ_f)
P_OK = {"variants WF": (0.5,) * 3, "variants SR": (0.5,) * 3, "stdio WF": (0.5,) * 3,
        "imbalanced SR": (0.15, 0.85, 0.85)}


def glue(regions) -> str:
    """A stdio program's top-level code, the same in every trajectory: one input line per function, its result
    printed; the tests feed it stdin and name no function, so they judge the whole program."""
    names = ", ".join(r[0] for r in regions)
    loop = f"for fn, line in zip(({names}), sys.stdin.read().splitlines()):\n"
    return "import sys\nfrom ast import literal_eval\n\n" + loop + "    print(repr(fn(*literal_eval(line))))\n"


def stdio_tests(regions) -> tuple[list[Test], list[Test]]:
    """(public, hidden) stdio tests of the program: case k of every function's tests in one input, the expected
    output computed with each function's first correct implementation."""
    env: dict = {}
    for r in regions:
        exec(version_code(r, 0), env)  # the bench's own code

    def test(cases):
        args = [c.split("(", 1)[1].rsplit(")", 1)[0] for c in (x.split(" == ")[0].split(" is ")[0] for x in cases)]
        got = [repr(eval(f"{r[0]}({a})", env)) for r, a in zip(regions, args)]
        return Test("stdio", "".join(f"({a},)\n" for a in args), "".join(g + "\n" for g in got))
    return [test([r[4] for r in regions])], [test(cs) for cs in zip(*(r[5][:4] for r in regions))]


def version_code(r, v: int, style: int = 0) -> str:
    """Version v of region r: v < len(correct) is a correct implementation, the rest are its bugs."""
    name, sig, good, bad = r[:4]
    body = (good + bad)[v]
    if style:  # a docstring over two lines, a comment, spacing
        doc = f'    """{name}, my way.\n\n    Written as I see it.\n    """\n'
        body = f"{doc}    # {name}: my approach\n" + body.replace(" = ", " =  ", 1)
    return f"def {name}({sig}):\n{body}"


def messy_task(k: int, regions, stdio: bool = False) -> Task:
    starter = "\n\n".join(f"def {r[0]}({r[1]}):\n    pass\n" for r in regions)
    public, hidden = stdio_tests(regions) if stdio else ([Test("assert", f"assert {r[4]}") for r in regions],
                                                         [Test("assert", f"assert {h}") for r in regions for h in r[5]])
    return Task(id=f"bench/credit/messy/{k}", prompt="Implement the three functions of solution.py.",
                files={"solution.py": starter}, public_tests=public, hidden_tests=hidden)


def plan(scn: str, regions, rng: random.Random, public_ok) -> tuple:
    """One trajectory of a scenario as a hashable plan: (style, turns), each turn ("wf", versions) or ("sr", j, v)."""
    n_ok = [len(r[2]) for r in regions]

    def pick(j, p_ok):
        return rng.randrange(n_ok[j]) if rng.random() < p_ok else n_ok[j] + rng.randrange(len(regions[j][3]))

    style = rng.randrange(2)
    if scn in ("variants WF", "helper WF", "stdio WF"):
        return style, (("wf", tuple(pick(j, 0.5) for j in range(3))),)
    if scn == "skill WF":  # correctness correlated across functions: one skill per trajectory
        s = rng.choice((0.15, 0.5, 0.85))
        return style, (("wf", tuple(pick(j, s) for j in range(3))),)
    if scn in ("variants SR", "imbalanced SR"):
        return style, tuple(("sr", j, pick(j, P_OK[scn][j])) for j in rng.sample(range(3), 3))
    vs = tuple(pick(j, 0.5) for j in range(3))
    turns = [("wf", vs)]
    failing = [j for j in range(3) if not public_ok[j][vs[j]]]
    if scn == "repair":  # after feedback: search/replace fixes of the functions whose public test failed
        for j in failing:
            if rng.random() < 0.8:
                turns.append(("sr", j, pick(j, 0.7)))
    else:  # rewrite: the whole file again, the parts already right re-emitted unchanged
        if failing:
            turns.append(("wf", tuple(pick(j, 0.7) if j in failing or vs[j] >= n_ok[j] and rng.random() < 0.5
                                      else vs[j] for j in range(3))))
    return style, tuple(turns)


def messy_script(regions, p: tuple, tail: str = "", reemit: bool = False):
    """(responses, spans): spans = (turn, char start, char end, correct?) of each function a turn wrote anew
    (with reemit, of every function a whole file writes, re-emitted ones too); a whole file ends with `tail`
    (a stdio program's top-level code)."""
    style, turns = p
    cur: list[int | None] = [None] * 3
    out, spans = [], []
    for t, step in enumerate(turns):
        last = t + 1 == len(turns)
        if step[0] == "wf":
            resp = f"{THOUGHTS[style]}\n```python\n"
            for j, r in enumerate(regions):
                code = version_code(r, step[1][j], style)
                if cur[j] != step[1][j] or reemit:  # re-emitted code is not in the diff: scored in reemit WF
                    spans.append((t, len(resp), len(resp) + len(code) - 1, step[1][j] < len(r[2])))
                resp += code + ("\n\n" if j < 2 else "")
            out.append(resp + ("\n\n" + tail if tail else "") + "```\n" + ("finish\n" if last else ""))
            cur = list(step[1])
        else:
            _, j, v = step
            r = regions[j]
            old = version_code(r, cur[j], style) if cur[j] is not None else f"def {r[0]}({r[1]}):\n    pass\n"
            head = f"Next, `{r[0]}`." if style == 0 else f"Now I fix {r[0]}."
            resp = f"{head}\nsolution.py\n```python\n<<<<<<< SEARCH\n{old}=======\n"
            code = version_code(r, v, style)
            spans.append((t, len(resp), len(resp) + len(code) - 1, v < len(r[2])))
            out.append(resp + code + ">>>>>>> REPLACE\n```\n" + ("finish\n" if last else ""))
            cur[j] = v
    return out, spans


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann–Whitney AUC with ties counted 1/2."""
    allv = np.concatenate([pos, neg])
    _, inv, counts = np.unique(allv, return_inverse=True, return_counts=True)
    rank_of = np.cumsum(counts) - (counts - 1) / 2.0     # average rank of each distinct value
    r = rank_of[inv]
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def region_tokens(tr, spans):
    """(correct?, token indices) of each scored function: its body, after the def line, which is the stub's
    in every trajectory (written by no one, it holds A^E alone, and would weigh a mean by the body's length)."""
    out = []
    for t, s, e, ok in spans:
        turn = tr.turns[t]
        s = turn.response.index("\n", s) + 1
        out.append((ok, [turn.span[0] + k for k in credit.tokens_in_range(turn.offsets, s, e)]))
    return out


def measure(groups, cfg, per_group: list | None = None) -> tuple[float, float]:
    """(within-trajectory accuracy, token AUC); per_group, if given, receives each group's (wins, pairs)."""
    counts, pos, neg = [], [], []
    for group in groups:
        advs = didpo.compute_advantages([tr for tr, _ in group], cfg)
        wins, pairs = 0.0, 0
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
        counts.append((wins, pairs))
    if per_group is not None:
        per_group.extend(counts)
    wins, pairs = (sum(x) for x in zip(*counts)) if counts else (0.0, 0)
    return wins / max(pairs, 1), auc(np.concatenate(pos), np.concatenate(neg))


def interval(per_group: list[tuple[float, int]], draws: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the accuracy over groups (the unit that is drawn: pairs of one group share
    its evidence), resampling whole groups with replacement; it measures how far the group draw moves a cell."""
    w, n = np.array(per_group, dtype=np.float64).T
    idx = np.random.default_rng(0).integers(0, len(w), size=(draws, len(w)))
    acc = w[idx].sum(1) / np.maximum(n[idx].sum(1), 1)
    return float(np.quantile(acc, 0.025)), float(np.quantile(acc, 0.975))


def _assignments(clauses: list[set], known: dict, passed: set, apart: dict) -> tuple[dict, np.ndarray]:
    """(free version -> its column, every assignment of the free versions [S, n], 1 = correct); at most 2^22."""
    free = sorted(({u for c in clauses for u in c} | set(passed) | set(apart)) - known.keys())
    if len(free) > 22:
        raise OverflowError(f"{len(free)} free versions")
    return {u: k for k, u in enumerate(free)}, ((np.arange(2 ** len(free))[:, None] >> np.arange(len(free))) & 1
                                                ).astype(bool)


def _ruled_out(w: np.ndarray, A: np.ndarray, col: dict, clauses: list[set], passed: set) -> np.ndarray:
    """w with every assignment that leaves a clause without a bug set to 0; a caught clause (a failed program test)
    needs a bug among its versions not seen passing."""
    for c in clauses:  # a losing final workspace holds a bug; its known versions here are all correct
        caught = isinstance(c, verdict.Caught)
        if cols := [col[u] for u in c if u in col and not (caught and u in passed)]:
            w = w * ~A[:, cols].all(1)
    return w  # a clause with no free version to blame (all verified) is left out, as in mean field


def _apart(w: np.ndarray, ok: np.ndarray, col: dict, known: dict, apart: dict) -> np.ndarray:
    """w times verdict.APART for each pair of versions that behave apart and are both correct in an assignment
    (ok [S, n] says which versions are correct); a known correct partner counts, each pair once."""
    for u, ws in apart.items():
        for w_ in ws:
            if u in col and (w_ in col and u < w_ or known.get(w_) == 1.0):
                both = ok[:, col[u]] & (ok[:, col[w_]] if w_ in col else True)
                w = w * np.where(both, verdict.APART, 1.0)
    return w


def _marginals(w: np.ndarray, A: np.ndarray, col: dict) -> dict:
    return {u: float(w @ A[:, k] / w.sum()) for u, k in col.items()}


def exact(clauses: list[set], known: dict, passed: set = frozenset(), apart: dict | None = None) -> tuple[dict, dict]:
    """didpo's verdict solved exactly instead of by mean field: the same evidence and priors, every assignment
    of the free versions enumerated, each π_f integrated out (at most 2^22 assignments; a larger group raises).
    One approximation: a caught clause (stdio) is the hard rule that a version there not seen passing is a bug;
    the escaped or caught state of each bug, which mean field keeps, would square the enumeration."""
    col, A = _assignments(clauses, known, passed, apart := apart or {})
    w = _ruled_out(verdict.PRIOR ** A.sum(1) * (1 - verdict.PRIOR) ** (~A).sum(1), A, col, clauses, passed)  # [S]
    w = _apart(w, A, col, known, apart)
    b, failed = verdict.ESCAPE, Counter(u[0] for u, v in known.items() if v == 0.0)
    for f in sorted({u[0] for u in passed}):  # ∫ π^(bugs that passed) (1 - π)^(failed) Beta(π; b, b) dπ
        cols = [col[u] for u in sorted(passed) if u[0] == f]
        lbeta = np.array([math.lgamma(b + k) + math.lgamma(b + failed[f]) - math.lgamma(2 * b + k + failed[f])
                          for k in range(len(cols) + 1)])
        w = w * np.exp(lbeta[(~A[:, cols]).sum(1)] - lbeta[0])
    return _marginals(w, A, col), {}


def oracle(rates: dict[str, tuple[float, float]]):
    """The verdict's evidence solved exactly with each function's true rates in place of the priors. Each free version
    is correct, an escaped bug (it passes f's public test) or a caught bug (it fails it), with probability ρ_f,
    (1 − ρ_f)·π_f and (1 − ρ_f)(1 − π_f): ρ_f the rate its scenario draws a correct version, π_f the share of f's bugs
    that pass (glue, the "" version, is always correct). A version seen passing is not caught; a loss needs a bug
    among its versions, a failed program test (caught clause) a caught one. Every assignment of the states is
    enumerated, apart for each set of versions that share clauses (given the rates, the sets are independent).
    Not an estimator: the Bayes posterior of the evidence when the rates, which a group of 8 barely shows, are known
    (versions drawn independently at those rates), and so the most accuracy an estimator of it can expect:
    ordering pieces u, v by q is right in expectation, P(u ok, v bug) − P(v ok, u bug) = q_u − q_v."""
    def solve(clauses: list[set], known: dict, passed: set = frozenset(), apart: dict | None = None):
        apart = apart or {}
        free = sorted(({u for c in clauses for u in c} | set(passed) | set(apart)) - known.keys())
        part = {u: frozenset([u]) for u in free}  # u -> the versions that share a clause with it, transitively
        for c in [*clauses, *({u, *ws} for u, ws in apart.items())]:
            joined = frozenset().union(*(part[u] for u in c if u in part))
            part.update(dict.fromkeys(joined, joined))
        q = {}
        for vs in sorted(set(part.values()), key=min):
            q |= _enumerate(sorted(vs), [c for c in clauses if not c.isdisjoint(vs)], passed, rates,
                            known, {u: ws for u, ws in apart.items() if u in vs})
        return q, {u[0]: rates.get(u[0], (1.0, 0.0))[1] for u in free}
    return solve


def _enumerate(free: list, clauses: list[set], passed: set, rates: dict, known: dict, apart: dict) -> dict:
    """oracle()'s posterior q of each version in `free` (sorted), every assignment of their states enumerated."""
    col, tested = {u: k for k, u in enumerate(free)}, {u for c in clauses if isinstance(c, verdict.Caught) for u in c}
    sizes = [2 if u in passed or u not in tested else 3 for u in free]  # 3 where a caught clause tells them apart
    if (n := math.prod(sizes)) > 2 ** 24:
        raise OverflowError(f"{n} assignments")
    S = np.empty((n, len(free)), dtype=np.int8)                                     # [N, n] each one's state
    for k, stride in enumerate(np.cumprod([1, *sizes[:-1]], dtype=np.int64)):
        S[:, k] = np.arange(n) // stride % sizes[k]
    rho, pi = np.array([rates.get(u[0], (1.0, 0.0)) for u in free]).T.reshape(2, len(free))
    escaped = np.where([u in passed or u in tested for u in free], pi, 1.0)  # else state 1 is any bug
    P = np.stack([rho, (1 - rho) * escaped, (1 - rho) * (1 - pi)], 1)               # [n, 3]: ok, escaped, caught
    w = np.ones(n)                                                                  # [N]
    for k in range(len(free)):
        w *= P[k, S[:, k]]
    for c in clauses:
        if cols := [col[u] for u in c if u in col]:
            w = w * (S[:, cols] == 2 if isinstance(c, verdict.Caught) else S[:, cols] >= 1).any(1)
    w = _apart(w, S == 0, col, known, apart)
    return {u: float(w @ (S[:, k] == 0) / w.sum()) for u, k in col.items()}


class AcrossGroups:
    """What the verdict gives with each function's rates learned from the earlier groups of its task as well as from
    this one (not an estimator today: a trainer would keep the groups' evidence per task across steps). The rates are
    the ones that best explain them all, by EM: `rounds` times, each group (the last `memory` earlier groups of the
    task, and this one) is solved by the default's mean field with the current rates, and each function's expected
    correct versions (Σ q over the n versions of f in each group), escaped bugs (B_f = Σ 1 − q − k over those with a
    public result) and caught ones (F_f = Σ k, and the versions that failed their tests) give
    ρ̂_f = (a + Σ q)/(2a + n) and π̂_f = (b + B_f)/(2b + B_f + F_f); the first round reads the verdict's own
    posteriors (π̂_f from the group, P(correct) 1/2). This group is then solved by the same mean field with the final
    rates. ρ_f ~ Beta(a, a), a = 25: a function's rate of correct versions moves off 1/2 only where many groups say
    so (a = 2 or 10: imbalanced SR up, variants and stdio down; bench/results/credit.md); π_f ~ Beta(3, 3), as
    the verdict's own prior. A task is the set of functions its groups write."""

    def __init__(self, memory: int = 16, rounds: int = 5, a: float = 25.0):
        self.memory, self.rounds, self.a = memory, rounds, a
        self.groups = defaultdict(list)  # task (its functions) -> the evidence of its earlier groups

    def __call__(self, clauses: list[set], known: dict, passed: set = frozenset(), apart: dict | None = None):
        task = frozenset(u[0] for u in [*known, *passed, *(u for c in clauses for u in c)] if u[0])
        data = self.groups[task][len(self.groups[task]) - self.memory:] + [(clauses, known, passed, apart)]
        rates: tuple[dict, dict] = ({}, {})
        for _ in range(self.rounds):
            counts = defaultdict(lambda: [0.0, 0, 0.0, 0.0])  # f -> [Σ q, versions, B_f, F_f]
            for cs, kn, ps, ap in data:
                q, _, caught = MEAN_FIELD(cs, kn, ps, rates=rates, apart=ap)
                for u, v in (kn | q).items():
                    c = counts[u[0]]
                    c[0], c[1] = c[0] + v, c[1] + 1
                    if u in ps or u in caught:
                        c[2], c[3] = c[2] + max(1.0 - v - caught.get(u, 0.0), 0.0), c[3] + caught.get(u, 0.0)
                    c[3] += u in kn and v == 0.0
            rates = ({f: (self.a + c[0]) / (2 * self.a + c[1]) for f, c in counts.items() if f},
                     {f: (verdict.ESCAPE + c[2]) / (2 * verdict.ESCAPE + c[2] + c[3]) for f, c in counts.items() if f})
        self.groups[task].append((clauses, known, passed, apart))
        return MEAN_FIELD(clauses, known, passed, rates=rates, apart=apart)[:2]


MEAN_FIELD = verdict.mean_field  # the default's solver, kept: measure_solved swaps verdict.mean_field out


def true_pi(pi: dict[str, float]):
    """The default's mean field with each function's true π_f (the share of its bugs that pass its public test) in
    place of π̂_f, learned from one group; the prior's P(correct) = 1/2 is kept. Not an estimator: it splits a cell's
    gap to `oracle rates` into what learning π_f costs and what the rates of correct versions (ρ_f) add."""
    pi = {f: min(max(p, 1e-9), 1 - 1e-9) for f, p in pi.items()}  # off 0 and 1: the mean field takes logs
    return lambda clauses, known, passed=frozenset(), apart=None: MEAN_FIELD(clauses, known, passed, rates=({}, pi),
                                                                             apart=apart)[:2]


EXACT, ORACLE, ACROSS, TRUE_PI = "exact verdict", "oracle rates", "rates across groups", "true π"
SOLVED = [EXACT, ORACLE, ACROSS, TRUE_PI]  # the default with its posterior solved another way (messy columns)


def measure_solved(groups, solve) -> tuple[float, float]:
    """measure() of the default estimator with its verdict's posterior solved by `solve` instead of mean field
    (exact: G = 8 only, the enumeration is 2^free; oracle(rates) enumerates each set of versions apart)."""
    mean_field, verdict.mean_field = verdict.mean_field, solve
    try:
        return measure(groups, didpo.AdvConfig())
    finally:
        verdict.mean_field = mean_field


def draw(rng, G, what, rw, cache, pools):
    """One group of G (trajectory, spans) of a column: clean draws fresh, messy samples its task's pool."""
    if what in PROTOCOLS:
        k = rng.randrange(3)
        return [cache[("clean", what, k, tuple(rng.random() < 0.5 for _ in range(3)),
                       (0, 1, 2) if what == "whole-file" else tuple(rng.sample(range(3), 3)), rng.randrange(2))][rw]
                for _ in range(G)]
    k = 3 if what == "helper WF" else rng.randrange(3)
    return [cache[key][rw] for key in rng.sample(pools[(what, k)], G)]


def draw_groups(rng, G, n_groups, cfg, draw_one):
    """n_groups groups with DAPO dynamic sampling (all-equal returns dropped, redrawn); returns (kept, dropped)."""
    groups, skipped = [], []
    while len(groups) < n_groups:
        group = draw_one()
        if didpo.has_signal([tr for tr, _ in group], cfg):
            groups.append(group)
        else:
            skipped.append(group)
    return groups, skipped


def check_premise(task, regions, code_of, n_versions) -> list[list[bool]]:
    """Every version passes all its tests iff it is correct; returns whether each version passes its public test."""
    from sandbox import grade
    public_ok = []
    for j, r in enumerate(regions):
        row = []
        for v in range(n_versions(r)):
            others = "\n\n".join(code_of(q, 0, 0) for q in regions[:j])  # a caller needs its helper (correct)
            code = (others + "\n\n" if others else "") + code_of(r, v, 0)
            tests = [Test("assert", f"assert {r[4]}")] + [Test("assert", f"assert {h}") for h in r[5]]
            got = grade(code, tests, stop_on_first_failure=False)
            assert all(x.passed for x in got) == (v < len(r[2])), (r[0], v, got)
            row.append(got[0].passed)
        public_ok.append(row)
    return public_ok


def check_stdio(task, regions, public_ok) -> None:
    """The stdio program with every function correct passes all its tests; with one version swapped in, it passes
    the hidden tests iff that version is correct, and the public test as that version's own public test does."""
    from sandbox import grade
    for j, r in enumerate(regions):
        for v in range(len(r[2]) + len(r[3])):
            code = "\n\n".join(version_code(q, v if q is r else 0) for q in regions) + "\n\n" + glue(regions)
            got = grade(code, task.public_tests + task.hidden_tests, stop_on_first_failure=False)
            assert got[0].passed == public_ok[j][v], (r[0], v, got)
            assert all(x.passed for x in got[1:]) == (v < len(r[2])), (r[0], v, got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=0, help="groups per column and seed (default: 800 / G trajectories)")
    ap.add_argument("--seeds", type=str, default="0,1", help="comma-separated seeds; the table shows the worst")
    ap.add_argument("--pool", type=int, default=64, help="distinct trajectories per messy task and seed")
    ap.add_argument("--only", type=str, default="", help="run only scenarios whose name contains this")
    ap.add_argument("--rewards", type=str, default="binary,graded", help=f"comma-separated, of {', '.join(REWARDS)}")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME:FIELD=V,...",
                    help="one more didpo estimator to measure, e.g. 'a=3:baseline=ridge,ridge=3'")
    ap.add_argument("--diverge", action="store_true",
                    help="a stress pool: each function's third correct implementation behaves apart (DIVERGE)")
    args = ap.parse_args()
    if args.diverge:
        diverge()
    for spec in args.extra:
        name, _, fields = spec.partition(":")
        types = {f.name: type(f.default) for f in dataclasses.fields(didpo.AdvConfig)}
        kv = dict(x.split("=", 1) for x in fields.split(",") if x)
        kv = {k: v == "True" if types[k] is bool else types[k](v) for k, v in kv.items()}
        ESTIMATORS.append((name, didpo.AdvConfig(**kv)))
    seeds = [int(x) for x in args.seeds.split(",")]
    rewards = args.rewards.split(",")
    if args.pool < 32:
        sys.exit(f"bench/credit.py: --pool {args.pool}; a group of 32 samples distinct plans, so pass --pool >= 32")
    if not set(rewards) <= REWARDS.keys() or not rewards:
        sys.exit(f"bench/credit.py: --rewards {args.rewards!r}; use a comma-separated list of {', '.join(REWARDS)}")
    torch.set_num_threads(1)
    tok = transformers.AutoTokenizer.from_pretrained(models.embedded_model_dir())
    t0 = time.perf_counter()
    clean_tasks = [(make_task(k, REGIONS[3 * k: 3 * k + 3]), REGIONS[3 * k: 3 * k + 3]) for k in range(3)]
    for task, regions in clean_tasks:  # the clean premise: the twin fails the tests the correct code passes
        from sandbox import grade
        for j, r in enumerate(regions):
            for ok, style in itertools.product((True, False), (0, 1)):
                got = grade(region_code(r, ok, style), [task.public_tests[j]] + task.hidden_tests[3 * j: 3 * j + 3],
                            stop_on_first_failure=False)
                assert all(v.passed for v in got) == ok and (ok or not got[0].passed), (r[0], ok, got)
    messy_tasks = [(messy_task(k, rs), rs) for k, rs in enumerate(MESSY_TASKS)] + [(messy_task(3, HELPER), HELPER)]
    public_ok = [check_premise(task, rs, version_code, lambda r: len(r[2]) + len(r[3])) for task, rs in messy_tasks]
    stdio = [(messy_task(4 + k, rs, stdio=True), rs) for k, rs in enumerate(MESSY_TASKS)]  # k -> stdio task 4 + k
    for (task, rs), ok in zip(stdio, public_ok):
        check_stdio(task, rs, ok)
    print(f"checked every version against its tests in {time.perf_counter() - t0:.0f} s")
    pi = {r[0]: float(np.mean(ok[j][len(r[2]):])) for (_, rs), ok in zip(messy_tasks, public_ok)
          for j, r in enumerate(rs)}  # f -> the share of its bugs that pass its public test

    # every trajectory is replayed with per-turn shaping (graded); its binary twin is the same record
    # with the step rewards zeroed, which is what shaping_coef = 0 replays (checked below on a sample);
    # the fraction reward is a replay of its own (R needs every hidden test's result)
    jobs: dict[tuple, tuple] = {}   # key -> (task, regions, responses, spans)
    if "clean".find(args.only) >= 0 or not args.only:
        for k, (task, regions) in enumerate(clean_tasks):
            for p in PROTOCOLS:
                for ok in itertools.product((False, True), repeat=3):
                    for order in ([(0, 1, 2)] if p == "whole-file" else itertools.permutations(range(3))):
                        for style in (0, 1):
                            jobs[("clean", p, k, ok, order, style)] = (task, regions,
                                                                       *script(regions, ok, order, p, style))
    pools: dict[int, dict[tuple, list[tuple]]] = {}
    for seed in seeds:
        rng = random.Random(1000 + seed)
        for scn in SCENARIOS:
            if args.only and args.only not in scn:
                continue
            ks = [3] if scn == "helper WF" else [0, 1, 2]
            for k in ks:
                task, regions = stdio[k] if scn == "stdio WF" else messy_tasks[k]
                keys = []
                for _ in range(args.pool):
                    pl = plan(scn, regions, rng, public_ok[k])
                    key = ("messy", task.id, pl) + (("reemit",) if scn == "reemit WF" else ())
                    if key not in jobs:
                        tail = glue(regions) if scn == "stdio WF" else ""
                        jobs[key] = (task, regions, *messy_script(regions, pl, tail, scn == "reemit WF"))
                    keys.append(key)
                pools.setdefault(seed, {})[(scn, k)] = keys

    def run(key):
        task, regions, responses, spans = jobs[key]
        tr = rollout.replay(task, responses, tok, max_turns=len(responses), **REWARDS["graded"])
        for t, s, e, _ in spans:
            assert tr.turns[t].response[s:e].startswith("def "), "replay changed the response text"
        binary = copy.deepcopy(tr)
        for turn in binary.turns:
            turn.reward = 0.0
        out = {"graded": (tr, spans), "binary": (binary, spans)}
        if "fraction" in rewards:
            out["fraction"] = (rollout.replay(task, responses, tok, max_turns=len(responses), **REWARDS["fraction"]),
                               spans)
        return key, out

    t0 = time.perf_counter()
    cache: dict[tuple, dict] = {}
    with ThreadPoolExecutor(2) as pool:
        for key, val in pool.map(run, list(jobs)):
            cache[key] = val
    print(f"replayed {len(cache)} distinct trajectories (rollout.replay: tokens, edits, sandbox) "
          f"in {time.perf_counter() - t0:.0f} s")
    sample = [k for k in jobs if k[0] == "messy"][:2] + [k for k in jobs if k[0] == "clean"][:1]
    for key in sample:  # the binary twin is what the environment gives without shaping
        task, regions, responses, _ = jobs[key]
        b = rollout.replay(task, responses, tok, max_turns=len(responses), **REWARDS["binary"])
        twin = cache[key]["binary"][0]
        assert b.reward == twin.reward and [t.reward for t in b.turns] == [t.reward for t in twin.turns]
        assert [t.public for t in b.turns] == [t.public for t in twin.turns]  # per-test results: both run them
        assert b.token_ids == twin.token_ids
        if "fraction" in rewards:  # the same episode graded another way
            f = cache[key]["fraction"][0]
            assert f.token_ids == twin.token_ids and [t.public for t in f.turns] == [t.public for t in twin.turns]
            assert (f.reward == 1.0) == (twin.reward == 1.0) and not any(t.reward for t in f.turns)

    columns = []
    if not args.only or "clean".find(args.only) >= 0:
        columns += [(f"clean {'WF' if p == 'whole-file' else 'SR'}", p) for p in PROTOCOLS]
    columns += [(scn, scn) for scn in SCENARIOS if not args.only or args.only in scn]
    names = [n for n, _ in ESTIMATORS]
    results: dict[tuple, list] = defaultdict(list)   # (name, column, rw, G) -> [(acc, auc) per seed]
    dropped: dict[tuple, list] = defaultdict(list)
    spread: dict[tuple, list] = defaultdict(list)  # (column, rw, G) -> the default's 95% interval per seed
    default = f"didpo {didpo.AdvConfig().baseline}"
    for seed in seeds:
        rng = random.Random(seed)
        for col, what in columns:
            for rw in rewards:
                for G in (8, 32):
                    groups, skipped = draw_groups(rng, G, args.groups or 800 // G, ESTIMATORS[0][1],
                                                  functools.partial(draw, rng, G, what, rw, cache, pools.get(seed, {})))
                    dropped[(col, rw, G)].append(len(skipped) / (len(skipped) + len(groups)))
                    for name, cfg in ESTIMATORS:
                        per = [] if name == default else None
                        results[(name, col, rw, G)].append(measure(groups, cfg, per))
                        if per is not None:
                            spread[(col, rw, G)].append(interval(per))
                    if not col.startswith("clean"):
                        results[(TRUE_PI, col, rw, G)].append(measure_solved(groups, true_pi(pi)))
                        results[(ACROSS, col, rw, G)].append(measure_solved(groups, AcrossGroups()))
                        if G == 8:
                            results[(EXACT, col, rw, G)].append(measure_solved(groups, exact))
                    if col in P_OK:
                        rates = {r[0]: (P_OK[col][j], pi[r[0]]) for rs in MESSY_TASKS for j, r in enumerate(rs)}
                        try:
                            results[(ORACLE, col, rw, G)].append(measure_solved(groups, oracle(rates)))
                        except OverflowError as e:  # a set of versions too large to enumerate: the cell reads nan
                            print(f"oracle rates, {col} {rw} G={G}: {e} to enumerate, left out")
                            results[(ORACLE, col, rw, G)].append((math.nan, math.nan))

    print("\nwithin-trajectory accuracy / token AUC, the worst over seeds " + str(seeds)
          + "  (WF = whole file in one turn, SR = one search/replace per function per turn)")
    w = 2 + max(16, *map(len, names + SOLVED))  # each column as wide as its estimator's name
    print(f"{'column':26s}{'drop':>5s}" + "".join(f"{n:>{w}s}" for n in names + SOLVED))
    worst = {}
    for col, _ in columns:
        for rw in rewards:
            for G in (8, 32):
                cells = []
                for n in names + SOLVED:
                    rs = results[(n, col, rw, G)] or [(math.nan, math.nan)]
                    worst[(n, col, rw, G)] = tuple(min(x) if not np.isnan(x).any() else math.nan
                                                   for x in np.array(rs).T)
                    a, u = worst[(n, col, rw, G)]
                    cells.append(f"{a:.2f}/{u:.2f}")
                d = dropped[(col, rw, G)]
                label = f"{col} {rw[:3]} G={G}"
                print(f"{label:26s}{sum(d) / len(d):5.0%}" + "".join(f"{c:>{w}s}" for c in cells))
    miss = [(col, rw, G) for col, _ in columns for rw in rewards for G in (8, 32)
            if worst[(default, col, rw, G)][0] < (0.99 if col.startswith("clean") else 0.90 if G == 32 else 0.80)
            or worst[(default, col, rw, G)][1] < 0.85]
    print(f"\ngoal ({default}: acc >= 0.90 @ G=32, >= 0.80 @ G=8, clean >= 0.99, AUC >= 0.85 everywhere): "
          + ("met" if not miss else f"NOT met in {miss}"))
    for col, rw, G in miss:  # how far the draw of groups moves each missed cell
        seeds_ = ", ".join(f"{a:.2f} [{lo:.2f}, {hi:.2f}]" for (a, _), (lo, hi)
                           in zip(results[(default, col, rw, G)], spread[(col, rw, G)]))
        print(f"  {col} {rw[:3]} G={G}: accuracy per seed, 95% interval over its groups: {seeds_}")


if __name__ == "__main__":
    main()
