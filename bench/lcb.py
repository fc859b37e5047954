"""LCB-exact grading against LiveCodeBench's own runner, side by side: the same samples, the same verdicts?

    git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/lcb   # its code is not ours to ship
    python bench/lcb.py --lcb /tmp/lcb                                   # workers = cores, 6 s per test
    python bench/lcb.py --lcb /tmp/lcb --rounds 3 --copies 2

Both sides grade the same LCB-format samples: 8 problems (4 stdin, 4 LeetCode-style functional), each with
10 generations (correct ones written in different idioms, wrong answers, runtime errors, a wrong output
format, one that fails only a late test). Theirs: lcb_runner's `evaluate_generations` (a process pool of
`--workers`, a process and a Manager per sample, run_test stopping at the first failing test) on samples
built by its own `CodeGenerationProblem` from the rows. Ours: `sandbox.grade_many` in mode "lcb" with the
same workers and timeout (a confined child per sample, all of its tests in it, stopping at the first
failure), on the tasks `benchmarks.load("livecodebench", ...)` reads from the same rows, as eval.py does.
Verdicts compared per sample (all tests pass or not); rounds alternate; the best round of each side counts.
Goal (issue 38): ratio >= 1.5 with identical verdicts. Without --lcb the script says so in one line, exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchmarks  # noqa: E402
import sandbox  # noqa: E402

# (question_id, platform, func_name or "", [(input, output)], generations)
STDIN = [
    ("b_sum", [("1 2\n", "3\n"), ("10 20\n", "30\n"), ("-5 5\n", "0\n"), ("1000000000 1000000000\n", "2000000000\n")],
     ["a, b = map(int, input().split())\nprint(a + b)",
      "import sys\nprint(sum(map(int, sys.stdin.read().split())))",
      "a, b = map(int, input().split())\nprint(a - b)",
      "a, b = map(int, input().split())\nprint(a + b + (a > 100))",
      "print(int(input()) + 1)",
      "import sys\na, b = sys.stdin.readline().split()\nprint(int(a) + int(b))",
      "a, b = input().split()\nprint(a + b)",
      "x = list(map(int, input().split()))\nprint(x[0] + x[1], end='')",
      "raise SystemExit(input())",
      "a, b = map(int, input().split())\nprint(str(a + b) + ' ')"]),
    ("b_sort", [(f"{n}\n" + " ".join(str((7 * k) % 11) for k in range(n)) + "\n",
                 " ".join(map(str, sorted((7 * k) % 11 for k in range(n)))) + "\n") for n in (3, 5, 8, 11, 20)],
     ["input()\nprint(*sorted(map(int, input().split())))",
      "n = int(input())\nxs = list(map(int, input().split()))\nxs.sort()\nprint(' '.join(map(str, xs)))",
      "input()\nprint(*sorted(input().split()))",
      "input()\nprint(*sorted(map(int, input().split()), reverse=True))",
      "n = int(input())\nxs = list(map(int, input().split()))\nprint(*sorted(xs)[:n - 1])",
      "import sys\nd = sys.stdin.read().split()\nprint(*sorted(map(int, d[1:])))",
      "input()\nxs = list(map(int, input().split()))\nfor i in range(len(xs)):\n    for j in range(len(xs) - 1):\n"
      "        if xs[j] > xs[j + 1]:\n            xs[j], xs[j + 1] = xs[j + 1], xs[j]\nprint(*xs)",
      "input()\nprint(sorted(map(int, input().split())))",
      "print(1 / 0)",
      "input()\nxs = sorted(map(int, input().split()))\nprint(*xs[:5])"]),
    ("b_count", [(f"{s}\n", f"{s.count('a')}\n") for s in ("banana", "abc", "zzz", "a" * 50, "abracadabra")],
     ["print(input().count('a'))",
      "s = input()\nprint(sum(c == 'a' for c in s))",
      "print(input().count('b'))",
      "s = input()\nprint(len([c for c in s if c in 'ab']))",
      "import collections\nprint(collections.Counter(input())['a'])",
      "s = input()\nprint(s.count('a') if len(s) < 20 else 0)",
      "print(input().index('a'))",
      "print(len(input()))",
      "s = input().strip()\nn = 0\nfor c in s:\n    n += c == 'a'\nprint(n)",
      "print(str(input().count('a')).zfill(2))"]),
    ("b_lines", [("3\nab\ncd\nef\n", "ba\ndc\nfe\n"), ("1\nxyz\n", "zyx\n"), ("2\na\nbb\n", "a\nbb\n")],
     ["n = int(input())\nfor _ in range(n):\n    print(input()[::-1])",
      "import sys\nls = sys.stdin.read().split('\\n')\nfor s in ls[1:int(ls[0]) + 1]:\n    print(s[::-1])",
      "n = int(input())\nfor _ in range(n):\n    print(input())",
      "n = int(input())\nprint('\\n'.join(input()[::-1] for _ in range(n)))",
      "n = int(input())\nfor _ in range(n - 1):\n    print(input()[::-1])",
      "n = int(input())\nout = []\nfor _ in range(n):\n    out.append(input()[::-1])\nprint(' '.join(out))",
      "n = int(input())\nfor _ in range(n):\n    s = input()\n    print(''.join(reversed(s)))",
      "while True:\n    print(input()[::-1])",
      "n = int(input())\nfor _ in range(n):\n    print(input()[::-1].upper())",
      "import sys\nfor s in sys.stdin.read().split()[1:]:\n    print(s[::-1])"]),
]
CALL = [
    ("f_two", "twoSum", [("[2,7,11,15]\n9", "[0, 1]"), ("[3,2,4]\n6", "[1, 2]"), ("[3,3]\n6", "[0, 1]"),
                         ("[1,5,9,13]\n22", "[2, 3]")],
     ["class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, x in enumerate(nums):\n"
      "            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        for i in range(len(nums)):\n"
      "            for j in range(i + 1, len(nums)):\n                if nums[i] + nums[j] == target:\n"
      "                    return [i, j]\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        return (0, 1)\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        for i in range(len(nums)):\n"
      "            for j in range(len(nums)):\n                if nums[i] + nums[j] == target:\n"
      "                    return [i, j]\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        return nums.index(target)\n",
      "from typing import List\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
      "        d = {}\n        for i, x in enumerate(nums):\n            if x in d:\n                return [d[x], i]\n"
      "            d[target - x] = i\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        return sorted(nums)[:2]\n",
      "class Solution:\n    def twoSum(self, nums, target):\n        raise ValueError('no')\n",
      "class Solution:\n    def twoSum(self, nums, target):\n"
      "        s = sorted(range(len(nums)), key=nums.__getitem__)\n"
      "        i, j = 0, len(s) - 1\n        while nums[s[i]] + nums[s[j]] != target:\n"
      "            if nums[s[i]] + nums[s[j]] < target:\n                i += 1\n            else:\n"
      "                j -= 1\n        return sorted([s[i], s[j]])\n"]),
    ("f_pal", "isPalindrome", [("121", "true"), ("-121", "false"), ("10", "false"), ("0", "true"), ("12321", "true")],
     ["class Solution:\n    def isPalindrome(self, x):\n        return str(x) == str(x)[::-1]\n",
      "class Solution:\n    def isPalindrome(self, x):\n        if x < 0:\n            return False\n"
      "        r, y = 0, x\n        while y:\n            r, y = r * 10 + y % 10, y // 10\n        return r == x\n",
      "class Solution:\n    def isPalindrome(self, x):\n        return str(abs(x)) == str(abs(x))[::-1]\n",
      "class Solution:\n    def isPalindrome(self, x):\n        return True\n",
      "class Solution:\n    def isPalindrome(self, x):\n        return 'true' if str(x) == str(x)[::-1] else 'false'\n",
      "class Solution:\n    def isPalindrome(self, x):\n"
      "        return x >= 0 and x % 10 == x // 10 ** (len(str(x)) - 1)\n",
      "class Solution:\n    def isPalindrome(self, x):\n        s = str(x)\n"
      "        return all(s[i] == s[-1 - i] for i in range(len(s)))\n",
      "class Solution:\n    def isPalindrome(self, x):\n        return int(str(x)[::-1]) == x\n",
      "class Solution:\n    def isPalindrome(self, x):\n        return list(str(x)) == list(reversed(str(x)))\n",
      "class Solution:\n    def isPalindrome(self, y):\n        return str(y) == str(y)[::-1] and y != 0\n"]),
    ("f_max", "maxSubArray",
     [("[-2,1,-3,4,-1,2,1,-5,4]", "6"), ("[1]", "1"), ("[5,4,-1,7,8]", "23"), ("[-3,-1]", "-1")],
     ["class Solution:\n    def maxSubArray(self, nums):\n        best = cur = nums[0]\n        for x in nums[1:]:\n"
      "            cur = max(x, cur + x)\n            best = max(best, cur)\n        return best\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        return max(sum(nums[i:j]) for i in range(len(nums))"
      " for j in range(i + 1, len(nums) + 1))\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        return sum(x for x in nums if x > 0)\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        return max(nums)\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        best, cur = 0, 0\n        for x in nums:\n"
      "            cur = max(0, cur + x)\n            best = max(best, cur)\n        return best\n",
      "class Solution:\n    def maxSubArray(self, nums):\n"
      "        return float(max(sum(nums[i:j]) for i in range(len(nums))"
      " for j in range(i + 1, len(nums) + 1)))\n",
      "import math\nclass Solution:\n    def maxSubArray(self, nums):\n        best, cur = -math.inf, 0\n"
      "        for x in nums:\n            cur = max(x, cur + x)\n            best = max(best, cur)\n"
      "        return best\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        return str(max(nums))\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        return nums[0] + nums[1]\n",
      "class Solution:\n    def maxSubArray(self, nums):\n        s = [0]\n        for x in nums:\n"
      "            s.append(s[-1] + x)\n"
      "        return max(s[j] - min(s[:j]) for j in range(1, len(s)))\n"]),
    ("f_words", "countWords", [('["a","b","a"]', "2"), ('["x"]', "1"), ("[]", "0"), ('["q","q","q","r","s"]', "3")],
     ["class Solution:\n    def countWords(self, words):\n        return len(set(words))\n",
      "class Solution:\n    def countWords(self, words):\n        seen = []\n        for w in words:\n"
      "            if w not in seen:\n                seen.append(w)\n        return len(seen)\n",
      "class Solution:\n    def countWords(self, words):\n        return len(words)\n",
      "class Solution:\n    def countWords(self, words):\n        return len(set(words)) or None\n",
      "from collections import Counter\nclass Solution:\n    def countWords(self, words):\n"
      "        return len(Counter(words))\n",
      "class Solution:\n    def countWords(self, words):\n        return len({w: 1 for w in words}.keys())\n",
      "class Solution:\n    def countWords(self, words):\n        return max(1, len(set(words)))\n",
      "class Solution:\n    def countWords(self, words):\n        return sum(1 for w in set(words))\n",
      "class Solution:\n    def countWords(self, word_list):\n        return len(set(word_list))\n",
      "class Solution:\n    def countWords(self, words):\n        return words[0]\n"]),
]


def rows() -> tuple[list[dict], dict[str, list[str]]]:
    """The problems as LiveCodeBench rows (its hub schema), and each one's generations."""
    out, gens = [], {}
    for qid, fn, tests, codes in [(q, "", t, c) for q, t, c in STDIN] + CALL:
        kind = "functional" if fn else "stdin"
        cases = [{"input": i, "output": o, "testtype": kind} for i, o in tests]
        out.append({"question_title": qid, "question_content": f"Problem {qid}.", "platform": "leetcode" if fn
                    else "atcoder", "question_id": qid, "contest_id": "bench", "contest_date": "2024-06-01T00:00:00",
                    "starter_code": "", "difficulty": "easy", "public_test_cases": json.dumps(cases[:1]),
                    "private_test_cases": json.dumps(cases[1:]),
                    "metadata": json.dumps({"func_name": fn} if fn else {})})
        gens[qid] = codes
    return out, gens


