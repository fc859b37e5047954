"""The multi-turn coding environment: action protocol, edits with line provenance, feedback, rewards.

    python -c "import env,tasks; [print(m['content']) for m in env.Episode(tasks.load('data/tasks.jsonl')[0]).messages]"

An episode is a workspace S_0 (the task's files) and turns t = 1..T. In turn t
the model writes a response y_t; its actions turn S_{t-1} into S_t, and the
environment answers with public-test feedback. Rewards (DESIGN.md §4):

    r_t = -p·[turn had no valid action] + c·(Φ(S_t) − Φ(S_{t−1}))     step reward, Turn.reward
    Φ(S) = share of public tests that the entry file of S passes          (c = shaping_coef, p = invalid_penalty)
    R    = 1[all hidden tests pass]  or  share passed                     final reward, Trajectory.reward

Shaping telescopes to c·(Φ(S_T) − Φ(S_0)), so it cannot pay for slowness.

Provenance: after each turn, `Turn.origin[path][i]` is the char range [a, b) of
`Turn.response` that wrote line i of `files_after[path]`, or None when the line
was carried over. Inside an edited region, old and new lines are aligned with
difflib; a new line equal to the old line it is aligned with is carried over
(keeps its old origin), so re-emitted code never earns credit. `response[a:b]`
is exactly the line's text, except when a SEARCH block matched only after
re-indenting (see below): then the line is `indent + response[a:b]`.
Lines are `text.split("\\n")` without the empty piece after a final newline;
CRLF in a response counts as LF, and edited files always end in a newline.

Action protocol (what the prompt teaches; every rule is lenient where a
model's intent is unambiguous, and strict where a guess could corrupt code):

    solution.py                      search/replace: the path on the line before the fence
    ```python                        (or in the info string: ```python solution.py); SEARCH
    <<<<<<< SEARCH                   must match whole lines exactly once: exactly, else
        return a - b                 ignoring trailing whitespace, else with one uniform
    =======                          extra indent in the file (then REPLACE is re-indented).
        return a + b                 No match or several matches: refused, and the
    >>>>>>> REPLACE                  observation shows the closest region (rapidfuzz).
    ```                              Empty SEARCH creates a missing or empty file.

    solution.py                      whole-file write: a named fence without markers.
    ```python                        A response whose only fenced block is one unnamed
    def add(a, b): ...               python block writes the entry file.
    ```

    ```diff                          unified diff (unidiff): --- a/p / +++ b/p headers (or the
    --- a/solution.py                path in the info string; none means the entry file);
    +++ b/solution.py                hunk counts are recomputed from the body, so sloppy
    @@ -1,2 +1,2 @@                  headers parse; every hunk's context and removed lines
    ...                              must match the file (nearest match to the stated line
    ```                              wins); one bad hunk refuses the whole diff.

    run tests                        a line of its own (backticks, bold, bullets allowed)
    finish                           ends the episode; hidden tests grade the workspace

Markers and fences count only as whole lines, so they may appear inside code
strings mid-line (a marker that is a whole line of a multi-line string does
count: the one ambiguity of the format). Inside a SEARCH/REPLACE block only its
markers count (fences there are content). A fence closes at a bare fence at
least as long as the opening one. Inside a markdown block an inner ```lang
fence nests; inside code it cannot be code, so it closes an unclosed block and
opens the next. An unclosed fence runs to the end of the response (noted in the
observation); an unclosed SEARCH/REPLACE block is refused. An unnamed
SEARCH/REPLACE or diff edits the entry file. Paths must be relative and inside
the workspace (no `/...`, `..`, `~`, backslashes), test files (tests.py,
test_*.py, *_test.py, conftest.py, tests/...) cannot be edited, and the
workspace holds at most MAX_FILES files. Edits apply in order; one failing edit
does not stop the rest. "No valid action" (penalty p, explanatory observation,
the episode goes on) means no action at all, or only malformed or forbidden
ones; a well-formed edit whose SEARCH does not match is a valid action that
failed (no penalty; the observation shows the closest region). Only the entry
file is graded; a Python file that does not compile is reported with its line,
and an entry that does not compile passes no test (Φ = 0) without a sandbox run.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import PurePosixPath

import unidiff
from rapidfuzz import fuzz

import sandbox
from tasks import Task, Test

# --- records (DESIGN.md §2) -------------------------------------------------

Range = tuple[int, int]  # [start, end) char range inside Turn.response


@dataclass
class Turn:
    response: str                      # assistant text, decoded from the sampled ids
    span: Range = (0, 0)               # token range of the response in Trajectory.token_ids
    offsets: list[Range] = field(default_factory=list)  # char range of each response token
    action: str = ""                   # kinds of the parsed actions, e.g. "search_replace,run_tests"
    applied: bool = False              # the turn had at least one edit and every edit applied
    files_before: dict[str, str] = field(default_factory=dict)
    files_after: dict[str, str] = field(default_factory=dict)
    # origin[path][line_no] = char range in `response` that wrote that line of
    # files_after[path], or None when the line was carried over unchanged.
    origin: dict[str, list[Range | None]] = field(default_factory=dict)
    observation: str = ""
    reward: float = 0.0                # step reward r_t (penalty + shaping); the final reward is NOT in it
    # public[test] = passed, for each public test run on S_t after this turn (as the model sees the
    # test, describe_test); None when no test ran. DiDPO reads which function's tests a piece broke.
    public: dict[str, bool] | None = None


@dataclass
class Trajectory:
    task_id: str
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)   # 1 exactly on sampled assistant tokens
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0                                   # final reward, from hidden tests
    sampler_logprobs: list[float] | None = None           # aligned with token_ids (0 off the mask)
    truncated: bool = False
    meta: dict = field(default_factory=dict)
    hack: bool = False                                    # final code touches the grader (grader_touch)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(line: str) -> Trajectory:
        d = json.loads(line)
        turns = []
        for t in d.pop("turns"):
            t["span"] = tuple(t["span"])
            t["offsets"] = [tuple(o) for o in t["offsets"]]
            t["origin"] = {p: [tuple(r) if r is not None else None for r in rs] for p, rs in t["origin"].items()}
            turns.append(Turn(**t))
        return Trajectory(turns=turns, **d)


@dataclass
class EnvConfig:
    # episode
    max_turns: int = 8                  # the episode ends after this many turns
    stop_when_public_pass: bool = False  # also end as soon as every public test passes
    # rewards
    reward: str = "binary"              # final reward: "binary" (all hidden pass) or "fraction" (share passed)
    invalid_penalty: float = 0.01       # subtracted from r_t when a turn has no valid action
    shaping_coef: float = 0.0           # c in r_t = c·(Φ_t − Φ_{t−1}); 0 turns shaping off
    # feedback and grading
    feedback_chars: int = 1000          # each of input / expected / actual / stderr is cut to this
    grade_mode: str = "strict"          # sandbox.grade mode: "strict" (rewards the code cannot game), "judge", "lcb"
    limits: sandbox.Limits | None = None
    sandbox_workers: int | None = None  # parallel grading processes; None: one per core (train.py divides by ranks)
    # token budgets (enforced by the rollout loop, which owns the tokens)
    max_response_tokens: int = 512
    max_total_tokens: int = 8192 + 4096

    def __post_init__(self):
        if self.reward not in ("binary", "fraction"):
            raise ValueError(f"EnvConfig.reward={self.reward!r}; use 'binary' or 'fraction'")
        if self.grade_mode not in sandbox.MODES:
            raise ValueError(f"EnvConfig.grade_mode={self.grade_mode!r}; use one of {', '.join(sandbox.MODES)}")
        for name in ("max_turns", "feedback_chars", "max_response_tokens", "max_total_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"EnvConfig.{name}={getattr(self, name)}; it must be >= 1")
        if self.invalid_penalty < 0:
            raise ValueError(f"EnvConfig.invalid_penalty={self.invalid_penalty}; pass a penalty >= 0")


def make_config(**cfg) -> EnvConfig:
    """EnvConfig from keyword overrides, naming any unknown key."""
    known = {f.name for f in fields(EnvConfig)}
    bad = sorted(set(cfg) - known)
    if bad:
        raise ValueError(f"unknown EnvConfig field(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    return EnvConfig(**cfg)


# --- parsing ------------------------------------------------------------------

EDITS = ("search_replace", "diff", "write")
_SR_START = re.compile(r"[ \t]*<{5,9} ?SEARCH[ \t]*")
_SR_MID = re.compile(r"[ \t]*={5,9}[ \t]*")
_SR_END = re.compile(r"[ \t]*>{5,9} ?REPLACE[ \t]*")
_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)")
_PATH = re.compile(r"[\w.\-/~]+")
_EXT = re.compile(r"\.[A-Za-z]\w*$")
_COMMANDS = {"run tests": "run_tests", "run_tests": "run_tests", "run the tests": "run_tests", "finish": "finish"}
_PY = ("", "python", "py", "python3")


@dataclass
class Line:
    text: str    # without "\n" (and without a trailing "\r")
    start: int   # char offset of text in the response

    @property
    def range(self) -> Range:
        return (self.start, self.start + len(self.text))


@dataclass
class Action:
    kind: str                                          # search_replace | diff | write | run_tests | finish
    path: str = ""                                     # "" = the entry file
    search: list[str] = field(default_factory=list)    # search_replace: the lines to find
    lines: list[Line] = field(default_factory=list)    # replacement / file content / diff text
    error: str = ""                                    # refused while parsing (shown to the model)
    note: str = ""                                     # accepted, with a remark


def _split(response: str) -> list[Line]:
    out, pos = [], 0
    for raw in response.split("\n"):
        out.append(Line(raw[:-1] if raw.endswith("\r") else raw, pos))
        pos += len(raw) + 1
    return out[:-1] if len(out) > 1 and out[-1].text == "" else out  # no empty line after a final newline


def _path_of(text: str) -> str | None:
    """The file path a line names ("solution.py", "**`a/b.py`**:", "File: x.py"), or None."""
    t = text.strip().strip("*`#> ").rstrip(":").strip("*` ")
    for prefix in ("file:", "path:", "filename:"):
        if t.lower().startswith(prefix):
            t = t[len(prefix):].strip().strip("`*")
    if len(t) > 200 or not _PATH.fullmatch(t):
        return None
    return t if ("/" in t or _EXT.search(t)) else None


def _command(text: str) -> str | None:
    t = text.strip().strip("`*_>#- \t").rstrip(".!").strip("`*_ ").lower()
    return _COMMANDS.get(t)


def _fence_info(info: str) -> tuple[str, str | None]:
    """(language, path) from a fence info string like "python solution.py" or "diff path=a.py"."""
    words = re.split(r"[\s:]+", info.strip())
    lang = words[0].lower() if words and words[0] and not _path_of(words[0]) else ""
    for w in words:
        w = w.split("=", 1)[-1].strip("'\"")
        if w and _path_of(w):
            return lang, _path_of(w)
    return lang, None


def _dedent(lines: list[Line], n: int) -> list[Line]:
    """Strip up to n leading spaces (the fence's own indent) from each content line."""
    if n == 0:
        return lines
    out = []
    for ln in lines:
        k = min(n, len(ln.text) - len(ln.text.lstrip(" ")))
        out.append(Line(ln.text[k:], ln.start + k))
    return out


def _sr_one(lines: list[Line], j: int, path: str) -> tuple[Action, int]:
    """Parse the SEARCH/REPLACE block whose start marker is lines[j]; return it and the next index."""
    mid = end = None
    for k in range(j + 1, len(lines)):
        if mid is None and _SR_MID.fullmatch(lines[k].text):
            mid = k
        elif mid is not None and _SR_END.fullmatch(lines[k].text):
            end = k
            break
    if end is None:
        missing = "=======" if mid is None else ">>>>>>> REPLACE"
        where = f" for {path}" if path else ""
        err = f"SEARCH block{where} (response line {j + 1}) has no `{missing}` line; it was not applied."
        return Action("search_replace", path, error=err), len(lines)
    a = Action("search_replace", path, search=[ln.text for ln in lines[j + 1:mid]], lines=lines[mid + 1:end])
    return a, end + 1


def _fence_block(lines: list[Line], i: int, char: str, n: int, nest: bool) -> tuple[list[Line], int, bool]:
    """Content lines of the fence opened at lines[i], the index after it, and whether it closed.

    A fence line with an info string (```json) inside a block nests when the
    block is markdown (`nest`); inside code it cannot be code, so it means the
    block was left unclosed and a new one starts there.
    """
    depth, in_sr = 0, False
    for k in range(i + 1, len(lines)):
        t = lines[k].text
        if in_sr:
            in_sr = not _SR_END.fullmatch(t)
            continue
        if _SR_START.fullmatch(t):
            in_sr = True
            continue
        m = _FENCE.fullmatch(t)
        if m and m[2][0] == char:
            if m[3].strip() == "" and len(m[2]) >= n:
                if depth == 0:
                    return lines[i + 1:k], k + 1, True
                depth -= 1
            elif m[3].strip() and len(m[2]) == n:
                if not nest:
                    return lines[i + 1:k], k, False
                depth += 1
    return lines[i + 1:], len(lines), False


def _is_diff(lang: str, content: list[Line]) -> bool:
    if lang in ("diff", "patch", "udiff"):
        return True
    texts = [ln.text for ln in content if ln.text.strip()][:2]
    return len(texts) == 2 and texts[0].startswith("--- ") and texts[1].startswith("+++ ")


def parse(response: str) -> list[Action]:
    """All actions in a response, in order; refused ones carry `error`. Never raises."""
    lines = _split(response)
    actions: list[Action] = []
    unnamed: list[Action] = []  # plain unnamed fenced blocks: the entry-file write if it is the only block
    n_blocks = 0
    prev: str | None = None  # last non-blank line outside fences, a candidate path line
    i = 0
    while i < len(lines):
        t = lines[i].text
        m = _FENCE.fullmatch(t)
        if _SR_START.fullmatch(t):
            a, i = _sr_one(lines, i, _path_of(prev or "") or "")
            actions.append(a)
            prev = None
            continue
        if m and not (m[2][0] == "`" and "`" in m[3]):
            lang, path = _fence_info(m[3])
            path = path or _path_of(prev or "")
            nest = lang in ("md", "markdown") or (path or "").endswith(".md")
            content, i, closed = _fence_block(lines, i, m[2][0], len(m[2]), nest)
            content = _dedent(content, len(m[1].expandtabs(4)))
            note = "" if closed else "a code block was not closed; it was read up to the next fence or the end"
            prev = None
            if len(content) == 1 and path is None and _command(content[0].text):
                actions.append(Action(_command(content[0].text)))
                continue
            n_blocks += 1
            if any(_SR_START.fullmatch(ln.text) for ln in content):
                j = 0
                while j < len(content):
                    if _SR_START.fullmatch(content[j].text):
                        a, j = _sr_one(content, j, path or "")
                        a.note = note
                        actions.append(a)
                    else:
                        path = _path_of(content[j].text) or path  # aider style: a path line per block
                        j += 1
            elif _is_diff(lang, content):
                actions.append(Action("diff", path or "", lines=content, note=note))
            elif path is not None:
                actions.append(Action("write", path, lines=content, note=note))
            elif lang in _PY and any(ln.text.strip() for ln in content):  # a stray empty ``` never wipes a file
                a = Action("write", "", lines=content, note=note)
                actions.append(a)
                unnamed.append(a)
            continue
        cmd = _command(t)
        if cmd:
            actions.append(Action(cmd))
        if t.strip():
            prev = t
        i += 1
    if n_blocks > 1:  # several blocks: unnamed ones are examples or ambiguous, never silent writes
        for a in unnamed:
            a.kind = "ignored"
            a.error = ("a code block without a file name was ignored: when a reply has several code blocks, "
                       "put the file path alone on the line before each block to write")
    return actions


# --- workspace edits with provenance --------------------------------------------


class Refused(Exception):
    """An action that cannot be applied; the message is shown to the model.

    `invalid`: the action is malformed or forbidden (it does not count as a
    valid action for the penalty), as opposed to well-formed but not matching.
    """

    def __init__(self, msg: str, invalid: bool = False):
        super().__init__(msg)
        self.invalid = invalid


TEST_FILE = re.compile(r"(tests?|conftest|test_.*|.*_test)\.py", re.IGNORECASE)
MAX_FILES = 64  # every turn records the whole workspace; a model must not bloat trajectories with files


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


def lines_of(text: str) -> list[str]:
    out = text.split("\n")
    return out[:-1] if out[-1] == "" else out


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def _carry(old: list[str], old_origin: list, new: list[str], new_ranges: list) -> list:
    """Origins of `new` replacing `old`: a line aligned (difflib) with an equal old line keeps that line's origin."""
    out = list(new_ranges)
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out[j1:j2] = old_origin[i1:i2]
    return out


def _find(hay: list[str], needle: list[str], key=lambda s: s) -> list[int]:
    if not needle:
        return []
    nk = [key(s) for s in needle]
    return [p for p in range(len(hay) - len(nk) + 1)
            if key(hay[p]) == nk[0] and [key(s) for s in hay[p:p + len(nk)]] == nk]


def _indent_match(hay: list[str], needle: list[str]) -> list[tuple[int, str]]:
    """(position, prefix) where each non-blank needle line equals prefix + itself, one whitespace prefix for all."""
    idx = [k for k, s in enumerate(needle) if s.strip()]
    if not idx:
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


def fence(text: str, lang: str = "") -> str:
    """`text` in a markdown fence longer than any backtick run inside it."""
    n = max([3] + [len(r) + 1 for r in re.findall(r"`{3,}", text)])
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{'`' * n}{lang}\n{body}{'`' * n}"


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


def apply_search_replace(lines: list[str], origin: list, a: Action, max_chars: int) -> tuple[list[str], list, str]:
    new = [ln.text for ln in a.lines]
    ranges = [ln.range for ln in a.lines]
    if not [s for s in a.search if s.strip()]:
        if any(s.strip() for s in lines):
            raise Refused(f"{a.path}: empty SEARCH block, but the file is not empty; copy the lines to replace")
        return new, list(ranges), f"{a.path}: written from an empty SEARCH ({len(new)} line{'s' * (len(new) != 1)})."
    note, pre = "", ""
    hits = _find(lines, a.search)
    if not hits:
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
    mid = _carry(lines[p:p + n], origin[p:p + n], new, ranges)
    return lines[:p] + new + lines[p + n:], origin[:p] + mid + origin[p + n:], \
        f"{a.path}: SEARCH/REPLACE applied at lines {p + 1}-{p + n}{note}."


_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)")


