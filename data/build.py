"""The shipped task set: short Python problems written for didpo, in four tiers.

    python data/build.py          # rewrites data/tasks.jsonl and data/solutions.jsonl

This file is the source of truth; the two JSONL files are generated from it
(tests/test_data.py checks that they are in sync). Each task has a statement
with one example, a starter `solution.py` (signature, docstring, `pass`),
2-3 public tests and 5+ hidden tests. Hidden tests hold the edge cases the
statement names (empty input, negatives, ties, sizes that rule out exponential
code), so a sloppy solution can pass the public tests and still fail.

Tiers, by who should solve them single-turn: "trivial" (a 135M instruct model,
sometimes), "easy", "medium", "hard" (a 7B coder model, mostly). Expected
values are written by hand (the few large cases were checked against an
independent brute force), never computed from the reference solutions.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS: list[dict] = []
SOLUTIONS: dict[str, str] = {}

STDIO_STARTER = "import sys\n\ndata = sys.stdin.read()\n# Parse `data` and print the answer.\n"


def _starter(signature: str, doc: str) -> str:
    return f'def {signature}:\n    """{doc}"""\n    pass\n'


def _add(tid, difficulty, kind, prompt, starter, solution, public, hidden, fn_name=None):
    """Register one task. Tests come as assert lines (assert), (args, expected) (call) or (stdin, stdout) (stdio)."""

    def test(t):
        if kind == "assert":
            return {"kind": "assert", "input": t, "output": ""}
        if kind == "call":
            args, expected = t
            return {"kind": "call", "input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(expected)}
        return {"kind": "stdio", "input": t[0], "output": t[1]}

    TASKS.append({
        "id": f"didpo/{tid}", "prompt": prompt, "files": {"solution.py": starter}, "entry": "solution.py",
        "public_tests": [test(t) for t in public], "hidden_tests": [test(t) for t in hidden],
        "fn_name": fn_name, "meta": {"difficulty": difficulty, "source": "didpo"},
    })
    SOLUTIONS[f"didpo/{tid}"] = solution


def fn(tid, difficulty, signature, doc, statement, example, solution, public, hidden, kind="assert"):
    """A task graded through one function; `statement` names it, `example` is shown verbatim."""
    name = signature.split("(")[0]
    prompt = f"Write a Python function `{signature}` in solution.py. {statement}\n\nExample:\n{example}\n"
    _add(tid, difficulty, kind, prompt, _starter(signature, doc), solution, public, hidden, fn_name=name)


def stdio(tid, difficulty, statement, example_in, example_out, solution, public, hidden):
    prompt = (f"Write a program in solution.py that reads standard input and prints the answer. {statement}\n\n"
              f"Example input:\n{example_in}\nExample output:\n{example_out}")
    _add(tid, difficulty, "stdio", prompt, STDIO_STARTER, solution, public, hidden)


# ---------------------------------------------------------------- trivial

fn("add", "trivial", "add(a, b)", "Return the sum of the integers a and b.",
   "It returns the sum of the two integers `a` and `b`.",
   "add(2, 3) returns 5",
   """\
def add(a, b):
    return a + b
""",
   ["assert add(2, 3) == 5", "assert add(10, 20) == 30"],
   ["assert add(-4, 4) == 0", "assert add(0, 0) == 0", "assert add(-7, -8) == -15",
    "assert add(123456789, 987654321) == 1111111110", "assert add(5, -12) == -7"])

fn("is_even", "trivial", "is_even(n)", "Return True if the integer n is even, else False.",
   "It returns True if the integer `n` is even and False otherwise (n may be negative or zero).",
   "is_even(4) returns True",
   """\
def is_even(n):
    return n % 2 == 0
""",
   ["assert is_even(4) is True", "assert is_even(7) is False"],
   ["assert is_even(0) is True", "assert is_even(-2) is True", "assert is_even(-3) is False",
    "assert is_even(1) is False", "assert is_even(1000001) is False"])

fn("square", "trivial", "square(x)", "Return x multiplied by itself.",
   "It returns the square of the integer `x`.",
   "square(3) returns 9",
   """\
def square(x):
    return x * x
""",
   ["assert square(3) == 9", "assert square(5) == 25"],
   ["assert square(0) == 0", "assert square(-4) == 16", "assert square(1) == 1",
    "assert square(12) == 144", "assert square(-11) == 121"])

fn("max_of_list", "trivial", "max_of_list(nums)", "Return the largest number in the non-empty list nums.",
   "It returns the largest number in the non-empty list `nums` (the numbers may be negative).",
   "max_of_list([3, 1, 4]) returns 4",
   """\
def max_of_list(nums):
    return max(nums)
""",
   ["assert max_of_list([3, 1, 4]) == 4", "assert max_of_list([10, 2, 8]) == 10"],
   ["assert max_of_list([-5, -2, -9]) == -2", "assert max_of_list([7]) == 7", "assert max_of_list([0, 0, 0]) == 0",
    "assert max_of_list([1, 2, 3, 100]) == 100", "assert max_of_list([-1]) == -1"])

fn("reverse_string", "trivial", "reverse_string(s)", "Return the string s reversed.",
   "It returns the string `s` with its characters in reverse order.",
   'reverse_string("hello") returns "olleh"',
   """\
def reverse_string(s):
    return s[::-1]
""",
   ['assert reverse_string("hello") == "olleh"', 'assert reverse_string("abc") == "cba"'],
   ['assert reverse_string("") == ""', 'assert reverse_string("a") == "a"',
    'assert reverse_string("racecar") == "racecar"', 'assert reverse_string("Hello, World!") == "!dlroW ,olleH"',
    'assert reverse_string("12 34") == "43 21"'])

fn("count_vowels", "trivial", "count_vowels(s)", "Return how many vowels (a, e, i, o, u, any case) s contains.",
   "It returns how many vowels the string `s` contains. The vowels are a, e, i, o and u, "
   "in lower or upper case; y is not a vowel.",
   'count_vowels("hello") returns 2',
   """\
def count_vowels(s):
    return sum(1 for c in s.lower() if c in 'aeiou')
""",
   ['assert count_vowels("hello") == 2', 'assert count_vowels("programming") == 3'],
   ['assert count_vowels("") == 0', 'assert count_vowels("AEIOU") == 5', 'assert count_vowels("rhythm") == 0',
    'assert count_vowels("Banana Bread") == 5', 'assert count_vowels("xyz Q") == 0'])

fn("is_positive", "trivial", "is_positive(n)", "Return True if n is greater than zero, else False.",
   "It returns True if the integer `n` is strictly greater than zero and False otherwise (zero is not positive).",
   "is_positive(5) returns True",
   """\
def is_positive(n):
    return n > 0
""",
   ["assert is_positive(5) is True", "assert is_positive(-3) is False"],
   ["assert is_positive(0) is False", "assert is_positive(1) is True", "assert is_positive(-1) is False",
    "assert is_positive(1000) is True", "assert is_positive(-1000) is False"])

fn("min_of_three", "trivial", "min_of_three(a, b, c)", "Return the smallest of the three integers a, b and c.",
   "It returns the smallest of the three integers `a`, `b` and `c`.",
   "min_of_three(3, 1, 2) returns 1",
   """\
