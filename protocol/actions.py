"""The action parser: a model's response text -> the actions it asks for, with the char range of every line.

    python -c "import protocol.actions as p; print(p.parse('solution.py\\n~~~python\\nx = 1\\n~~~\\nrun tests'))"

`parse(response) -> list[Action]` never raises: a refused action carries `error` (shown to the model), an
accepted one with a remark `note`; each content line is a `Line(text, start)`, so an edit knows which chars wrote
it (env.Turn.origin). The actions are those messages.PROTOCOL teaches; the path of an edit is on the line before
its fence or in the info string. Lenient where the intent is unambiguous, strict where a guess could corrupt code:
markers and fences count only as whole lines, and inside a SEARCH/REPLACE block only its markers; a fence closes at
a bare fence at least as long; an inner ```lang fence nests in markdown, and in code closes an unclosed block; an
unclosed fence runs to the end (noted), an unclosed SEARCH/REPLACE block is refused; several unnamed blocks are
ignored, never written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from protocol.lines import Range

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
    return _COMMANDS.get(text.strip().strip("`*_>#- \t").rstrip(".!").strip("`*_ ").lower())


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
    """Content lines of the fence opened at lines[i], the index after it, and whether it closed. A ```lang line
    inside nests in markdown (`nest`); inside code it means the block was left unclosed and a new one starts."""
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
                unnamed.append(Action("write", "", lines=content, note=note))
                actions.append(unnamed[-1])
            continue
        if cmd := _command(t):
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