def _repair_diff(content: list[Line], path: str) -> tuple[str, list[Line | None], set[int]]:
    """Diff text with recomputed hunk counts; the response line of each diff line; hunks without a position.

    Models get hunk counts wrong and drop the leading space of blank context
    lines; both are fixed here so that unidiff can parse the body as written.
    """
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
        m = _HUNK.match(t)
        if not m:
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
    after = [q for q in hits if q >= lo] or hits
    if not after:
        raise Refused(f"{path}: hunk @@ -{h.source_start} @@ does not match the file (its ' ' and '-' lines "
                      "must be copied exactly).\n" + closest(lines, old, max_chars))
    if not numbered and len(after) > 1:
        raise Refused(f"{path}: a hunk without line numbers matches {len(after)} places; add context lines")
    return min(after, key=lambda q: abs(q - want))


def _apply_hunk(lines: list[str], origin: list, h, p: int, src: list[Line | None]) -> tuple[list[str], list, int]:
    """New lines and origins of the hunk placed at line p, and the index after the old lines it replaced.

    Context lines keep their origin; each run of '-' lines replaced by a run of
    '+' lines goes through _carry, so a '+' line equal to its '-' line carries over.
    """
    new_lines, new_origin, run_old, run_new = [], [], [], []
    q = p
    for ln in [*h, None]:  # None flushes the last run
        if ln is None or ln.is_context:
            new_lines += [t for t, _ in run_new]
            new_origin += _carry([lines[k] for k in run_old], [origin[k] for k in run_old],
                                 [t for t, _ in run_new], [r for _, r in run_new])
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
               max_chars: int) -> list[tuple[str, list[str], list, str]]:
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
            new_lines, new_origin, q = _apply_hunk(lines, origin, h, p, src)
            lines, origin = lines[:p] + new_lines + lines[q:], origin[:p] + new_origin + origin[q:]
            shift += len(new_lines) - (q - p)
            lo = p + len(new_lines)
        files, origins = {**files, path: _join(lines)}, {**origins, path: origin}
        out.append((path, lines, origin, f"{path}: diff applied ({len(pf)} hunk{'s' * (len(pf) != 1)})."))
    return out


