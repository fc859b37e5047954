"""A small corpus of ordinary Python and prose, used to train the test tokenizer."""

import json
import math
import sys
from collections import Counter, defaultdict


def add(a, b):
    """Return the sum of a and b."""
    return a + b


def is_even(n: int) -> bool:
    return n % 2 == 0


def reverse_string(s: str) -> str:
    return s[::-1]


def count_vowels(text):
    return sum(1 for ch in text.lower() if ch in "aeiou")


def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def binary_search(items, target):
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


class Solution:
    def twoSum(self, nums: list[int], target: int) -> list[int]:
        seen = {}
        for i, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], i]
            seen[x] = i
        return []


def word_counts(lines):
    counts = Counter()
    for line in lines:
        counts.update(line.split())
    return dict(counts)


def group_by_length(words):
    groups = defaultdict(list)
    for w in words:
        groups[len(w)].append(w)
    return groups


def main():
    data = sys.stdin.read().split()
    n = int(data[0])
    values = list(map(int, data[1 : n + 1]))
    print(max(values) - min(values))
    print(json.dumps({"mean": sum(values) / n, "sqrt": math.sqrt(n)}))


if __name__ == "__main__":
    main()
