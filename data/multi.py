"""The multi tier: tasks that ask for 2-4 small, independent functions in one file, where credit matters.

    python data/multi.py          # rewrites data/multi.jsonl (and data/multi_solutions.jsonl)
    python train.py --tasks "jsonl@data/multi.jsonl:split=train" --difficulty multi   # its training split

Built from build.py's trivial and easy functions whose tests are plain asserts (27). Each task's prompt
lists its functions with their statements and examples; the starter holds every stub; the public and
hidden tests are the functions' own, concatenated, and `meta.functions` maps each function to the
indices of its hidden tests, so each function's correctness is known on its own (bench/credit_live.py).
The reward stays the paper's sparse one: every hidden test passes.

Splits (`meta.split`), drawn once from a fixed seed:
  train               TRAIN combinations of 2-4 of the 21 training functions;
  heldout_combos      HELDOUT other combinations of the same functions, never trained on;
  heldout_functions   HELDOUT combinations of the 6 HELD_OUT_FUNCTIONS, never trained on at all.
tests/test_data.py checks that the files are in sync with this script and that every label is a function's own.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build  # noqa: E402

HELD_OUT_FUNCTIONS = ("square", "count_char", "rectangle_area", "gcd", "chunk", "is_anagram")
TRAIN, HELDOUT, SEED = 300, 40, 0
SIZES = (2, 2, 3, 3, 4)  # a task's number of functions, drawn uniformly from this list
PROMPT = re.compile(r"Write a Python function `([^`]+)` in solution.py. (.*)\n\nExample:\n(.*)\n", re.S)


def functions() -> dict[str, dict]:
    """name -> {signature, statement, example, stub, public, hidden, solution} of each usable function."""
    out = {}
    for t in build.TASKS:
        tests = t["public_tests"] + t["hidden_tests"]
        if t["meta"]["difficulty"] in ("trivial", "easy") and t["fn_name"] and all(x["kind"] == "assert"
                                                                                   for x in tests):
            signature, statement, example = PROMPT.fullmatch(t["prompt"]).groups()
            out[t["fn_name"]] = dict(signature=signature, statement=statement, example=example.strip(),
                                     stub=t["files"]["solution.py"], public=t["public_tests"],
                                     hidden=t["hidden_tests"], solution=build.SOLUTIONS[t["id"]])
    return out


def task(names: tuple[str, ...], pool: dict[str, dict], split: str) -> tuple[dict, str]:
    """The task asking for `names`, and its reference solution (the functions' own, concatenated)."""
    items = "\n".join(f"{k}. `{pool[n]['signature']}`: {pool[n]['statement']} Example: {pool[n]['example']}"
                      for k, n in enumerate(names, 1))
    prompt = f"Write these {len(names)} Python functions in solution.py.\n\n{items}\n"
    hidden, owner = [], {}
    for n in names:
        owner[n] = list(range(len(hidden), len(hidden) + len(pool[n]["hidden"])))
        hidden += pool[n]["hidden"]
    return ({"id": "multi/" + "+".join(names), "prompt": prompt,
             "files": {"solution.py": "\n\n".join(pool[n]["stub"] for n in names)}, "entry": "solution.py",
             "public_tests": [x for n in names for x in pool[n]["public"]], "hidden_tests": hidden, "fn_name": None,
             "meta": {"difficulty": "multi", "source": "didpo-multi", "split": split, "functions": owner}},
            "\n\n".join(pool[n]["solution"].rstrip("\n") for n in names) + "\n")


def combos(names: list[str], k: int, rng: random.Random, taken: set) -> list[tuple[str, ...]]:
    """k new combinations of `names` (sizes from SIZES, order as drawn), none in `taken`."""
    out = []
    while len(out) < k:
        c = tuple(rng.sample(names, rng.choice(SIZES)))
        if frozenset(c) not in taken:
            taken.add(frozenset(c))
            out.append(c)
    return out


def rows() -> tuple[list[str], list[str]]:
    """The JSONL lines of multi.jsonl and multi_solutions.jsonl."""
    pool = functions()
    rng = random.Random(SEED)
    trained = sorted(n for n in pool if n not in HELD_OUT_FUNCTIONS)
    taken: set = set()
    splits = [("train", c) for c in combos(trained, TRAIN, rng, taken)]
    splits += [("heldout_combos", c) for c in combos(trained, HELDOUT, rng, taken)]
    fresh = [c for k in (2, 3, 4) for c in itertools.combinations(HELD_OUT_FUNCTIONS, k)]
    splits += [("heldout_functions", c) for c in rng.sample(fresh, HELDOUT)]
    made = [task(c, pool, split) for split, c in splits]
    return ([json.dumps(t, ensure_ascii=False) for t, _ in made],
            [json.dumps({"id": t["id"], "code": code}, ensure_ascii=False) for t, code in made])


if __name__ == "__main__":
    tasks, sols = rows()
    (HERE / "multi.jsonl").write_text("\n".join(tasks) + "\n")
    (HERE / "multi_solutions.jsonl").write_text("\n".join(sols) + "\n")
    print(f"wrote {len(tasks)} tasks to {HERE / 'multi.jsonl'} and their solutions to {HERE / 'multi_solutions.jsonl'}")