# --- feedback -----------------------------------------------------------------


def clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f"... [{len(s) - n} more chars]"


def syntax_error(path: str, text: str) -> str | None:
    """'SyntaxError in p line N: msg' with the offending line, or None; compiles, never runs."""
    if not path.endswith(".py"):
        return None
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        if not e.lineno:  # e.g. null bytes: the error has no position
            return f"SyntaxError in {path}: {e.msg}"
        lines = lines_of(text)
        where = lines[e.lineno - 1].strip() if 0 < e.lineno <= len(lines) else ""
        return f"SyntaxError in {path} line {e.lineno}: {e.msg}" + (f"\n    {clip(where, 200)}" if where else "")
    except (ValueError, MemoryError, RecursionError) as e:  # null bytes, absurd nesting
        return f"{path} does not compile: {type(e).__name__}: {e}"
    return None


def describe_test(t: Test, fn_name: str | None) -> str:
    if t.kind == "stdio":
        return f"input:\n{fence(t.input)}\nexpected output:\n{fence(t.output)}"
    if t.kind == "call":
        args = ", ".join(x for x in t.input.split("\n") if x.strip())
        return f"{fn_name}({args}) should return {t.output}"
    return fence(t.input, "python")


def report_tests(tests: list[Test], verdicts: list[sandbox.Verdict], fn_name: str | None, n: int) -> str:
    passed = sum(v.passed for v in verdicts)
    head = f"Public tests: {passed}/{len(tests)} passed."
    fail = next((k for k, v in enumerate(verdicts) if not v.passed), None)
    if fail is None:
        return head
    t, v = tests[fail], verdicts[fail]
    parts = [head, f"First failure: test {fail + 1} ({v.status})."]
    if t.kind == "stdio":
        parts += [f"input:\n{fence(clip(t.input, n))}", f"expected:\n{fence(clip(t.output, n))}"]
    elif t.kind == "call":
        args = ", ".join(x for x in t.input.split("\n") if x.strip())
        parts += [f"call: {clip(f'{fn_name}({args})', n)}", f"expected: {clip(t.output, n)}"]
    else:
        parts += [f"test code:\n{fence(clip(t.input, n), 'python')}"]
    if v.detail:
        parts.append(f"result:\n{fence(clip(v.detail, n))}")
    return "\n".join(parts)