def min_of_three(a, b, c):
    return min(a, b, c)
""",
   ["assert min_of_three(3, 1, 2) == 1", "assert min_of_three(5, 9, 7) == 5"],
   ["assert min_of_three(-1, -5, 0) == -5", "assert min_of_three(2, 2, 2) == 2",
    "assert min_of_three(0, 10, -10) == -10", "assert min_of_three(4, 3, 3) == 3",
    "assert min_of_three(100, 50, 75) == 50"])

fn("sum_list", "trivial", "sum_list(nums)", "Return the sum of the numbers in nums (0 for an empty list).",
   "It returns the sum of the integers in the list `nums`; the sum of an empty list is 0.",
   "sum_list([1, 2, 3]) returns 6",
   """\
def sum_list(nums):
    return sum(nums)
""",
   ["assert sum_list([1, 2, 3]) == 6", "assert sum_list([10, 20]) == 30"],
   ["assert sum_list([]) == 0", "assert sum_list([-1, -2, -3]) == -6", "assert sum_list([5]) == 5",
    "assert sum_list([0, 0]) == 0", "assert sum_list([100, -50, 25]) == 75"])

fn("last_element", "trivial", "last_element(items)", "Return the last item of the list, or None if it is empty.",
   "It returns the last item of the list `items`, or None if the list is empty.",
   "last_element([1, 2, 3]) returns 3",
   """\
def last_element(items):
    return items[-1] if items else None
""",
   ["assert last_element([1, 2, 3]) == 3", 'assert last_element(["a", "b"]) == "b"'],
   ["assert last_element([]) is None", "assert last_element([42]) == 42",
    "assert last_element([[1], [2, 3]]) == [2, 3]", "assert last_element([None, 5]) == 5",
    "assert last_element([0, 0, 7]) == 7"])

fn("count_char", "trivial", "count_char(s, c)", "Return how many times the character c occurs in s.",
   "It returns how many times the single character `c` occurs in the string `s`. "
   "Upper and lower case are different characters.",
   'count_char("banana", "a") returns 3',
   """\
def count_char(s, c):
    return s.count(c)
""",
   ['assert count_char("banana", "a") == 3', 'assert count_char("hello", "l") == 2'],
   ['assert count_char("", "a") == 0', 'assert count_char("Apple", "a") == 0', 'assert count_char("Apple", "A") == 1',
    'assert count_char("mississippi", "s") == 4', 'assert count_char("aaaa", "b") == 0'])

fn("repeat_string", "trivial", "repeat_string(s, n)", "Return s repeated n times (n >= 0).",
   "It returns the string `s` repeated `n` times, where `n` is a non-negative integer.",
   'repeat_string("ab", 3) returns "ababab"',
   """\
def repeat_string(s, n):
    return s * n
""",
   ['assert repeat_string("ab", 3) == "ababab"', 'assert repeat_string("x", 2) == "xx"'],
   ['assert repeat_string("hi", 0) == ""', 'assert repeat_string("", 5) == ""', 'assert repeat_string("z", 1) == "z"',
    'assert repeat_string("abc", 2) == "abcabc"', 'assert repeat_string("-", 4) == "----"'])

fn("rectangle_area", "trivial", "rectangle_area(width, height)", "Return the area of a width x height rectangle.",
   "It returns the area of a rectangle with the given integer `width` and `height`.",
   "rectangle_area(3, 4) returns 12",
   """\
def rectangle_area(width, height):
    return width * height
""",
   ["assert rectangle_area(3, 4) == 12", "assert rectangle_area(5, 5) == 25"],
   ["assert rectangle_area(0, 10) == 0", "assert rectangle_area(1, 1) == 1", "assert rectangle_area(7, 3) == 21",
    "assert rectangle_area(100, 2) == 200", "assert rectangle_area(9, 0) == 0"])

fn("multiply", "trivial", "multiply(a, b)", "Return the product of the integers a and b.",
   "It returns the product of the two integers `a` and `b`.",
   "multiply(3, 4) returns 12",
   """\
def multiply(a, b):
    return a * b
""",
   [((3, 4), 12), ((2, 5), 10)],
   [((0, 9), 0), ((-3, 3), -9), ((-2, -6), 12), ((1, 1), 1), ((25, 4), 100)], kind="call")

stdio("sum_two", "trivial",
      "The input is one line with two integers separated by a space. Print their sum.",
      "2 3\n", "5\n",
      """\
a, b = map(int, input().split())
print(a + b)
""",
      [("2 3\n", "5\n"), ("10 20\n", "30\n")],
      [("-5 5\n", "0\n"), ("0 0\n", "0\n"), ("-10 -20\n", "-30\n"), ("1000000 1\n", "1000001\n"),
       ("7 -9\n", "-2\n")])

# ---------------------------------------------------------------- easy

fn("factorial", "easy", "factorial(n)", "Return n! for an integer n >= 0.",
   "It returns n! (the product 1 * 2 * ... * n) for an integer `n` >= 0; by definition 0! is 1.",
   "factorial(5) returns 120",
   """\
def factorial(n):
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out
""",
   ["assert factorial(3) == 6", "assert factorial(5) == 120"],
   ["assert factorial(0) == 1", "assert factorial(1) == 1", "assert factorial(10) == 3628800",
    "assert factorial(2) == 2", "assert factorial(20) == 2432902008176640000"])

fn("fibonacci", "easy", "fibonacci(n)", "Return the n-th number of the Fibonacci sequence 0, 1, 1, 2, 3, 5, ...",
   "It returns the n-th number of the Fibonacci sequence 0, 1, 1, 2, 3, 5, 8, ..., counting from n = 0 "
   "(the first two numbers are 0 and 1; each later one is the sum of the two before it). "
   "It must be fast for n up to 90.",
   "fibonacci(6) returns 8",
   """\
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""",
   ["assert fibonacci(6) == 8", "assert fibonacci(10) == 55"],
   ["assert fibonacci(0) == 0", "assert fibonacci(1) == 1", "assert fibonacci(2) == 1",
    "assert fibonacci(30) == 832040", "assert fibonacci(90) == 2880067194370816120"])

fn("fizzbuzz", "easy", "fizzbuzz(n)", "Return the FizzBuzz word for the positive integer n.",
   'For a positive integer `n` it returns "FizzBuzz" if n is divisible by both 3 and 5, "Fizz" if only by 3, '
   '"Buzz" if only by 5, and otherwise n written as a string.',
   'fizzbuzz(3) returns "Fizz" and fizzbuzz(7) returns "7"',
   """\
def fizzbuzz(n):
    if n % 15 == 0:
        return 'FizzBuzz'
    if n % 3 == 0:
        return 'Fizz'
    if n % 5 == 0:
        return 'Buzz'
    return str(n)
