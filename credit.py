"""From sub-diffs to tokens: exact char ranges of sampled tokens, and the projection of A^D onto them.

    python -m tools.explain GROUP.jsonl --html out.html  # tokens coloured by Â (tools/explain.py renders credit)

How a char range becomes a token range (DESIGN.md §3, step 7):

1. `token_offsets(tokenizer, ids)` decodes the sampled ids incrementally, as streaming detokenizers do: the text
   that token k adds is decode(ids[p:k+1]) minus decode(ids[p:r]) for a window [p, r) of already final tokens,
   so decoders that drop a leading space (SentencePiece) or fuse bytes stay exact. C_k = number of final chars
   after token k; a decode ending in U+FFFD means token k stopped inside a multi-byte character (byte BPE, byte
   fallback), whose chars are not final yet. Token k's range is [C_{k-1}, C_k), widened by one char when it ends
   inside a character: every token holding bytes of a character covers it. The result is checked against
   decode(ids); any mismatch falls back to exact prefix decodes.
2. `tokens_in_range(offsets, start, end)`: the tokens whose range intersects [start, end): every char of the
   range is covered by a returned token, and a token with no byte in the range is never returned.
3. `project(traj, regions)`: each token of a turn inside an anchor member's ranges gets that member's A^D, tokens
   of no member 0. Regions come best-ranked first and a token keeps the first that claims it, so a token that
   straddles two is never counted twice. A member's ranges separated only by whitespace (the newline between two
   lines) are merged, so those tokens get its credit too.
"""

from __future__ import annotations

import bisect
import operator
import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from env import Trajectory

Range = tuple[int, int]
_BAD = "\ufffd"
_START, _END = operator.itemgetter(0), operator.itemgetter(1)


def _decode(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _ranges(final: list[int], partial: list[bool], n_chars: int) -> list[Range]:
    out, prev = [], 0
    for c, part in zip(final, partial):
        out.append((min(prev, n_chars), min(c + part, n_chars)))
        prev = c
    return out


def _slow(tokenizer, ids: list[int], text: str) -> list[Range]:
    """Exact but quadratic: C_k from the decode of every prefix, made monotone (a later decode can regress)."""
    lengths, longer = [], []
    for k in range(len(ids)):
        s = _decode(tokenizer, ids[: k + 1])
        lengths.append(len(os.path.commonprefix([s, text])))  # the common prefix with the full text
        longer.append(len(s) > lengths[-1])
    final = list(lengths)
    for k in range(len(ids) - 2, -1, -1):  # chars are final only once no later prefix takes them back
        final[k] = min(final[k], final[k + 1])
    final[-1:] = [len(text)] * bool(final)
    return _ranges(final, [lg or f < n for lg, f, n in zip(longer, final, lengths)], len(text))


def _incremental(decode, ids: list[int], text: str) -> list[Range] | None:
    """Step 1 of the module docstring with the given decode function; None if it does not rebuild `text`."""
    pieces: list[str] = []
    final, partial = [], []
    p = r = 0
    prefix, done = "", 0
    for k in range(len(ids)):
        full = decode(ids[p: k + 1])
        stable = full.startswith(prefix)
        new = full[len(prefix):] if stable else ""
        if (not stable or new.endswith(_BAD)) and k + 1 < len(ids):
            # Token k stops inside a character (or the decoder has not settled): count only the final chars.
            final.append(done + len(new.rstrip(_BAD)))
            partial.append(True)
            continue
        pieces.append(new)
        done += len(new)
        final.append(done)
        partial.append(False)
        p, r = r, k + 1
        prefix = decode(ids[p:r])
    return _ranges(final, partial, len(text)) if "".join(pieces) == text else None


def token_offsets(tokenizer, token_ids: list[int]) -> tuple[str, list[Range]]:
    """(decode(token_ids), char range [start, end) of every token in that text); see the module docstring."""
    ids = list(token_ids)
    text = _decode(tokenizer, ids)
    # The Rust backend's decode costs ~1 µs, the Python wrapper's ~5 µs: the wrapper only if the backend disagrees.
    if (backend := getattr(tokenizer, "backend_tokenizer", None)) is not None:
        out = _incremental(lambda x: backend.decode(x, skip_special_tokens=False), ids, text)
        if out is not None:
            return text, out
    out = _incremental(lambda x: _decode(tokenizer, x), ids, text)
    return text, out if out is not None else _slow(tokenizer, ids, text)


def _span(offsets: list[Range], start: int, end: int) -> tuple[int, int]:
    """[lo, hi): tokens whose range intersects [start, end); offsets have non-decreasing starts and ends."""
    if end <= start:
        return 0, 0
    lo = bisect.bisect_right(offsets, start, key=_END)
    return lo, bisect.bisect_left(offsets, end, lo, key=_START)


def tokens_in_range(offsets: list[Range], start: int, end: int) -> list[int]:
    """Indices of the tokens whose char range intersects [start, end)."""
    lo, hi = _span(offsets, start, end)
    return [k for k in range(lo, hi) if offsets[k][0] < end and offsets[k][1] > start]


def _merge(ranges: list[Range], text: str) -> list[Range]:
    out: list[list[int]] = []
    for s, e in sorted(ranges):
        if out and (s <= out[-1][1] or not text[out[-1][1]: s].strip()):
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def project(traj: Trajectory, regions) -> tuple[np.ndarray, np.ndarray]:
    """Per token of traj: (value, owner) from regions = [(turn index, char ranges, value, owner id), ...], best
    first (module docstring, step 3); value 0 and owner -1 elsewhere. Only a turn's sampled tokens can be claimed."""
    n = len(traj.token_ids)
    values = np.zeros(n, dtype=np.float32)                                       # [T]
    owner = np.full(n, -1, dtype=np.int64)                                        # [T]
    for t, ranges, value, oid in regions:
        turn = traj.turns[t]
        a = turn.span[0]
        for s, e in _merge(ranges, turn.response):
            lo, hi = _span(turn.offsets, s, e)
            hi = min(hi, turn.span[1] - a)  # never past the turn's own sampled tokens
            if lo < hi:
                free = owner[a + lo: a + hi] == -1
                owner[a + lo: a + hi][free] = oid
                values[a + lo: a + hi][free] = value
    return values, owner