# --- prompt -------------------------------------------------------------------

PROTOCOL = """\
You solve a programming problem by editing files in a workspace. Each reply may start with brief \
reasoning, then holds one or more actions, applied in order:

1. Edit part of a file: the file path alone on a line, then a fenced block with SEARCH/REPLACE markers. \
The SEARCH lines must match whole lines of the file exactly once; they are replaced by the REPLACE lines. \
Use several blocks for several edits.
2. Write a whole file: the file path alone on a line, then a fenced block with the complete new content.
3. Apply a unified diff: a ```diff block with `--- a/PATH` and `+++ b/PATH` headers and @@ hunks.
4. `run tests` alone on a line: run the public tests on {entry}.
5. `finish` alone on a line: stop. {entry} is then graded on hidden tests.

A reply whose only code is one ```python block replaces {entry}. Paths are relative to the workspace; \
test files cannot be edited. After every edit you see the public test results.

Example reply:
The loop stops one element early.
{entry}
```python
<<<<<<< SEARCH
    for i in range(len(xs) - 1):
=======
    for i in range(len(xs)):
>>>>>>> REPLACE
```
run tests"""


def build_messages(task: Task, files: dict[str, str]) -> list[dict]:
    """[system, user] messages: the protocol; the problem, workspace files and public examples (never hidden tests)."""
    user = [f"# Problem\n\n{task.prompt.strip()}", "# Workspace"]
    for path, text in sorted(files.items()):
        user.append(f"{path}\n{fence(text, 'python' if path.endswith('.py') else '')}")
    if task.public_tests:
        user.append("# Public tests\n\n" + "\n\n".join(describe_test(t, task.fn_name) for t in task.public_tests))
    if task.fn_name:
        user.append(f"The graded function is `{task.fn_name}` in {task.entry}.")
    return [{"role": "system", "content": PROTOCOL.format(entry=task.entry)},
            {"role": "user", "content": "\n\n".join(user)}]