""",
   ['assert fizzbuzz(3) == "Fizz"', 'assert fizzbuzz(7) == "7"'],
   ['assert fizzbuzz(15) == "FizzBuzz"', 'assert fizzbuzz(5) == "Buzz"', 'assert fizzbuzz(30) == "FizzBuzz"',
    'assert fizzbuzz(1) == "1"', 'assert fizzbuzz(9) == "Fizz"'])

fn("count_words", "easy", "count_words(s)", "Return the number of whitespace-separated words in s.",
   "It returns the number of words in the string `s`. Words are separated by any amount of whitespace "
   "(spaces, tabs, newlines); a string with no words gives 0.",
   'count_words("hello world") returns 2',
   """\
def count_words(s):
    return len(s.split())
""",
   ['assert count_words("hello world") == 2', 'assert count_words("one two three") == 3'],
   ['assert count_words("") == 0', 'assert count_words("   ") == 0',
    'assert count_words("  leading and trailing  ") == 3', 'assert count_words("tab\\tseparated\\nlines") == 3',
    'assert count_words("single") == 1'])

fn("remove_duplicates", "easy", "remove_duplicates(items)", "Return items without repeats, keeping first occurrences.",
   "It returns a new list with the repeated items of `items` removed: each value is kept at its first "
   "occurrence and the original order is preserved.",
   "remove_duplicates([1, 2, 2, 3]) returns [1, 2, 3]",
   """\
def remove_duplicates(items):
    seen = []
    for x in items:
        if x not in seen:
            seen.append(x)
    return seen
""",
   ["assert remove_duplicates([1, 2, 2, 3]) == [1, 2, 3]", 'assert remove_duplicates(["a", "b", "a"]) == ["a", "b"]'],
   ["assert remove_duplicates([]) == []", "assert remove_duplicates([3, 1, 3, 2, 1]) == [3, 1, 2]",
    "assert remove_duplicates([5, 5, 5]) == [5]", "assert remove_duplicates([1]) == [1]",
    'assert remove_duplicates(["b", "a", "c", "a", "b"]) == ["b", "a", "c"]'])

fn("is_prime", "easy", "is_prime(n)", "Return True if the integer n is a prime number, else False.",
   "It returns True if the integer `n` is prime and False otherwise. Numbers below 2 (including negative "
   "numbers) are not prime.",
   "is_prime(7) returns True",
   """\
def is_prime(n):
    if n < 2:
        return False
    k = 2
    while k * k <= n:
        if n % k == 0:
            return False
        k += 1
    return True
""",
   ["assert is_prime(7) is True", "assert is_prime(8) is False"],
   ["assert is_prime(2) is True", "assert is_prime(1) is False", "assert is_prime(0) is False",
    "assert is_prime(-7) is False", "assert is_prime(97) is True", "assert is_prime(91) is False",
    "assert is_prime(7919) is True"])

fn("gcd", "easy", "gcd(a, b)", "Return the greatest common divisor of the non-negative integers a and b.",
   "It returns the greatest common divisor of the non-negative integers `a` and `b`. "
   "If one of them is zero the answer is the other one (so two zeros give 0).",
   "gcd(12, 18) returns 6",
   """\
def gcd(a, b):
    while b:
        a, b = b, a % b
    return a
""",
   ["assert gcd(12, 18) == 6", "assert gcd(7, 5) == 1"],
   ["assert gcd(0, 5) == 5", "assert gcd(5, 0) == 5", "assert gcd(0, 0) == 0", "assert gcd(100, 75) == 25",
    "assert gcd(17, 17) == 17"])

fn("digit_sum", "easy", "digit_sum(n)", "Return the sum of the decimal digits of n (sign ignored).",
   "It returns the sum of the decimal digits of the integer `n`; for a negative `n` the minus sign is ignored.",
   "digit_sum(123) returns 6",
   """\
def digit_sum(n):
    return sum(int(d) for d in str(abs(n)))
""",
   ["assert digit_sum(123) == 6", "assert digit_sum(4005) == 9"],
   ["assert digit_sum(0) == 0", "assert digit_sum(-123) == 6", "assert digit_sum(9) == 9",
    "assert digit_sum(99999) == 45", "assert digit_sum(-1000) == 1"])

fn("capitalize_words", "easy", "capitalize_words(s)", "Capitalize each space-separated word of s.",
   "Words in the string `s` are separated by spaces. It returns `s` with the first character of every word "
   "upper-cased and the rest of that word lower-cased. Keep every space exactly where it was.",
   'capitalize_words("hello world") returns "Hello World"',
   """\
def capitalize_words(s):
    return ' '.join(w.capitalize() for w in s.split(' '))
""",
   ['assert capitalize_words("hello world") == "Hello World"',
    'assert capitalize_words("python is fun") == "Python Is Fun"'],
   ['assert capitalize_words("") == ""', 'assert capitalize_words("HELLO world") == "Hello World"',
    'assert capitalize_words("don\'t stop") == "Don\'t Stop"', 'assert capitalize_words("a  b") == "A  B"',
    'assert capitalize_words("3rd place") == "3rd Place"'])

fn("char_frequency", "easy", "char_frequency(s)", "Return a dict mapping each character of s to its count.",
   "It returns a dictionary that maps each character of the string `s` to the number of times it occurs. "
   "Upper and lower case are different characters; an empty string gives an empty dictionary.",
   'char_frequency("aab") returns {"a": 2, "b": 1}',
   """\
def char_frequency(s):
    out = {}
    for c in s:
        out[c] = out.get(c, 0) + 1
    return out
""",
   ['assert char_frequency("aab") == {"a": 2, "b": 1}', 'assert char_frequency("abc") == {"a": 1, "b": 1, "c": 1}'],
   ['assert char_frequency("") == {}', 'assert char_frequency("aA") == {"a": 1, "A": 1}',
    'assert char_frequency("  ") == {" ": 2}',
    'assert char_frequency("mississippi") == {"m": 1, "i": 4, "s": 4, "p": 2}',
    'assert char_frequency("zzz") == {"z": 3}'])

fn("running_sum", "easy", "running_sum(nums)", "Return the list of prefix sums of nums.",
   "It returns a list whose i-th element is nums[0] + nums[1] + ... + nums[i]. An empty list gives an empty list.",
   "running_sum([1, 2, 3]) returns [1, 3, 6]",
   """\
def running_sum(nums):
    out, total = [], 0
    for x in nums:
        total += x
        out.append(total)
    return out
""",
   [(([1, 2, 3],), [1, 3, 6]), (([5],), [5])],
   [(([],), []), (([-1, 1, -1],), [-1, 0, -1]), (([0, 0, 0],), [0, 0, 0]), (([10, -20, 30],), [10, -10, 20]),
    (([1, 1, 1, 1, 1],), [1, 2, 3, 4, 5])], kind="call")

fn("clamp", "easy", "clamp(x, lo, hi)", "Return x limited to the range [lo, hi].",
   "Given integers with `lo` <= `hi`, it returns `lo` if x < lo, `hi` if x > hi, and `x` otherwise.",
   "clamp(-3, 0, 10) returns 0",
   """\
