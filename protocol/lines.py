"""Lines and their alignment: the one line convention, the one aligner, and how origins survive an edit.

    python -c "from protocol.lines import align; print(align(['a', 'b', 'c'], ['a', 'x', 'c']))"

`lines_of`: text.split("\\n") without the piece after a final newline; `join`, its inverse. `align(a, b)`: difflib's
line opcodes from an exact LCS (rapidfuzz, in C++: 30 times difflib's speed), so re-emitted code is never new;
diffs.py and `carry` (provenance) share it. `normalize_line`: a line as diffs.py and the verdict compare it.
"""

from __future__ import annotations

import functools
import re

from rapidfuzz.distance import Indel

Range = tuple[int, int]  # [start, end) char range inside a response


def _strip_comment(line: str) -> str:
    quote, i = None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return line[:i]
        i += 1
    return line


@functools.lru_cache(maxsize=1 << 16)  # a group's files repeat most of their lines in every turn and trajectory
def normalize_line(line: str) -> str:
    """A line without its comment, whitespace folded to single spaces; "" for blank and comment-only lines."""
    if "#" in line:
        line = _strip_comment(line)
    return " ".join(line.split())


def lines_of(text: str) -> list[str]:
    out = text.split("\n")
    return out[:-1] if out[-1] == "" else out


def join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def align(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Line opcodes (tag, i1, i2, j1, j2) as difflib writes them, from an exact LCS of the lines."""
    # Lines as small ints: rapidfuzz takes a one-char string as its code point and "" as 0, so "\x00" == "".
    ids: dict[str, int] = {}
    a, b = [ids.setdefault(s, len(ids)) for s in a], [ids.setdefault(s, len(ids)) for s in b]
    out: list[list] = []
    for op in Indel.opcodes(a, b):
        if op.tag != "equal" and out and out[-1][0] != "equal":
            prev = out[-1]
            prev[2], prev[4] = op.src_end, op.dest_end
            prev[0] = "replace" if prev[2] > prev[1] and prev[4] > prev[3] else prev[0]
        else:
            out.append([op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end])
    return [tuple(o) for o in out]


def carry(old: list[str], old_origin: list, new: list[str], new_ranges: list, restore: bool = True) -> list:
    """Origins of `new` replacing `old`: with restore, a line aligned with an equal old line keeps its origin."""
    out = list(new_ranges)
    if not restore:
        return out
    for tag, i1, i2, j1, j2 in align(old, new):
        if tag == "equal":
            out[j1:j2] = old_origin[i1:i2]
    return out


def clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f"... [{len(s) - n} more chars]"


def fence(text: str, lang: str = "") -> str:
    """`text` in a markdown fence longer than any backtick run inside it."""
    n = max([3] + [len(r) + 1 for r in re.findall(r"`{3,}", text)])
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{'`' * n}{lang}\n{body}{'`' * n}"