# --- the episode --------------------------------------------------------------

_PHI0: dict[tuple, float] = {}  # Φ(S_0) per (code, tests): every episode of a task shares its starter


class Episode:
    """One live episode, text only; the rollout loop owns tokens and batches the sandbox calls.

    Per turn: job = act(response); verdicts = grade_many([job, ...]); msg = observe(verdicts).
    When done: R = finish(grade_many([final_job()])[0]).
    """

    def __init__(self, task: Task, cfg: EnvConfig | None = None):
        if not task.hidden_tests:
            raise ValueError(f"task {task.id} has no hidden tests; the final reward needs at least one")
        self.task, self.cfg = task, cfg or EnvConfig()
        self.files = {p: t.replace("\r\n", "\n") for p, t in task.files.items()}
        self.files.setdefault(task.entry, "")
        self.messages = build_messages(task, self.files)
        self.turns: list[Turn] = []
        self.done = False
        self.reward = 0.0
        self.hack = False
        self._job: sandbox.GradeJob | None = None
        self._pending: dict = {}
        self.phi = self._phi0() if self.cfg.shaping_coef else 0.0

    def _public_job(self) -> sandbox.GradeJob:
        return sandbox.GradeJob(code=self.files[self.task.entry], tests=self.task.public_tests,
                                fn_name=self.task.fn_name, mode=self.cfg.grade_mode,
                                stop_on_first_failure=False, limits=self.cfg.limits)

    def _phi0(self) -> float:
        # Shaping needs Φ(S_0). It is graded here, synchronously, once per distinct starter,
        # because act() can hand the rollout loop only one job per turn.
        code = self.files[self.task.entry]
        if not self.task.public_tests or not code.strip() or syntax_error(self.task.entry, code):
            return 0.0
        key = (code, repr(self.task.public_tests), self.task.fn_name, self.cfg.grade_mode)
        if key not in _PHI0:
            j = self._public_job()
            vs = sandbox.grade(j.code, j.tests, fn_name=j.fn_name, stop_on_first_failure=False, mode=j.mode,
                               limits=j.limits)
            _PHI0[key] = sum(v.passed for v in vs) / len(self.task.public_tests)
        return _PHI0[key]

    def _apply(self, a: Action, origins: dict[str, list]) -> list[tuple[str, list[str], list, str]]:
        """Apply one edit to the workspace copy in `origins`' frame; (path, lines, origin, message) per file."""
        n, entry = self.cfg.feedback_chars, self.task.entry
        if a.kind == "diff":
            return apply_diff(self.files, origins, a, entry, n)
        path = check_path(a.path or entry)
        lines, origin = lines_of(self.files.get(path, "")), origins.get(path, [])
        if a.kind == "write":
            new = [ln.text for ln in a.lines]
            verb = "written" if path in self.files else "created"
            return [(path, new, _carry(lines, origin, new, [ln.range for ln in a.lines]),
                     f"{path}: {verb} ({len(new)} line{'s' * (len(new) != 1)}).")]
        if path not in self.files and any(s.strip() for s in a.search):
            raise Refused(f"{path}: no such file; existing files: {', '.join(sorted(self.files))}")
        a.path = path
        return [(path, *apply_search_replace(lines, origin, a, n))]

    def act(self, response: str) -> sandbox.GradeJob | None:
        """Parse and apply the response's actions, append a Turn; return the public-test job, or None."""
        if self.done:
            raise RuntimeError(f"episode of task {self.task.id} is done; start a new Episode")
        if self._pending:
            raise RuntimeError("act() called twice without observe(); call observe(verdicts) first")
        before = dict(self.files)
        origins: dict[str, list] = {p: [None] * len(lines_of(t)) for p, t in self.files.items()}
        msgs, kinds, edited = [], [], set()
        edits = ok = 0
        valid = run = finish = False
        for a in parse(response):
            if a.kind == "ignored":
                msgs.append(f"Note: {a.error}.")
                continue
            kinds.append(a.kind)
            edits += a.kind in EDITS
            try:
                if a.error:
                    raise Refused(a.error, invalid=True)
                if a.kind == "run_tests":
                    run = True
                elif a.kind == "finish":
                    finish = True
                else:
                    results = self._apply(a, origins)
                    if len(set(self.files) | {r[0] for r in results}) > MAX_FILES:
                        raise Refused(f"the workspace is limited to {MAX_FILES} files", invalid=True)
                    for path, lines, origin, msg in results:
                        self.files[path] = _join(lines)
                        origins[path] = origin
                        edited.add(path)
                        msgs.append(msg + (f" Note: {a.note}." if a.note else ""))
                    ok += 1
                valid = True
            except Refused as e:
                valid = valid or not e.invalid
                msgs.append(f"Refused: {e}")
        checked = {p: syntax_error(p, self.files[p]) for p in sorted(edited | {self.task.entry})}
        errors = [e for p, e in checked.items() if e and p in edited]
        entry_bad = checked[self.task.entry]
        job = None
        # After `finish` feedback is useless, but shaping needs Φ_T and DiDPO reads the per-test results
        # of an edit (Turn.public): only a bare `run tests` beside `finish` is skipped without shaping.
        if (ok or run and not (finish and not self.cfg.shaping_coef)) and self.task.public_tests and not entry_bad:
            job = self._public_job()
        self.turns.append(Turn(response=response, action=",".join(kinds), applied=edits > 0 and ok == edits,
                               files_before=before, files_after=dict(self.files), origin=origins))
        self._job = job
        self._pending = dict(msgs=msgs, valid=valid, errors=errors, finish=finish, run=run,
                             changed=ok > 0, entry_bad=entry_bad)
        return job

    def observe(self, verdicts: list[sandbox.Verdict] | None) -> str | None:
        """Fill the last turn's observation and step reward; return the next user message, or None when done."""
        if not self._pending:
            raise RuntimeError("observe() called without act(); call act(response) first")
        if (self._job is None) != (verdicts is None):
            want = "the verdicts of the job act() returned" if self._job else "None (act() returned no job)"
            raise ValueError(f"observe() got {'None' if verdicts is None else 'verdicts'}; pass {want}")
        st, turn, cfg = self._pending, self.turns[-1], self.cfg
        self._pending = {}
        parts = list(st["msgs"])
        if not st["valid"]:
            parts.insert(0, "No valid action found in your reply. Edit a file (the path alone on a line, then "
                            "a fenced block: SEARCH/REPLACE markers or the whole file, or a ```diff block), "
                            "or write `run tests` or `finish` alone on a line.")
        parts += st["errors"]
        phi = self.phi
        all_pass = False
        if verdicts is not None:
            tests = self.task.public_tests
            phi = sum(v.passed for v in verdicts[:len(tests)]) / len(tests)
            all_pass = len(verdicts) >= len(tests) and all(v.passed for v in verdicts[:len(tests)])
            parts.append(report_tests(tests, verdicts, self.task.fn_name, cfg.feedback_chars))
            turn.public = {describe_test(t, self.task.fn_name): v.passed for t, v in zip(tests, verdicts)}
        elif st["entry_bad"] and st["changed"]:
            phi = 0.0  # a workspace whose entry does not compile passes no test
            if st["entry_bad"] not in st["errors"]:
                parts.append(st["entry_bad"])
        elif st["run"] and not self.task.public_tests:
            parts.append("This task has no public tests.")
        elif st["run"] and st["entry_bad"]:
            parts.append(f"Tests not run: {st['entry_bad']}")
        turn.reward = -cfg.invalid_penalty * (not st["valid"]) + cfg.shaping_coef * (phi - self.phi)
        self.phi = phi
        self._job = None
        self.done = st["finish"] or len(self.turns) >= cfg.max_turns or (cfg.stop_when_public_pass and all_pass)
        if not self.done:
            left = cfg.max_turns - len(self.turns)
            parts.append(f"{left} turn{'s' * (left != 1)} left. Edit, `run tests`, or `finish`.")
        else:
            why = ("finish" if st["finish"] else "all public tests pass" if cfg.stop_when_public_pass and all_pass
                   else "turn limit reached")
            parts.append(f"Episode over ({why}).")
        turn.observation = "\n\n".join(p for p in parts if p)
        return None if self.done else turn.observation

    def final_job(self) -> sandbox.GradeJob:
        """The hidden-test job on the final workspace; binary rewards stop at the first failure."""
        return sandbox.GradeJob(code=self.files[self.task.entry], tests=self.task.hidden_tests,
                                fn_name=self.task.fn_name, mode=self.cfg.grade_mode,
                                stop_on_first_failure=self.cfg.reward == "binary", limits=self.cfg.limits)

    def finish(self, verdicts: list[sandbox.Verdict]) -> float:
        """Final reward R from the final job's verdicts; also stored as self.reward."""
        n = len(self.task.hidden_tests)
        passed = sum(v.passed for v in verdicts[:n])
        if self.cfg.reward == "binary":
            self.reward = float(len(verdicts) >= n and passed == n)
        else:
            self.reward = passed / n
        self.hack = grader_touch(self.files[self.task.entry])
        self.done = True
        return self.reward