def clamp(x, lo, hi):
    return max(lo, min(x, hi))
""",
   [((5, 0, 10), 5), ((-3, 0, 10), 0)],
   [((15, 0, 10), 10), ((0, 0, 10), 0), ((10, 0, 10), 10), ((-5, -10, -1), -5), ((-20, -10, -1), -10)],
   kind="call")

fn("chunk", "easy", "chunk(items, size)", "Split items into consecutive lists of `size` items.",
   "It splits the list `items` into consecutive pieces of `size` elements (size >= 1) and returns the list "
   "of pieces; the last piece may be shorter. An empty list gives an empty list.",
   "chunk([1, 2, 3, 4, 5], 2) returns [[1, 2], [3, 4], [5]]",
   """\
def chunk(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]
""",
   ["assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]", "assert chunk([1, 2, 3], 3) == [[1, 2, 3]]"],
   ["assert chunk([], 3) == []", "assert chunk([1, 2], 5) == [[1, 2]]",
    "assert chunk([1, 2, 3, 4], 1) == [[1], [2], [3], [4]]",
    'assert chunk(["a", "b", "c", "d"], 2) == [["a", "b"], ["c", "d"]]',
    "assert chunk([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5, 6], [7]]"])

fn("is_anagram", "easy", "is_anagram(a, b)", "Return True if a and b are anagrams, ignoring case and spaces.",
   "It returns True if the strings `a` and `b` contain the same letters the same number of times, "
   "ignoring upper/lower case and ignoring spaces; otherwise False.",
   'is_anagram("listen", "silent") returns True',
   """\
def is_anagram(a, b):
    def key(s):
        return sorted(s.replace(' ', '').lower())
    return key(a) == key(b)
""",
   ['assert is_anagram("listen", "silent") is True', 'assert is_anagram("hello", "world") is False'],
   ['assert is_anagram("Dormitory", "dirty room") is True', 'assert is_anagram("", "") is True',
    'assert is_anagram("abc", "abcc") is False', 'assert is_anagram("aabb", "abab") is True',
    'assert is_anagram("Tea", "Eat") is True', 'assert is_anagram("ab", "a b c") is False'])

stdio("max_min", "easy",
      "The first line holds n (n >= 1); the second line holds n integers separated by spaces. "
      "Print the largest and the smallest of them, separated by a space.",
      "3\n1 5 3\n", "5 1\n",
      """\
n = int(input())
nums = list(map(int, input().split()))[:n]
print(max(nums), min(nums))
""",
      [("3\n1 5 3\n", "5 1\n"), ("1\n7\n", "7 7\n")],
      [("4\n-1 -5 -3 -2\n", "-1 -5\n"), ("5\n0 0 0 0 0\n", "0 0\n"), ("2\n100 -100\n", "100 -100\n"),
       ("6\n3 9 2 9 1 2\n", "9 1\n"), ("3\n-7 8 -7\n", "8 -7\n")])

fn("second_largest", "easy", "second_largest(nums)", "Return the second largest distinct value, or None.",
   "It returns the largest value in the list `nums` that is strictly smaller than the maximum, "
   "or None if there is no such value (empty list, one element, or all elements equal).",
   "second_largest([3, 1, 4, 2]) returns 3",
   """\
def second_largest(nums):
    values = sorted(set(nums))
    return values[-2] if len(values) >= 2 else None
""",
   ["assert second_largest([3, 1, 4, 2]) == 3", "assert second_largest([10, 20]) == 10"],
   ["assert second_largest([5, 5, 4]) == 4", "assert second_largest([7, 7, 7]) is None",
    "assert second_largest([1]) is None", "assert second_largest([]) is None",
    "assert second_largest([-1, -2, -3]) == -2", "assert second_largest([2, 3, 3, 1]) == 2"])

fn("merge_sorted", "easy", "merge_sorted(a, b)", "Merge the sorted lists a and b into one sorted list.",
   "Given two lists of integers, each sorted in non-decreasing order, it returns one sorted list holding "
   "all elements of both (duplicates kept).",
   "merge_sorted([1, 3, 5], [2, 4, 6]) returns [1, 2, 3, 4, 5, 6]",
   """\
def merge_sorted(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out + a[i:] + b[j:]
""",
   ["assert merge_sorted([1, 3, 5], [2, 4, 6]) == [1, 2, 3, 4, 5, 6]", "assert merge_sorted([1, 2], [3]) == [1, 2, 3]"],
   ["assert merge_sorted([], []) == []", "assert merge_sorted([], [1, 2]) == [1, 2]",
    "assert merge_sorted([1, 1], [1]) == [1, 1, 1]", "assert merge_sorted([-3, 0], [-5, 10]) == [-5, -3, 0, 10]",
    "assert merge_sorted([5], []) == [5]"])

# ---------------------------------------------------------------- medium

fn("run_length_encode", "medium", "run_length_encode(s)", "Return the run-length encoding of s.",
   "It replaces every maximal run of equal consecutive characters in `s` by the character followed by the "
   "run's length in decimal, and returns the result. An empty string gives an empty string.",
   'run_length_encode("aaabcc") returns "a3b1c2"',
   """\
def run_length_encode(s):
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f'{s[i]}{j - i}')
        i = j
    return ''.join(out)
""",
   ['assert run_length_encode("aaabcc") == "a3b1c2"', 'assert run_length_encode("abc") == "a1b1c1"'],
   ['assert run_length_encode("") == ""', 'assert run_length_encode("a") == "a1"',
    'assert run_length_encode("aaaaaaaaaaaa") == "a12"', 'assert run_length_encode("aabbaa") == "a2b2a2"',
    'assert run_length_encode("  x") == " 2x1"'])

fn("balanced_brackets", "medium", "balanced_brackets(s)", "Return True if the brackets in s are balanced.",
   "It returns True if every bracket ( ) [ ] { } in the string `s` is closed by the matching bracket in the "
   "right order, else False. Other characters are ignored; a string without brackets is balanced.",
   'balanced_brackets("([]{})") returns True and balanced_brackets("([)]") returns False',
   """\
def balanced_brackets(s):
    pairs = {')': '(', ']': '[', '}': '{'}
    stack = []
    for c in s:
        if c in '([{':
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack
""",
   ['assert balanced_brackets("([]{})") is True', 'assert balanced_brackets("([)]") is False'],
   ['assert balanced_brackets("") is True', 'assert balanced_brackets("(((") is False',
    'assert balanced_brackets(")(") is False', 'assert balanced_brackets("a(b[c]d)e") is True',
    'assert balanced_brackets("{[()()]}") is True', 'assert balanced_brackets("]") is False',
    'assert balanced_brackets("(]") is False'])

fn("roman_to_int", "medium", "roman_to_int(s)", "Return the integer value of the Roman numeral s.",
   "It converts a valid Roman numeral `s` (letters I V X L C D M, value 1 to 3999, with subtractive forms "
   "such as IV = 4 and CM = 900) to an integer.",
   'roman_to_int("IX") returns 9',
   """\
