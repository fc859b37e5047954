"""Speed of compute_advantages: DiDPO against GRPO on a batch the size of the paper's step.

    python bench/advantage.py            # 6 tasks × 32 trajectories × 8 turns, then G = 8, 32, 128
    python bench/advantage.py --quick    # G = 8, 32 only

The batch is synthetic (records built directly, no sandbox, no model): each task has a file of
80–150 lines (functions of 6–12 lines); every turn edits 2–4 functions with search/replace blocks,
drawn from a per-task pool of popular rewrites (so sub-diffs are shared across trajectories and
anchors form) or written fresh (stragglers). Token offsets come from a regex split of the response
(words, spaces, punctuation), about as many tokens as a BPE makes. Each turn records one public
test per function (Turn.public), so DiDPO's verdict (A^V) is timed too. Goal (issue 8): DiDPO under
0.5 s for the paper-size batch on one core, time growth exponent in G at most 1.2. Prints the
CPU times of this process (best of 3; one torch thread) with wall times beside them, the
DiDPO/GRPO ratio and the exponent fitted by least squares on log-log.
"""

from __future__ import annotations

import math
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import didpo  # noqa: E402
from env import Trajectory, Turn  # noqa: E402
from protocol.lines import align  # noqa: E402

_TOK = re.compile(r"\w+|\s+|[^\w\s]")


def _function(rng: random.Random, name: str) -> list[str]:
    body = [f"def {name}(xs, k):", "    total = 0"]
    for _ in range(rng.randint(2, 5)):
        body += [f"    for i in range(len(xs) - {rng.randint(0, 3)}):",
                 f"        total += xs[i] * {rng.randint(1, 9)} - k"]
    body += [f"    return total % {rng.randint(7, 99)}"]
    return body


def _variant(rng: random.Random, fn: list[str]) -> list[str]:
    """A rewrite of a function's body: a constant changed, a line inserted, or a line dropped."""
    out = list(fn)
    j = rng.randrange(1, len(out))
    r = rng.random()
    if r < 0.5:
        out[j] = re.sub(r"\d+", str(rng.randint(10, 999)), out[j], count=1) if re.search(r"\d", out[j]) \
            else out[j] + f"  # {rng.randint(0, 9)}"
    elif r < 0.8:
        out.insert(j, f"    k = k + {rng.randint(1, 50)}")
    elif len(out) > 3:
        del out[j]
    return out


def make_group(rng: random.Random, task: int, G: int, turns: int = 8) -> list[Trajectory]:
    n_fn = rng.randint(8, 12)
    base = [_function(rng, f"f{task}_{j}") for j in range(n_fn)]
    pool = {j: [_variant(rng, base[j]) for _ in range(4)] for j in range(n_fn)}  # popular rewrites
    group = []
    tests = [f"assert f{task}_{j}([1, 2, 3], 4) == {rng.randint(0, 99)}" for j in range(n_fn)]
    for _ in range(G):
        fns = [list(f) for f in base]
        ok = [False] * n_fn  # does function j pass its public test (one per function, as Turn.public records)
        ids, mask, trs = [5] * 200, [0] * 200, []
        for _t in range(turns):
            before = {"solution.py": "\n\n".join("\n".join(f) for f in fns) + "\n"}
            resp, origin_of = "Let me fix this.\n", {}
            for j in rng.sample(range(n_fn), rng.randint(2, 4)):
                new = rng.choice(pool[j]) if rng.random() < 0.7 else _variant(rng, fns[j])
                resp += "solution.py\n```python\n<<<<<<< SEARCH\n" + "\n".join(fns[j]) + "\n=======\n"
                carried = {k for tag, _, _, j1, j2 in align(fns[j], new) if tag == "equal" for k in range(j1, j2)}
                ranges = []
                for k, line in enumerate(new):
                    ranges.append(None if k in carried else (len(resp), len(resp) + len(line)))
                    resp += line + "\n"
                resp += ">>>>>>> REPLACE\n```\n"
                fns[j], origin_of[j] = list(new), ranges
                ok[j] = new in pool[j][:2] or rng.random() < 0.3
            origin = []
            for j, f in enumerate(fns):
                origin += origin_of.get(j, [None] * len(f)) + ([None] if j < n_fn - 1 else [])
            after = {"solution.py": "\n\n".join("\n".join(f) for f in fns) + "\n"}
            offsets = [m.span() for m in _TOK.finditer(resp)] + [(len(resp), len(resp))]
            a = len(ids)
            ids += [hash(resp[s:e]) % 50000 for s, e in offsets]
            mask += [1] * len(offsets)
            trs.append(Turn(response=resp, span=(a, len(ids)), offsets=offsets, action="search_replace",
                            applied=True, files_before=before, files_after=after, origin={"solution.py": origin},
                            reward=rng.choice([0.0, 0.0, 0.1, -0.01]), public=dict(zip(tests, ok))))
            ids += [6] * 50
            mask += [0] * 50
        group.append(Trajectory(task_id=f"t{task}", token_ids=ids, loss_mask=mask, turns=trs,
                                reward=float(rng.random() < 0.4)))
    return group