# --- reward hacking signal --------------------------------------------------
#
# A policy that learns to game the grader writes code that reaches for the grader's machinery. In
# mode "strict" those tricks do not pay (sandbox.py, strict grading), but a run whose passing code
# starts touching them is worth seeing: `hack_rate` is the share of passing trajectories whose final
# entry file does. A pure, syntactic check; a program that does this for a legitimate reason counts too.

# Dotted names (or their last part, for attributes) that only grader tampering needs.
_HACK_NAMES = {
    "os._exit", "atexit", "sys.excepthook", "sys.settrace", "sys.setprofile",
    "sys._getframe", "sys.modules", "gc.get_objects", "gc.get_referrers", "inspect.currentframe", "inspect.stack",
    "ctypes", "sandbox", "f_back", "f_locals", "f_globals", "__code__", "__defaults__", "__plain__"}
_FD_CALLS = ("os.write", "os.fdopen", "os.dup2", "os.dup", "os.close", "open", "io.open", "os.fstat")
_HACK_TEXT = ("/proc/self", "/dev/fd", "__builtins__")
_CMP_DUNDERS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__hash__"}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _constant_body(fn) -> bool:
    """A comparison dunder whose body returns a constant: `return True`, `lambda *a: True`."""
    if isinstance(fn, ast.Lambda):
        return isinstance(fn.body, ast.Constant)
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # docstring
    return len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant)