def theirs(lcb: Path, problems: list[dict], gens: dict, workers: int, timeout: int) -> list[bool]:
    """lcb_runner's own pipeline: its CodeGenerationProblem builds each evaluation sample from the row."""
    sys.path.insert(0, str(lcb))
    from lcb_runner.benchmarks.code_generation import CodeGenerationProblem
    from lcb_runner.evaluation.compute_code_generation_metrics import evaluate_generations

    samples = [CodeGenerationProblem(**r).get_evaluation_sample() for r in problems]
    # Its progress bar hidden at the descriptor: sys.stdout and sys.stderr stay real files, which its children
    # need (run_test captures output through sys.stdout; faulthandler.enable() needs stderr's fileno).
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        results, _ = evaluate_generations(samples, [gens[r["question_id"]] for r in problems],
                                          num_process_evaluate=workers, timeout=timeout)
    finally:
        os.dup2(saved, 2)
        os.close(saved), os.close(null)
    return [all(x is True or x == 1 for x in res) for k in range(len(problems)) for res in results[k]]


def ours(tasks: list, gens: dict, workers: int, timeout: int) -> list[bool]:
    limits = sandbox.Limits(wall_s=timeout, cpu_s=timeout)
    jobs = [sandbox.GradeJob(code, t.hidden_tests, fn_name=t.fn_name, mode="lcb", limits=limits)
            for t in tasks for code in gens[t.id]]
    return [len(v) == len(j.tests) and all(x.passed for x in v)
            for v, j in zip(sandbox.grade_many(jobs, workers=workers), jobs)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lcb", default=os.environ.get("LCB_PATH", ""), help="a LiveCodeBench checkout (lcb_runner/)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=1, help="grade every sample this many times per round")
    ap.add_argument("--timeout", type=int, default=6, help="seconds per test (LiveCodeBench's default: 6)")
    ap.add_argument("--with-timeout", action="store_true", help="add a sample that loops forever (a TLE: both sides "
                    "wait the full timeout, so the ratio moves toward 1)")
    args = ap.parse_args()
    lcb = Path(args.lcb) if args.lcb else None
    if lcb is None or not (lcb / "lcb_runner" / "evaluation").is_dir():
        print(f"bench/lcb.py: no LiveCodeBench checkout at {args.lcb or '(none given)'}; pass --lcb DIR "
              "(git clone https://github.com/LiveCodeBench/LiveCodeBench DIR): nothing measured")
        return
    problems, gens = rows()
    if args.with_timeout:
        gens["b_sum"] = gens["b_sum"] + ["while True:\n    pass"]
    problems = problems * args.copies
    with tempfile.TemporaryDirectory() as d:  # the rows as a local LCB snapshot, read by our own loader
        (Path(d) / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in problems[: len(problems)
                                                                                         // args.copies]))
        by_id = {t.id: t for t in benchmarks.load("livecodebench", d)}
    tasks = [by_id[r["question_id"]] for r in problems]
    n = sum(len(gens[r["question_id"]]) for r in problems)
    ours(tasks[:1], gens, args.workers, args.timeout)  # start the fork servers
    t_ours, t_theirs = [], []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        v_ours = ours(tasks, gens, args.workers, args.timeout)
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        v_theirs = theirs(lcb, problems, gens, args.workers, args.timeout)
        t_theirs.append(time.perf_counter() - t0)
        print(f"round {r + 1}: ours {t_ours[-1]:.2f} s, LiveCodeBench's runner {t_theirs[-1]:.2f} s")
    same = sum(a == b for a, b in zip(v_ours, v_theirs))
    print(f"samples            : {n} ({len(problems)} problems, {sum(v_ours)} pass), workers = {args.workers}, "
          f"{args.timeout} s per test")
    print(f"verdicts           : {same}/{n} identical"
          + ("" if same == n else f"; differ at {[k for k, (a, b) in enumerate(zip(v_ours, v_theirs)) if a != b]}"))
    print(f"ratio              : {min(t_theirs) / min(t_ours):.2f}x LiveCodeBench's runner (goal >= 1.5x), best of "
          f"{args.rounds}: {min(t_ours):.2f} s against {min(t_theirs):.2f} s")


if __name__ == "__main__":
    main()