def timed(batch: list[list[Trajectory]], cfg: didpo.AdvConfig, repeat: int = 3) -> tuple[float, float, dict]:
    """(best CPU seconds, best wall seconds, stats): CPU time is what one core spends, whatever else
    the machine runs; wall time is printed too."""
    cpu, wall, stats = math.inf, math.inf, {}
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        for g in batch:
            didpo.compute_advantages(g, cfg, stats)
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - t0)
    return cpu, wall, stats


def main() -> None:
    torch.set_num_threads(1)
    quick = "--quick" in sys.argv
    rng = random.Random(0)
    batch = [make_group(rng, k, 32) for k in range(6)]
    lines = [b.turns[0].files_before["solution.py"].count("\n") for g in batch for b in g[:1]]
    hunks = sum(len(t.origin) and t.response.count("SEARCH") for g in batch for b in g for t in b.turns)
    print(f"batch: 6 tasks × 32 trajectories × 8 turns, files {min(lines)}–{max(lines)} lines, "
          f"{hunks / (6 * 32 * 8):.1f} edits per turn")
    g_cpu, g_wall, _ = timed(batch, didpo.AdvConfig(algo="grpo"))
    d_cpu, d_wall, st = timed(batch, didpo.AdvConfig(algo="didpo"))
    print(f"grpo  {g_cpu * 1e3:8.1f} ms CPU ({g_wall * 1e3:.1f} ms wall)")
    print(f"didpo {d_cpu * 1e3:8.1f} ms CPU ({d_wall * 1e3:.1f} ms wall)   ratio didpo/grpo = {d_cpu / g_cpu:.1f}×   "
          f"goal < 500 ms: {'met' if d_cpu < 0.5 else 'NOT met'}")
    print(f"  last group: {st['anchors']} anchors, {st['candidates']} candidates, "
          f"group size mean {st['group_size_mean']:.1f}, singleton rate {st['singleton_rate']:.2f}, "
          f"token coverage {st['token_coverage']:.2f}")
    sizes = [8, 32] if quick else [8, 32, 128]
    times = []
    for G in sizes:
        b = batch if G == 32 else [make_group(random.Random(G), k, G) for k in range(6)]
        t, w, _ = timed(b, didpo.AdvConfig(algo="didpo"), repeat=3 if G < 128 else 1)
        times.append(t)
        print(f"G = {G:4d}: didpo {t * 1e3:8.1f} ms CPU ({w * 1e3:.1f} ms wall, "
              f"{t / (6 * G * 8) * 1e6:.0f} µs per turn)")
    xs, ys = [math.log(g) for g in sizes], [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"growth exponent (time ∝ G^k): k = {slope:.2f}   goal k <= 1.2: {'met' if slope <= 1.2 else 'NOT met'}")


if __name__ == "__main__":
    main()
