"""Edits with provenance: apply one parsed action to the workspace, carrying each line's origin.

    python -m pytest -q tests/test_env.py -k "search or diff or provenance"

`apply_search_replace` and `apply_diff` return the new lines and their origins (lines.carry), or raise `Refused`
with the message the model sees. SEARCH matches whole lines once: exactly, else ignoring trailing whitespace, else
under one uniform extra indent; else refused, with the closest region. Diffs are repaired, parsed with unidiff,
each hunk placed nearest its stated line; one that does not match refuses the whole diff.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import unidiff
from rapidfuzz import fuzz

from protocol.actions import Action, Line
from protocol.lines import carry, clip, fence, join, lines_of

TEST_FILE = re.compile(r"(tests?|conftest|test_.*|.*_test)\.py", re.IGNORECASE)
MAX_FILES = 64  # every turn records the whole workspace; a model must not bloat trajectories with files
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)")


class Refused(Exception):
    """An action that cannot be applied, with the message the model sees; `invalid`: malformed or forbidden
    (no valid action, for the penalty), not merely well-formed but not matching."""

    def __init__(self, msg: str, invalid: bool = False):
        super().__init__(msg)
        self.invalid = invalid


def check_path(path: str) -> str:
    """The normalized workspace path, or Refused naming why it is not editable."""
    if not path or "\x00" in path or "\\" in path:
        raise Refused(f"{path!r}: not a valid file path; use a relative path with forward slashes", invalid=True)
    if path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path):
        raise Refused(f"{path}: absolute paths are outside the workspace; use a relative path like solution.py",
                      invalid=True)
    parts = [p for p in PurePosixPath(path).parts if p != "."]
    if ".." in parts or not parts:
        raise Refused(f"{path}: paths with `..` leave the workspace; use a path inside it", invalid=True)
    if TEST_FILE.fullmatch(parts[-1]) or any(p.lower() in ("tests", "test") for p in parts[:-1]):
        raise Refused(f"{path}: test files are not editable; the tests are run for you", invalid=True)
    return "/".join(parts)


def _find(hay: list[str], needle: list[str], key=lambda s: s) -> list[int]:
    if not needle:
        return []
    nk = [key(s) for s in needle]
    return [p for p in range(len(hay) - len(nk) + 1)
            if key(hay[p]) == nk[0] and [key(s) for s in hay[p:p + len(nk)]] == nk]


def _indent_match(hay: list[str], needle: list[str]) -> list[tuple[int, str]]:
    """(position, prefix) where each non-blank needle line equals prefix + itself, one whitespace prefix for all."""
    if not (idx := [k for k, s in enumerate(needle) if s.strip()]):
        return []
    k0, first, out = idx[0], needle[idx[0]].rstrip(), []
    for p in range(len(hay) - len(needle) + 1):
        h = hay[p + k0].rstrip()
        pre = h[:len(h) - len(first)]
        if not h.endswith(first) or not pre or pre.strip():
            continue
        if all(hay[p + k].rstrip() == pre + s.rstrip() if s.strip() else not hay[p + k].strip()
               for k, s in enumerate(needle)):
            out.append((p, pre))
    return out


def closest(hay: list[str], needle: list[str], max_chars: int = 1000) -> str:
    """The region of `hay` most similar to `needle` (rapidfuzz ratio), numbered, for the model to copy from."""
    if not hay:
        return "(the file is empty)"
    k = max(1, min(len(needle), len(hay)))
    target = "\n".join(needle)[:2000]
    step = max(1, (len(hay) - k + 1) // 1000)  # bound the work on huge files: <= 1000 windows of <= 2000 chars
    best, score = 0, -1.0
    for p in range(0, len(hay) - k + 1, step):
        s = fuzz.ratio("\n".join(hay[p:p + k])[:2000], target)
        if s > score:
            best, score = p, s
    body = "".join(f"{best + n + 1:4d} | {s}\n" for n, s in enumerate(hay[best:best + k]))
    return f"closest region, lines {best + 1}-{best + k} ({score:.0f}% similar):\n{fence(clip(body, max_chars))}"


def apply_search_replace(lines: list[str], origin: list, a: Action, max_chars: int,
                         restore: bool = True) -> tuple[list[str], list, str]:
    new = [ln.text for ln in a.lines]
    ranges = [ln.range for ln in a.lines]
    if not [s for s in a.search if s.strip()]:
        if any(s.strip() for s in lines):
            raise Refused(f"{a.path}: empty SEARCH block, but the file is not empty; copy the lines to replace")
        return new, list(ranges), f"{a.path}: written from an empty SEARCH ({len(new)} line{'s' * (len(new) != 1)})."
    note, pre = "", ""
    if not (hits := _find(lines, a.search)):
        hits = _find(lines, a.search, key=str.rstrip)
        note = " (ignoring trailing whitespace)"
    if not hits:
        ind = _indent_match(lines, a.search)
        hits = [p for p, _ in ind]
        if len(ind) == 1:
            pre = ind[0][1]
            note = f" (re-indented by {len(pre)} characters to match the file)"
    if len(hits) != 1:
        if hits:
            where = ", ".join(str(p + 1) for p in hits[:8])
            raise Refused(f"{a.path}: SEARCH block matches {len(hits)} places (starting at lines {where}); "
                          "add surrounding lines so it matches exactly once.")
        raise Refused(f"{a.path}: SEARCH block not found in the file; copy its lines exactly.\n"
                      + closest(lines, a.search, max_chars))
    p, n = hits[0], len(a.search)
    new = [pre + s if s.strip() else s for s in new]
    mid = carry(lines[p:p + n], origin[p:p + n], new, ranges, restore)
    return lines[:p] + new + lines[p + n:], origin[:p] + mid + origin[p + n:], \
        f"{a.path}: SEARCH/REPLACE applied at lines {p + 1}-{p + n}{note}."


def _repair_diff(content: list[Line], path: str) -> tuple[str, list[Line | None], set[int]]:
    """(diff text, the response line of each diff line, hunks without a position), with the two slips models make
    fixed so that unidiff parses the body as written: wrong hunk counts, blank context lines without their space."""
    out: list[str] = []
    src: list[Line | None] = []
    unknown: set[int] = set()  # 1-based diff line numbers of "@@" headers without numbers
    k = 0
    if path and not any(ln.text.startswith("--- ") for ln in content):
        out += [f"--- a/{path}", f"+++ b/{path}"]
        src += [None, None]
    while k < len(content):
        t = content[k].text
        if not t.startswith("@@"):
            if t.startswith(("--- ", "+++ ")):
                out.append(t)
                src.append(content[k])
            k += 1
            continue
        body = []
        k += 1
        while k < len(content) and not content[k].text.startswith(("@@", "--- ")):
            b = content[k].text
            if b == "":
                body.append(Line(" ", content[k].start - 1))  # blank context line; its range is never used
            elif b[0] in " +-\\":
                body.append(content[k])
            k += 1
        while body and body[-1].text == " ":  # trailing blank lines after a hunk are layout, not context
            body.pop()
        if not (m := _HUNK.match(t)):
            unknown.add(len(out) + 1)
        s, d = (int(m[1]), int(m[2])) if m else (1, 1)
        ns = sum(b.text[0] in " -" for b in body)
        nt = sum(b.text[0] in " +" for b in body)
        out.append(f"@@ -{s},{ns} +{d},{nt} @@")
        src.append(None)
        out += [b.text for b in body]
        src += body
    return "\n".join(out) + "\n", src, unknown


def _hunk_position(lines: list[str], old: list[str], h, lo: int, want: int, numbered: bool, path: str,
                   max_chars: int) -> int:
    """Where a hunk's ' ' and '-' lines sit in the file: the match nearest the stated line, at or after `lo`."""
    if not old:
        if not numbered and any(s.strip() for s in lines):
            raise Refused(f"{path}: a hunk with only '+' lines needs line numbers (@@ -N,0 +M,K @@)")
        return min(max(want + 1, 0), len(lines)) if numbered else 0  # "-N,0" inserts after line N
    hits = _find(lines, old) or _find(lines, old, key=str.rstrip)
    if not (after := [q for q in hits if q >= lo] or hits):
        raise Refused(f"{path}: hunk @@ -{h.source_start} @@ does not match the file (its ' ' and '-' lines "
                      "must be copied exactly).\n" + closest(lines, old, max_chars))
    if not numbered and len(after) > 1:
        raise Refused(f"{path}: a hunk without line numbers matches {len(after)} places; add context lines")
    return min(after, key=lambda q: abs(q - want))