def grader_touch(code: str) -> bool:
    """True if `code` touches the grader's machinery: result-channel fds and /proc, builtins, the harness's
    frames or modules, comparison dunders returning constants, exits and atexit at module level."""
    if any(t in code for t in _HACK_TEXT):
        return True
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # it does not run, so it cannot pass
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(m and m.split(".")[0] in ("builtins", "ctypes", "sandbox", "atexit") for m in mods):
                return True
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = _dotted(node)
            if name in _HACK_NAMES or name.rsplit(".", 1)[-1] in _HACK_NAMES:
                return True
        if isinstance(node, ast.Call) and _dotted(node.func) in _FD_CALLS and node.args and isinstance(
                node.args[0], ast.Constant) and type(node.args[0].value) is int and node.args[0].value > 2:
            return True  # os.write(3, ...): a descriptor that is not stdin, stdout or stderr
        elif isinstance(node, ast.FunctionDef) and node.name in _CMP_DUNDERS and _constant_body(node):
            return True
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and _constant_body(node.value) \
                and any(isinstance(t, ast.Name) and t.id in _CMP_DUNDERS for t in node.targets):
            return True
    for stmt in tree.body:  # exits at module level: the tests never run
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                _dotted(stmt.value.func) in ("sys.exit", "exit", "quit"):
            return True
        if isinstance(stmt, ast.Raise) and stmt.exc is not None and "SystemExit" in _dotted(
                stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc):
            return True
    return False