def roman_to_int(s):
    v = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
    total = 0
    for i, c in enumerate(s):
        if i + 1 < len(s) and v[c] < v[s[i + 1]]:
            total -= v[c]
        else:
            total += v[c]
    return total
""",
   ['assert roman_to_int("III") == 3', 'assert roman_to_int("IX") == 9'],
   ['assert roman_to_int("MCMXCIV") == 1994', 'assert roman_to_int("LVIII") == 58',
    'assert roman_to_int("MMXXIV") == 2024', 'assert roman_to_int("XL") == 40',
    'assert roman_to_int("MMMCMXCIX") == 3999', 'assert roman_to_int("I") == 1'])

fn("int_to_roman", "medium", "int_to_roman(n)", "Return the Roman numeral for 1 <= n <= 3999.",
   "It returns the standard Roman numeral for the integer `n` (1 <= n <= 3999), using the subtractive forms "
   "IV, IX, XL, XC, CD and CM.",
   'int_to_roman(58) returns "LVIII"',
   """\
def int_to_roman(n):
    table = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'),
             (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]
    out = ''
    for value, letters in table:
        while n >= value:
            out += letters
            n -= value
    return out
""",
   ['assert int_to_roman(4) == "IV"', 'assert int_to_roman(58) == "LVIII"'],
   ['assert int_to_roman(1) == "I"', 'assert int_to_roman(3999) == "MMMCMXCIX"',
    'assert int_to_roman(1994) == "MCMXCIV"', 'assert int_to_roman(40) == "XL"', 'assert int_to_roman(900) == "CM"',
    'assert int_to_roman(444) == "CDXLIV"'])

fn("longest_common_prefix", "medium", "longest_common_prefix(words)", "Return the longest common prefix of words.",
   "It returns the longest string that is a prefix of every string in the list `words`. "
   'An empty list, or words with nothing in common, give "".',
   'longest_common_prefix(["flower", "flow", "flight"]) returns "fl"',
   """\
def longest_common_prefix(words):
    if not words:
        return ''
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
""",
   ['assert longest_common_prefix(["flower", "flow", "flight"]) == "fl"',
    'assert longest_common_prefix(["dog", "racecar", "car"]) == ""'],
   ['assert longest_common_prefix([]) == ""', 'assert longest_common_prefix(["alone"]) == "alone"',
    'assert longest_common_prefix(["same", "same"]) == "same"', 'assert longest_common_prefix(["ab", "a"]) == "a"',
    'assert longest_common_prefix(["", "abc"]) == ""',
    'assert longest_common_prefix(["interview", "internet", "interval"]) == "inter"'])

fn("rotate_list", "medium", "rotate_list(items, k)", "Return items rotated right by k places.",
   "It returns a new list: `items` rotated to the right by `k` places. `k` may be larger than the list's "
   "length, and a negative `k` rotates to the left. An empty list stays empty.",
   "rotate_list([1, 2, 3, 4, 5], 2) returns [4, 5, 1, 2, 3]",
   """\
def rotate_list(items, k):
    if not items:
        return []
    k %= len(items)
    return items[len(items) - k:] + items[:len(items) - k]
""",
   [(([1, 2, 3, 4, 5], 2), [4, 5, 1, 2, 3]), (([1, 2, 3], 1), [3, 1, 2])],
   [(([], 3), []), (([1, 2, 3], 4), [3, 1, 2]), (([1, 2, 3], -1), [2, 3, 1]), (([1, 2, 3], 0), [1, 2, 3]),
    (([7], 100), [7]), (([1, 2, 3, 4], -6), [3, 4, 1, 2])], kind="call")

fn("binary_search", "medium", "binary_search(nums, target)", "Return the index of target in sorted nums, or -1.",
   "`nums` is a list of integers in strictly increasing order. It returns the index of `target` in `nums`, "
   "or -1 if it is absent. Lists may hold 100000 elements, so use binary search.",
   "binary_search([1, 3, 5, 7], 5) returns 2",
   """\