def _apply_hunk(lines: list[str], origin: list, h, p: int, src: list[Line | None],
                restore: bool = True) -> tuple[list[str], list, int]:
    """New lines and origins of the hunk placed at line p, and the index after the old lines it replaced; each
    run of '-' lines replaced by '+' lines goes through carry, so a '+' line equal to its '-' line carries over."""
    new_lines, new_origin, run_old, run_new = [], [], [], []
    q = p
    for ln in [*h, None]:  # None flushes the last run
        if ln is None or ln.is_context:
            new_lines += [t for t, _ in run_new]
            new_origin += carry([lines[k] for k in run_old], [origin[k] for k in run_old],
                                 [t for t, _ in run_new], [r for _, r in run_new], restore)
            run_old, run_new = [], []
            if ln is not None:
                new_lines.append(lines[q])
                new_origin.append(origin[q])
                q += 1
        elif ln.is_removed:
            run_old.append(q)
            q += 1
        elif ln.is_added:
            sl = src[ln.diff_line_no - 1]
            run_new.append((sl.text[1:], (sl.start + 1, sl.start + len(sl.text))))
    return new_lines, new_origin, q


def apply_diff(files: dict[str, str], origins: dict[str, list], a: Action, entry: str,
               max_chars: int, restore: bool = True) -> list[tuple[str, list[str], list, str]]:
    """Apply a unified diff atomically; return (path, lines, origin, message) per file, or raise Refused."""
    text, src, unknown = _repair_diff(a.lines, a.path or entry)
    try:
        patch = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as e:
        raise Refused(f"could not parse the diff ({e}); use --- a/PATH, +++ b/PATH, then @@ hunks",
                      invalid=True) from None
    if not any(len(pf) for pf in patch):
        raise Refused("the diff has no hunks; each change needs an @@ line followed by ' ', '-' and '+' lines",
                      invalid=True)
    out = []
    for pf in patch:
        # our own added/removed tests: unidiff also calls "@@ -1,3 +0,0 @@" a removed file
        added, removed = pf.source_file == "/dev/null", pf.target_file == "/dev/null"
        s_path, t_path = (re.sub(r"^[ab]/", "", p) for p in (pf.source_file, pf.target_file))
        if removed:
            raise Refused(f"{s_path}: deleting files is not supported; write the file empty instead", invalid=True)
        if not added and s_path != t_path:
            raise Refused(f"{s_path} -> {t_path}: renaming files is not supported", invalid=True)
        path = check_path(t_path)
        if added and files.get(path, "").strip():
            raise Refused(f"{path}: the diff creates it, but it exists; diff against its current content")
        if not added and path not in files:
            raise Refused(f"{path}: no such file; existing files: {', '.join(sorted(files))}")
        lines = lines_of(files.get(path, ""))
        origin = list(origins.get(path, [None] * len(lines)))
        shift, lo = 0, 0
        for h in pf:
            old = [ln.value.rstrip("\n") for ln in h if ln.is_context or ln.is_removed]
            numbered = not (len(h) and h[0].diff_line_no - 1 in unknown)
            p = _hunk_position(lines, old, h, lo, h.source_start - 1 + shift, numbered, path, max_chars)
            new_lines, new_origin, q = _apply_hunk(lines, origin, h, p, src, restore)
            lines, origin = lines[:p] + new_lines + lines[q:], origin[:p] + new_origin + origin[q:]
            shift += len(new_lines) - (q - p)
            lo = p + len(new_lines)
        files, origins = {**files, path: join(lines)}, {**origins, path: origin}
        out.append((path, lines, origin, f"{path}: diff applied ({len(pf)} hunk{'s' * (len(pf) != 1)})."))
    return out