def hack_rate(trajs: list[Trajectory]) -> float:
    """Share of passing trajectories (reward >= 1) whose final code touches the grader (`Trajectory.hack`)."""
    passing = [t for t in trajs if t.reward >= 1.0]
    return sum(t.hack for t in passing) / len(passing) if passing else 0.0


# --- tokens -------------------------------------------------------------------
# Assumption (holds for ChatML, i.e. Qwen2.5 and SmolLM2, and for Llama-3): the
# template closes an assistant turn with a special token right after the
# content. Special tokens cut the text into independently tokenized pieces,
# so the tokens after that point do not depend on what the model sampled, and
# the delta can be encoded alone. Both helpers check the assumption and raise
# when a template breaks it.

_SENT = "\u2af7DIDPO-SENTINEL\u2af8"


def _render(tokenizer, messages: list[dict], gen: bool) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)


def _after_assistant(tokenizer, user: str | None) -> str:
    conv = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": _SENT}]
    if user is not None:
        conv.append({"role": "user", "content": user})
    text = _render(tokenizer, conv, user is not None)
    if text.count(_SENT) != 1:
        raise ValueError("the chat template does not render the assistant content verbatim; "
                         "env.observation_ids needs a template that does")
    return text[text.index(_SENT) + len(_SENT):]


def eot_id(tokenizer) -> int:
    """The token that ends an assistant turn in this chat template (ChatML: <|im_end|>)."""
    ids = tokenizer.encode(_after_assistant(tokenizer, None), add_special_tokens=False)
    if not ids or tokenizer.convert_ids_to_tokens(ids[0]) not in tokenizer.get_added_vocab():
        raise ValueError("the chat template does not close assistant turns with a special token; "
                         "token-exact observation deltas are impossible with it")
    return ids[0]


def prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of the prompt, with the chat template and the assistant header (add_generation_prompt)."""
    return tokenizer.encode(_render(tokenizer, messages, True), add_special_tokens=False)


def observation_ids(tokenizer, observation: str, ended_with_eot: bool) -> list[int]:
    """Template delta after a sampled assistant turn: [end-of-turn] + user observation + assistant header."""
    ids = tokenizer.encode(_after_assistant(tokenizer, observation), add_special_tokens=False)
    eot = eot_id(tokenizer)
    if not ids or ids[0] != eot:
        raise ValueError("the chat template does not start the text after an assistant turn with its "
                         "end-of-turn token; token-exact observation deltas are impossible with it")
    return ids[1:] if ended_with_eot else ids


def replay(task: Task, responses: list[str], tokenizer, **cfg) -> Trajectory:
    """Push scripted responses through the rollout loop as if sampled; cfg are EnvConfig fields."""
    import rollout  # lazy: rollout imports torch and the samplers; env is imported by light tools too

    env_cfg = make_config(**cfg)
    sampler = rollout.ScriptedSampler(tokenizer, [list(responses)])
    sampling = rollout.Sampling(max_tokens=env_cfg.max_response_tokens)
    return rollout.rollout([task], sampler, tokenizer, env_cfg, n=1, sampling=sampling)[0][0]