def binary_search(nums, target):
    lo, hi = 0, len(nums) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if nums[mid] == target:
            return mid
        if nums[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
""",
   ["assert binary_search([1, 3, 5, 7], 5) == 2", "assert binary_search([1, 3, 5, 7], 4) == -1"],
   ["assert binary_search([], 1) == -1", "assert binary_search([2], 2) == 0", "assert binary_search([2], 3) == -1",
    "assert binary_search([-10, -3, 0, 8], -10) == 0", "assert binary_search([-10, -3, 0, 8], 8) == 3",
    "assert binary_search(list(range(0, 200000, 2)), 199998) == 99999",
    "assert binary_search(list(range(0, 200000, 2)), 7) == -1"])

fn("caesar_cipher", "medium", "caesar_cipher(text, shift)", "Shift every letter of text by shift places.",
   "It shifts every ASCII letter of `text` forward by `shift` places in the alphabet, wrapping from z to a, "
   "keeping upper case upper and lower case lower; other characters are unchanged. `shift` may be negative "
   "or larger than 26.",
   'caesar_cipher("abc", 1) returns "bcd"',
   """\
def caesar_cipher(text, shift):
    out = []
    for c in text:
        if 'a' <= c <= 'z':
            out.append(chr((ord(c) - 97 + shift) % 26 + 97))
        elif 'A' <= c <= 'Z':
            out.append(chr((ord(c) - 65 + shift) % 26 + 65))
        else:
            out.append(c)
    return ''.join(out)
""",
   ['assert caesar_cipher("abc", 1) == "bcd"', 'assert caesar_cipher("Hello, World!", 3) == "Khoor, Zruog!"'],
   ['assert caesar_cipher("xyz", 3) == "abc"', 'assert caesar_cipher("ABC", -1) == "ZAB"',
    'assert caesar_cipher("abc", 27) == "bcd"', 'assert caesar_cipher("", 5) == ""',
    'assert caesar_cipher("Zebra-123", 52) == "Zebra-123"', 'assert caesar_cipher("Mixed Case", 13) == "Zvkrq Pnfr"'])

stdio("word_counts", "medium",
      "Words are maximal runs of ASCII letters, compared case-insensitively. Print every distinct word in lower "
      "case with its number of occurrences, one `word count` pair per line, most frequent first and equal counts "
      "in alphabetical order. Empty input prints nothing.",
      "the cat and the hat\n", "the 2\nand 1\ncat 1\nhat 1\n",
      """\
import re
import sys

counts = {}
for w in re.findall('[a-z]+', sys.stdin.read().lower()):
    counts[w] = counts.get(w, 0) + 1
for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    print(w, c)
""",
      [("the cat and the hat\n", "the 2\nand 1\ncat 1\nhat 1\n"), ("b a b\n", "b 2\na 1\n")],
      [("", ""), ("Dog dog DOG\n", "dog 3\n"), ("it's a dog's life\n", "s 2\na 1\ndog 1\nit 1\nlife 1\n"),
       ("one\ntwo two\nthree three three\n", "three 3\ntwo 2\none 1\n"), ("x, y; x! z?\n", "x 2\ny 1\nz 1\n"),
       ("123 go 4go\n", "go 2\n")])

stdio("bank_account", "medium",
      "The first line holds n; each of the next n lines is `deposit X` or `withdraw X` with an integer X > 0. "
      "The balance starts at 0. A withdrawal larger than the current balance is rejected and changes nothing. "
      "Print the final balance and the number of rejected withdrawals, separated by a space.",
      "3\ndeposit 100\nwithdraw 30\nwithdraw 100\n", "70 1\n",
      """\
import sys

lines = sys.stdin.read().split('\\n')
n = int(lines[0])
balance = rejected = 0
for line in lines[1:n + 1]:
    op, x = line.split()
    x = int(x)
    if op == 'deposit':
        balance += x
    elif x > balance:
        rejected += 1
    else:
        balance -= x
print(balance, rejected)
""",
      [("3\ndeposit 100\nwithdraw 30\nwithdraw 100\n", "70 1\n"), ("1\ndeposit 5\n", "5 0\n")],
      [("0\n", "0 0\n"), ("2\nwithdraw 1\ndeposit 1\n", "1 1\n"), ("3\ndeposit 50\nwithdraw 50\nwithdraw 1\n", "0 1\n"),
       ("4\ndeposit 10\ndeposit 20\nwithdraw 25\nwithdraw 5\n", "0 0\n"), ("2\nwithdraw 10\nwithdraw 10\n", "0 2\n")])

fn("max_subarray_sum", "medium", "max_subarray_sum(nums)", "Return the largest sum of a non-empty contiguous slice.",
   "For a non-empty list of integers `nums` it returns the largest sum of a non-empty run of consecutive "
   "elements. If every number is negative the answer is the largest single number.",
   "max_subarray_sum([-2, 1, -3, 4, -1, 2, 1, -5, 4]) returns 6",
   """\
def max_subarray_sum(nums):
    best = cur = nums[0]
    for x in nums[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
""",
   [(([-2, 1, -3, 4, -1, 2, 1, -5, 4],), 6), (([1, 2, 3],), 6)],
   [(([-3, -1, -2],), -1), (([5],), 5), (([-7],), -7), (([2, -1, 2],), 3), (([0, 0, 0],), 0),
    (([-1, 3, -1, 3, -10, 4],), 5)], kind="call")

fn("flatten", "medium", "flatten(nested)", "Return the items of an arbitrarily nested list, in order.",
   "`nested` is a list whose elements are either lists (nested to any depth) or other values. It returns "
   "a flat list of all the non-list values in left-to-right order. Strings are values, not lists.",
   "flatten([1, [2, 3], [4]]) returns [1, 2, 3, 4]",
   """\
def flatten(nested):
    out = []
    for x in nested:
        if isinstance(x, list):
            out.extend(flatten(x))
        else:
            out.append(x)
    return out
""",
   ["assert flatten([1, [2, 3], [4]]) == [1, 2, 3, 4]", "assert flatten([[1, [2]], 3]) == [1, 2, 3]"],
   ["assert flatten([]) == []", "assert flatten([[], [[]]]) == []",
    "assert flatten([1, [2, [3, [4, [5]]]]]) == [1, 2, 3, 4, 5]", 'assert flatten(["ab", ["cd"]]) == ["ab", "cd"]',
    "assert flatten([[1, 2], 3, [[4], 5]]) == [1, 2, 3, 4, 5]"])

fn("valid_ipv4", "medium", "valid_ipv4(s)", "Return True if s is a dotted-decimal IPv4 address.",
   "It returns True if the string `s` is exactly four parts joined by dots, where each part is a decimal "
   "number from 0 to 255 written with digits only and with no leading zero (except the number 0 itself). "
   "Anything else, including spaces or signs, gives False.",
   'valid_ipv4("192.168.0.1") returns True',
   """\
def valid_ipv4(s):
    parts = s.split('.')
    if len(parts) != 4:
        return False
    for p in parts:
        if not p or not all('0' <= c <= '9' for c in p):
            return False
        if (len(p) > 1 and p[0] == '0') or int(p) > 255:
            return False
    return True
""",
   ['assert valid_ipv4("192.168.0.1") is True', 'assert valid_ipv4("256.1.1.1") is False'],
   ['assert valid_ipv4("0.0.0.0") is True', 'assert valid_ipv4("1.2.3") is False',
    'assert valid_ipv4("01.2.3.4") is False', 'assert valid_ipv4("1.2.3.4.5") is False',
    'assert valid_ipv4("a.b.c.d") is False', 'assert valid_ipv4("255.255.255.255") is True',
    'assert valid_ipv4("") is False', 'assert valid_ipv4("1..2.3") is False', 'assert valid_ipv4(" 1.2.3.4") is False',
    'assert valid_ipv4("1.2.3.-4") is False'])

fn("merge_intervals", "medium", "merge_intervals(intervals)", "Merge overlapping [start, end] intervals.",
   "`intervals` is a list of [start, end] pairs of integers with start <= end, in any order. It merges every "
   "group of overlapping intervals (intervals that only touch, like [1, 2] and [2, 3], overlap) and returns "
   "the merged [start, end] pairs sorted by start.",
   "merge_intervals([[1, 3], [2, 6], [8, 10]]) returns [[1, 6], [8, 10]]",
   """\
def merge_intervals(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out
""",
   [(([[1, 3], [2, 6], [8, 10]],), [[1, 6], [8, 10]]), (([[1, 4], [4, 5]],), [[1, 5]])],
   [(([],), []), (([[5, 6], [1, 2]],), [[1, 2], [5, 6]]), (([[1, 10], [2, 3], [4, 5]],), [[1, 10]]),
    (([[3, 3]],), [[3, 3]]), (([[1, 2], [3, 4]],), [[1, 2], [3, 4]]),
    (([[6, 8], [1, 9], [2, 4], [4, 7]],), [[1, 9]])], kind="call")

fn("num_islands", "medium", "num_islands(grid)", "Return the number of 4-connected groups of '#' cells in grid.",
   "`grid` is a list of equal-length strings of '#' (land) and '.' (water). It returns the number of islands: "
   "groups of land cells connected up, down, left or right. Grids may be as large as 200 x 200.",
   'num_islands(["#.", ".#"]) returns 2',
   """\
def num_islands(grid):
    seen = set()
    count = 0
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            if cell != '#' or (r, c) in seen:
                continue
            count += 1
            seen.add((r, c))
            stack = [(r, c)]
            while stack:
                y, x = stack.pop()
                for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                    if 0 <= ny < len(grid) and 0 <= nx < len(grid[ny]) and grid[ny][nx] == '#' \\
                            and (ny, nx) not in seen:
                        seen.add((ny, nx))
                        stack.append((ny, nx))
    return count
""",
   ['assert num_islands(["#.", ".#"]) == 2', 'assert num_islands(["##", "##"]) == 1'],
   ["assert num_islands([]) == 0", 'assert num_islands(["...."]) == 0', 'assert num_islands(["#"]) == 1',
    'assert num_islands(["#.#.#"]) == 3', 'assert num_islands(["###", "#.#", "###"]) == 1',
    'assert num_islands(["#..#", ".##.", "#..#"]) == 5', 'assert num_islands(["#" * 200] * 200) == 1'])

# ---------------------------------------------------------------- hard

fn("edit_distance", "hard", "edit_distance(a, b)", "Return the Levenshtein distance between strings a and b.",
   "It returns the smallest number of single-character insertions, deletions and substitutions that turn "
   "the string `a` into the string `b`. Strings may be a few hundred characters long.",
   'edit_distance("kitten", "sitting") returns 3',
   """\
def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
""",
   [(("kitten", "sitting"), 3), (("flaw", "lawn"), 2)],
   [(("", ""), 0), (("", "abc"), 3), (("abc", "abc"), 0), (("intention", "execution"), 5), (("a", "b"), 1),
    (("a" * 200, "b" * 200), 200), (("ab" * 100, "ba" * 100), 2)], kind="call")

fn("coin_change", "hard", "coin_change(coins, amount)", "Return the fewest coins summing to amount, or -1.",
   "`coins` lists distinct positive coin values, each usable any number of times. It returns the fewest coins "
   "whose values add up to `amount` (0 for amount 0), or -1 if no combination works. "
   "Amounts go up to 10000, and taking the largest coin first is not always optimal.",
   "coin_change([1, 2, 5], 11) returns 3",
   """\
def coin_change(coins, amount):
    inf = float('inf')
    best = [0] + [inf] * amount
    for a in range(1, amount + 1):
        for c in coins:
            if c <= a and best[a - c] + 1 < best[a]:
                best[a] = best[a - c] + 1
    return best[amount] if best[amount] != inf else -1
""",
   [(([1, 2, 5], 11), 3), (([2], 3), -1)],
   [(([1], 0), 0), (([1, 3, 4], 6), 2), (([5, 7], 1), -1), (([2, 5, 10, 1], 27), 4), (([3, 7], 100), 16),
    (([7, 13, 29], 10000), 348)], kind="call")

fn("longest_increasing_subsequence", "hard", "longest_increasing_subsequence(nums)",
   "Return the length of the longest strictly increasing subsequence of nums.",
   "It returns the length of the longest subsequence of `nums` (elements in their original order, not "
   "necessarily adjacent) whose values strictly increase. An empty list gives 0. Lists may hold 5000 elements.",
   "longest_increasing_subsequence([3, 1, 4, 1, 5, 9, 2, 6]) returns 4",
   """\
import bisect


def longest_increasing_subsequence(nums):
    tails = []
    for x in nums:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)
""",
   ["assert longest_increasing_subsequence([3, 1, 4, 1, 5, 9, 2, 6]) == 4",
    "assert longest_increasing_subsequence([5, 4, 3]) == 1"],
   ["assert longest_increasing_subsequence([]) == 0", "assert longest_increasing_subsequence([7]) == 1",
    "assert longest_increasing_subsequence([1, 2, 3, 4, 5]) == 5",
    "assert longest_increasing_subsequence([2, 2, 2]) == 1",
    "assert longest_increasing_subsequence([0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]) == 6",
    "assert longest_increasing_subsequence([(i * 37) % 101 for i in range(5000)]) == 80"])

fn("evaluate", "hard", "evaluate(expr)", "Evaluate an integer arithmetic expression given as a string.",
   "`expr` holds non-negative integer literals, the operators + - * /, parentheses and spaces. A - may also "
   "be a unary minus, as in -(2 + 3) or 4 * -2. * and / bind tighter than + and -, and operators of equal "
   "precedence apply left to right. / is integer division that truncates toward zero (so -7 / 2 is -3); "
   "no division by zero occurs. Return the value as an int.",
   'evaluate("1 + 2 * 3") returns 7',
   """\
def evaluate(expr):
    s = expr.replace(' ', '')
    pos = 0

    def peek():
        return s[pos] if pos < len(s) else ''

    def expression():
        nonlocal pos
        value = term()
        while peek() in ('+', '-'):
            op = s[pos]
            pos += 1
            rhs = term()
            value = value + rhs if op == '+' else value - rhs
        return value

    def term():
        nonlocal pos
        value = factor()
        while peek() in ('*', '/'):
            op = s[pos]
            pos += 1
            rhs = factor()
            if op == '*':
                value *= rhs
            else:
                q = abs(value) // abs(rhs)
                value = q if (value >= 0) == (rhs >= 0) else -q
        return value

    def factor():
        nonlocal pos
        if peek() == '-':
            pos += 1
            return -factor()
        if peek() == '(':
            pos += 1
            value = expression()
            pos += 1
            return value
        start = pos
        while peek().isdigit():
            pos += 1
        return int(s[start:pos])

    return expression()
""",
   ['assert evaluate("1 + 2 * 3") == 7', 'assert evaluate("(8 - 2) / 3") == 2'],
   ['assert evaluate("10 - 4 - 3") == 3', 'assert evaluate("2 * (3 + 4) * 5") == 70',
    'assert evaluate("-(2 + 3)") == -5', 'assert evaluate("4 * -2") == -8', 'assert evaluate("42") == 42',
    'assert evaluate("((7))") == 7',
    'assert evaluate(" 8 -  2*3 ") == 2', 'assert evaluate("100 - (20 - (5 - 1))") == 84',
    'assert evaluate("-7 / 2") == -3', 'assert evaluate("7 / 2") == 3', 'assert evaluate("20 / 2 / 5") == 2',
    'assert evaluate("7 / 2 * 2") == 6', 'assert evaluate("1 / 3 * 3") == 0'])

stdio("maze", "hard",
      "The first line holds R and C; the next R lines hold C characters each: '.' open, '#' wall, 'S' the "
      "start and 'E' the exit (exactly one of each). Moving one cell up, down, left or right costs one step. "
      "Print the fewest steps from S to E, or -1 if E cannot be reached. Mazes may be 300 x 300.",
      "3 3\nS.#\n.##\n..E\n", "4\n",
      """\
import sys
from collections import deque

lines = sys.stdin.read().split()
r, c = int(lines[0]), int(lines[1])
grid = lines[2:2 + r]
start = next((i, j) for i in range(r) for j in range(c) if grid[i][j] == 'S')
dist = {start: 0}
queue = deque([start])
answer = -1
while queue:
    y, x = queue.popleft()
    if grid[y][x] == 'E':
        answer = dist[(y, x)]
        break
    for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
        if 0 <= ny < r and 0 <= nx < c and grid[ny][nx] != '#' and (ny, nx) not in dist:
            dist[(ny, nx)] = dist[(y, x)] + 1
            queue.append((ny, nx))
print(answer)
""",
      [("3 3\nS.#\n.##\n..E\n", "4\n"), ("1 3\nS#E\n", "-1\n")],
      [("1 2\nSE\n", "1\n"), ("2 2\nS#\n#E\n", "-1\n"), ("3 5\nS...#\n###.#\nE....\n", "8\n"),
       ("5 5\nS....\n####.\n.....\n.####\n....E\n", "16\n"),
       ("300 300\n" + "S" + "." * 299 + "\n" + ("." * 300 + "\n") * 298 + "." * 299 + "E\n", "598\n")])

# A class task: the prompt and starter are written out instead of built by fn().
_add("lru_cache", "hard", "assert",
     "Write a Python class `LRUCache` in solution.py: a key-value cache holding at most `capacity` keys "
     "(capacity >= 1). `LRUCache(capacity)` creates an empty cache; `get(key)` returns the value stored for "
     "key, or -1 if the key is absent; `put(key, value)` stores the value, replacing any old value. Both get "
     "(of a present key) and put count as a use of that key. When put adds a new key to a full cache, the "
     "least recently used key is removed first.\n\nExample:\n"
     "c = LRUCache(2); c.put(1, 10); c.put(2, 20); c.get(1) returns 10; "
     "then c.put(3, 30) removes key 2, so c.get(2) returns -1\n",
     "class LRUCache:\n    \"\"\"A key-value cache that holds at most `capacity` keys.\"\"\"\n\n"
     "    def __init__(self, capacity):\n        pass\n\n    def get(self, key):\n"
     "        \"\"\"Return the value stored for key, or -1 if key is absent.\"\"\"\n        pass\n\n"
     "    def put(self, key, value):\n"
     "        \"\"\"Store value for key; a new key in a full cache evicts the least recently used key.\"\"\"\n"
     "        pass\n",
     """\
from collections import OrderedDict


class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = OrderedDict()

    def get(self, key):
        if key not in self.data:
            return -1
        self.data.move_to_end(key)
        return self.data[key]

    def put(self, key, value):
        if key in self.data:
            self.data.move_to_end(key)
        self.data[key] = value
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)
""",
     ["c = LRUCache(2)\nc.put(1, 10)\nc.put(2, 20)\nassert c.get(1) == 10\nc.put(3, 30)\nassert c.get(2) == -1\n",
      "c = LRUCache(1)\nassert c.get(5) == -1\nc.put(5, 50)\nassert c.get(5) == 50\n"],
     ["c = LRUCache(2)\nc.put(1, 1)\nc.put(2, 2)\nc.put(1, 100)\nc.put(3, 3)\nassert c.get(1) == 100\n"
      "assert c.get(2) == -1\nassert c.get(3) == 3\n",
      "c = LRUCache(2)\nc.put(1, 1)\nc.put(2, 2)\nc.put(2, 22)\nassert c.get(1) == 1\nassert c.get(2) == 22\n",
      "c = LRUCache(1)\nc.put(1, 1)\nc.put(2, 2)\nassert c.get(1) == -1\nassert c.get(2) == 2\n",
      "c = LRUCache(3)\nfor k in range(3):\n    c.put(k, k * k)\nassert c.get(0) == 0\nc.put(3, 9)\n"
      "assert c.get(1) == -1\nassert c.get(0) == 0\nassert c.get(2) == 4\nassert c.get(3) == 9\n",
      "c = LRUCache(2)\nassert c.get(7) == -1\nc.put(7, 0)\nassert c.get(7) == 0\nc.put(8, -1)\nc.put(9, 5)\n"
      "assert c.get(7) == -1\nassert c.get(8) == -1\nassert c.get(9) == 5\n",
      "c = LRUCache(100)\nfor k in range(20000):\n    c.put(k, k)\nassert c.get(19999) == 19999\n"
      "assert c.get(19899) == -1\nassert c.get(19900) == 19900\n"],
     fn_name="LRUCache")

fn("course_order", "hard", "course_order(n, prereqs)", "Return the smallest valid course order, or [].",
   "Courses are numbered 0 to n - 1. Each pair [a, b] in `prereqs` means course b must be taken before "
   "course a. It returns an order that takes every course once and respects all pairs; when several orders "
   "work, it returns the lexicographically smallest one (compare first elements, then second, ...). "
   "If no order exists it returns [].",
   "course_order(3, [[1, 0], [2, 1]]) returns [0, 1, 2]",
   """\
import heapq


def course_order(n, prereqs):
    after = [[] for _ in range(n)]
    indegree = [0] * n
    for a, b in prereqs:
        after[b].append(a)
        indegree[a] += 1
    ready = [k for k in range(n) if indegree[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for a in after[k]:
            indegree[a] -= 1
            if indegree[a] == 0:
                heapq.heappush(ready, a)
    return order if len(order) == n else []
""",
   [((3, [[1, 0], [2, 1]]), [0, 1, 2]), ((2, [[0, 1], [1, 0]]), [])],
   [((1, []), [0]), ((0, []), []), ((4, [[1, 0], [2, 0], [3, 1], [3, 2]]), [0, 1, 2, 3]), ((3, []), [0, 1, 2]),
    ((4, [[0, 3]]), [1, 2, 3, 0]), ((3, [[0, 0]]), []), ((5, [[0, 4], [1, 4], [2, 3]]), [3, 2, 4, 0, 1])],
   kind="call")

fn("word_break", "hard", "word_break(s, words)", "Return True if s is a concatenation of words from the list.",
   "It returns True if the string `s` can be cut into pieces that are each in the list `words` (a word may be "
   "used many times), else False. An empty `s` gives True. Strings may be 1000 characters long.",
   'word_break("icecream", ["ice", "cream"]) returns True',
   """\
def word_break(s, words):
    vocab = set(words)
    ok = [True] + [False] * len(s)
    for end in range(1, len(s) + 1):
        ok[end] = any(ok[start] and s[start:end] in vocab for start in range(end))
    return ok[len(s)]
""",
   ['assert word_break("icecream", ["ice", "cream"]) is True',
    'assert word_break("icecreamx", ["ice", "cream"]) is False'],
   ['assert word_break("", ["a"]) is True', 'assert word_break("a" * 40 + "b", ["a", "aa", "aaa", "aaaa"]) is False',
    'assert word_break("abcd", ["a", "abc", "b", "cd"]) is True', 'assert word_break("abab", ["ab"]) is True',
    'assert word_break("abc", []) is False', 'assert word_break("catdog", ["cat", "cats", "dog", "do"]) is True',
    'assert word_break("ab" * 500, ["ab", "aba", "b"]) is True'])


def rows() -> tuple[list[str], list[str]]:
    """The JSONL lines of tasks.jsonl and solutions.jsonl, in task order."""
    tasks = [json.dumps(t, ensure_ascii=False) for t in TASKS]
    sols = [json.dumps({"id": t["id"], "code": SOLUTIONS[t["id"]]}, ensure_ascii=False) for t in TASKS]
    return tasks, sols


if __name__ == "__main__":
    tasks, sols = rows()
    (HERE / "tasks.jsonl").write_text("\n".join(tasks) + "\n")
    (HERE / "solutions.jsonl").write_text("\n".join(sols) + "\n")
    print(f"wrote {len(tasks)} tasks to {HERE / 'tasks.jsonl'} and their solutions to {HERE / 'solutions.jsonl'}")
