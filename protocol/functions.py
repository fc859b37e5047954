"""Top-level functions of a workspace and the public tests that judge them (didpo's verdict reads these).

    python -c "from protocol.functions import passes; print(passes({'assert f(1) == 2': False}, 'f'))"

Files are read by lines, not parsed: a parse per workspace would double the verdict's time.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections import defaultdict

from protocol.lines import lines_of, normalize_line
from protocol.messages import STDIO_HEAD

_NAME = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_STRING = re.compile(r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"")  # a one-line string literal
_DOC = re.compile(r"""[rRuUbBfF]{0,2}(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")  # one line
_TRIPLE = re.compile(r"""[rRuUbBfF]{0,2}('''|\"\"\")""")
_QUOTED = re.compile(r"""\n[ \t]*[rRuUbBfF]{0,2}['"]""")  # a line after the first that opens with a string


def written_functions(turn) -> tuple[dict[str, list[tuple[int, int]]], dict[str, list[str]], dict[str, list]]:
    """Per top-level def/class of S_t ("" outside any): (the char ranges of the lines this turn wrote in it, its
    lines, the ranges of the lines it re-emitted unchanged: Turn.emitted's where Turn.origin has none). A def that a
    later one of its name overrides is dead code (Python binds the last), in none of the three."""
    out, body, echo = defaultdict(list), defaultdict(list), defaultdict(list)
    for path, text in turn.files_after.items():
        lines = lines_of(text)
        starts, names = statements(lines)
        last = {name: k for k, name in enumerate(names)}
        keys = [""] + [None if name and last[name] != k else name for k, name in enumerate(names)]  # None: dead
        for k, (a, name) in enumerate(zip([0] + starts, keys)):
            if name is not None and (part := lines[a : starts[k] if k < len(starts) else len(lines)]):
                body[name] += part
        origin, emitted = (turn.origin.get(path) or [])[: len(lines)], turn.emitted.get(path) or []
        for k, r in enumerate(origin):
            if (r is not None or (k < len(emitted) and emitted[k] is not None)) and \
                    (name := keys[bisect.bisect_right(starts, k)]) is not None:
                (out[name] if r is not None else echo[name]).append(r if r is not None else emitted[k])
    return out, body, echo


def statements(lines: list[str]) -> tuple[list[int], list[str]]:
    """(the first line of each top-level statement, its def/class name or ""): an unindented code line opens one, a
    decorator the def or class it decorates. Where that looks wrong (a simple statement followed by an indented
    line: an unindented line inside a string or brackets), by `ast` when the file parses."""
    starts = [k for k, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "#")]
    starts = [k for j, k in enumerate(starts) if not (j and lines[starts[j - 1]].startswith("@"))]
    names = []
    for k in starts:
        while lines[k][:1] in ("@", "", " ", "\t", "#") and k + 1 < len(lines):  # a decorator: the def below it
            k += 1
        names.append(m.group(1) if (m := _NAME.match(lines[k])) else "")
    if any(not name and k + 1 < len(lines) and lines[k + 1][:1] in (" ", "\t") and not lines[k].rstrip().endswith(":")
           for k, name in zip(starts, names)):
        try:
            body = ast.parse("\n".join(lines).replace("\r", " ")).body  # ast breaks lines at "\r" too
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return starts, names
        starts = [first_line(n) - 1 for n in body]
        names = [n.name if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "" for n in body]
    return starts, names


@functools.lru_cache(maxsize=1 << 14)  # a function's lines recur in every later turn and in other trajectories
def code_of(lines: tuple[str, ...]) -> tuple[str, ...]:
    """A function's lines as the verdict compares its versions: normalized, non-blank, docstrings dropped."""
    return tuple(without_docstrings([x for x in map(normalize_line, lines) if x]))


def without_docstrings(lines: list[str]) -> list[str]:
    """Normalized lines without the docstring lines among them (`docstring_lines`)."""
    doc = docstring_lines(lines)
    return [x for k, x in enumerate(lines) if k not in doc] if doc else lines


def file_docstrings(text: str, lines: list[str]) -> set[int]:
    """`docstring_lines` of a file's lines; none, unread, where no line of the text opens with a string literal."""
    quoted = ('"' in text or "'" in text) and _QUOTED.search(text)  # the first test is 200 times as fast
    return docstring_lines([normalize_line(x) for x in lines]) if quoted else set()


def docstring_lines(lines: list[str]) -> set[int]:
    """Where each def/class docstring is among normalized lines ("" for blank): a string-literal line, or an opening
    triple quote to a closing one with no code after it, right after a def/class header (brackets closed, ":")."""
    out: set[int] = set()
    k, depth, header, opened = 0, 0, False, False
    while k < len(lines):
        line = lines[k]
        if opened and line:
            opened = False
            if _DOC.fullmatch(line):
                out.add(k)
                k += 1
                continue
            if (m := _TRIPLE.match(line)) and m.group(1) not in line[m.end():]:
                q = m.group(1)
                end = next((j for j in range(k + 1, len(lines)) if q in lines[j]), None)
                if end is not None and lines[end].split(q, 1)[1].strip()[:1] in ("", "#"):  # comment: quotes misled
                    out.update(range(k, end + 1))
                    k = end + 1
                    continue
        if line and (header or _NAME.match(line)):
            depth = (depth if header else 0) + sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))
            header = depth > 0
            opened = not header and line.endswith(":")
        k += 1
    return out


def first_line(node: ast.stmt) -> int:
    """The first line (1-based) of a parsed statement, its decorators included."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def callees(body: dict[str, list[str]], name: str) -> set[str]:
    """The other top-level functions that the body of `name` names."""
    words = set(_WORD.findall("\n".join(body.get(name, ()))))
    return {g for g in body if g and g != name and g in words}


def tests_naming(public: dict[str, bool]) -> dict[str, list[bool]]:
    """Identifier -> results of the public tests whose code names it."""
    index: dict[str, list[bool]] = defaultdict(list)
    for test, ok in public.items():
        for w in _words(test):
            index[w].append(ok)
    return index


@functools.lru_cache(maxsize=1 << 12)  # every turn of a group runs the same tests
def _words(test: str) -> frozenset[str]:
    """The identifiers a test's code names: none for a stdio test (it feeds stdin; its data is not code), and
    none inside a string literal (`solve('count') == 3` names solve, not a function called count)."""
    return frozenset() if test.startswith(STDIO_HEAD) else frozenset(_WORD.findall(_STRING.sub("", test)))


def passes(public: dict[str, bool], name: str, calls=frozenset(), index: dict | None = None) -> bool | None:
    """Does `name` pass the public tests whose code names it (all if none does)? None when a callee (`calls`, or a
    function returning them) fails its own: the failure may be the callee's."""
    index = tests_naming(public) if index is None else index

    def own(f):
        mine = index.get(f) if f else None
        return all(mine) if mine else all(public.values())
    if own(name):
        return True
    return False if all(own(g) for g in (calls() if callable(calls) else calls)) else None
