"""Whole diffs, sub-diffs, similarity, groupability and anchors (DESIGN.md §3, steps 3–5, and its pitfalls).

    python diffs.py GROUP.jsonl          # list the anchors DiDPO finds in a saved group

1. Whole diff D_{i,t} = diff(S_{i,t-1}, S_{i,t}) of every file, from the file versions, never from the
   response; a failed edit (`Turn.applied` false) has none. `hunks` groups changes as `difflib.unified_diff`
   does, over protocol.lines.align (difflib's matcher would spend most of a batch's 0.5 s budget).
2. Candidates, nested: hunk -> blocks (runs of changed lines cut at top-level statements of the new file, the
   methods of `class Solution` included) -> lines of at least `min_line_chars` normalized chars. Each has a kind
   (add | replace), path, normalized text (no comments, docstrings or blank lines, whitespace folded), size L, its
   (trajectory, turn) and the char ranges that wrote it (`Turn.origin`): a pure deletion is no candidate.
3. Similarity = `rapidfuzz.fuzz.ratio` / 100 = 1 − Indel distance / (|a| + |b|) ≤ 2·min(|a|,|b|)/(|a|+|b|),
   which gives the length band for blocking.
4. GS = φ(L̄)·ψ(n): saturating (default) φ = 1 − e^{−L/s0}, ψ = 1 − e^{−(n−1)/g0}; log φ = log(1 + L/s0),
   ψ = log(1 + (n−1)/g0); linear φ = L/s0, ψ = (n−1)/g0. A singleton scores 0 under every form.
5. Anchors within one task group (`find_anchors`):
   a. exact buckets on (kind, path, text), at most one member per (trajectory, turn);
   b. buckets under `min_group` (stragglers) attach to the most similar representative (a bucket of
      >= min_group) of their kind and path at similarity >= η; never two group-forming buckets, nor a
      straggler that differs from it by swapping one group-forming part (block, line) for another, nor
      one that would put it in every trajectory (pitfall a: a correct sub-diff and its twin stay apart);
   c. blocking: only representatives inside η's length band, at most `max_compare` nearest in length;
   d. rank = (has contrast, GS): an anchor in every trajectory ranks below every one with contrast; a hunk
      whose blocks form groups is no anchor (a hunk is a unit of the diff format, not of the code);
   e. greedy facility location: each pick adds the most rank-weighted coverage of changed lines, at most K;
   f. non-overlap: each changed line of a turn keeps its best-ranked anchor; a member keeps its lines' ranges.
"""

from __future__ import annotations

import ast
import bisect
import heapq
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from protocol.functions import file_docstrings, first_line
from protocol.lines import align, lines_of, normalize_line

Range = tuple[int, int]
LEVELS = ("hunk", "block", "line")  # coarse -> fine
ETA = 1.0  # the default η: no near-duplicate merging (didpo.py, departure 4; the paper's is 0.8)
GS_FORMS = ("saturating", "log", "linear")


def _lines(text: str, memo: dict | None) -> list[str]:
    # S_t is turn t's "after" and turn t+1's "before": split it once; the line strings keep cached hashes.
    if memo is None:
        return lines_of(text)
    return memo[text] if text in memo else memo.setdefault(text, lines_of(text))


@dataclass(slots=True)
class Hunk:
    path: str
    src: tuple[int, int]                   # [start, stop) source lines (0-based) the hunk spans, context included
    dst: tuple[int, int]                   # [start, stop) target lines
    lines: list[tuple[str, int, int]]      # (" " | "-" | "+", source line or -1, target line or -1), 0-based


def hunks(path: str, before: str, after: str, context: int = 3, memo: dict | None = None) -> list[Hunk]:
    """The hunks of a unified diff of one file with `context` lines, grouped as difflib's unified_diff does."""
    a, b = _lines(before, memo), _lines(after, memo)
    changes = [op for op in align(a, b) if op[0] != "equal"]
    groups: list[list[tuple]] = []
    for op in changes:  # two changes share a hunk when at most 2·context equal lines separate them
        if groups and op[1] - groups[-1][-1][2] <= 2 * context:
            groups[-1].append(op)
        else:
            groups.append([op])
    out = []
    for k, g in enumerate(groups):
        prev_end = groups[k - 1][-1][2] if k else 0
        next_start = groups[k + 1][0][1] if k + 1 < len(groups) else len(a)
        _, i1, _, j1, _ = g[0]
        c0 = min(context, i1 - prev_end)
        c1 = min(context, next_start - g[-1][2])
        lines = [(" ", i1 - c0 + x, j1 - c0 + x) for x in range(c0)]
        for n, (_, i1, i2, j1, j2) in enumerate(g):
            lines += [("-", i, -1) for i in range(i1, i2)] + [("+", -1, j) for j in range(j1, j2)]
            stop = g[n + 1][1] if n + 1 < len(g) else i2 + c1
            lines += [(" ", i, j2 + i - i2) for i in range(i2, stop)]
        out.append(Hunk(path, (g[0][1] - c0, g[-1][2] + c1), (g[0][3] - c0, g[-1][4] + c1), lines))
    return out


def turn_hunks(turn, context: int = 3, memo: dict | None = None) -> list[Hunk]:
    """D_{i,t}: the hunks of every file the turn changed; [] if its edit failed (what candidates() reads)."""
    old, new = turn.files_before, turn.files_after
    return [h for p in sorted(set(old) | set(new)) if turn.applied and old.get(p, "") != new.get(p, "")
            for h in hunks(p, old.get(p, ""), new.get(p, ""), context, memo)]


def _norm(line: str, memo: dict) -> tuple[int, str]:
    """(indentation width, normalized text) of a line, memoized: the same lines recur across a group."""
    if (hit := memo.get(line)) is None:
        n = normalize_line(line)
        hit = memo[line] = (len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) if n else 0, n)
    return hit


def normalize(lines: list[str], memo: dict | None = None) -> tuple[str, int]:
    """(normalized text, size in lines) of a run of code lines; indentation kept relative to the shallowest line."""
    memo = {} if memo is None else memo
    kept = [h for s in lines if (h := _norm(s, memo))[1]]
    if not kept:
        return "", 0
    base = min(d for d, _ in kept)
    return "\n".join(" " * (d - base) + n for d, n in kept), len(kept)


def _starts(line: str) -> bool:
    """Can this line begin a top-level statement or a class member? (a cheap necessary condition)"""
    return line[:1] not in ("", " ", "\t", "#") or line.lstrip().startswith(("def ", "async def ", "class ", "@"))


def statement_ids(text: str) -> list[int]:
    """Per line, the id of the top-level statement holding it (class members count), -1 between; where the file
    does not parse, every unindented code line starts a new statement."""
    lines = lines_of(text)
    ids = [-1] * (len(lines) + 1)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        k = -1
        for i, s in enumerate(lines):
            if s.strip() and not s[0].isspace() and not s.startswith("#") and s[0] not in ")]}":
                k += 1
            if s.strip():
                ids[i] = max(k, 0)
        return ids[: len(lines)]

    k = 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.body:
            first = first_line(node.body[0])
            for i in range(first_line(node) - 1, first - 1):  # the class header and its docstring-free prelude
                ids[i] = k
            k += 1
            parts = node.body
        else:
            parts = [node]
        for sub in parts:
            for i in range(first_line(sub) - 1, sub.end_lineno):
                ids[i] = k
            k += 1
    return ids[: len(lines)]


@dataclass(slots=True)
class SubDiff:
    kind: str                 # add | replace (a pure deletion is no candidate)
    path: str
    level: str                # hunk | block | line
    text: str                 # normalized
    size: int                 # L, in normalized lines
    traj: int                 # index of the trajectory in its group
    turn: int                 # index of the turn in the trajectory
    units: list[tuple]        # the changed lines it covers: (path, "+" or "-", line_no)
    ranges: list[Range | None]  # char range in the response of each unit (None for deleted lines)
    parts: set[tuple] = field(default_factory=set)  # keys (kind, path, text) of its finer candidates


def _blocks(added: list[int], stmt: list[int]) -> list[list[int]]:
    """Cut a run of added line numbers where the statement changes; blank/comment lines go with the next statement."""
    out: list[list[int]] = []
    cur, pending, cur_id = [], [], None
    for no in added:
        sid = stmt[no] if no < len(stmt) else -1
        if sid == -1:
            pending.append(no)
            continue
        if cur_id is not None and sid != cur_id:
            out.append(cur)
            cur = []
        cur += pending + [no]
        pending, cur_id = [], sid
    cur += pending
    return out + [cur] if cur else out


def _scope(lines: list[str], n: int) -> str:
    """The header of the top-level statement that holds line n: the nearest unindented code line at or above it."""
    return next((lines[k].strip() for k in range(n, -1, -1) if lines[k][:1] not in ("", " ", "\t", "#")), "")


class _Found:
    """One turn's candidates by (kind, path, text): a text written twice in the turn is one member, both places."""

    def __init__(self, traj: int, t: int):
        self.traj, self.t, self.by_key = traj, t, {}

    def add(self, kind, path, level, text, size, units, ranges, parts=()) -> tuple | None:
        if not text or not any(r is not None for r in ranges):
            return None  # nothing that the response wrote: no tokens could carry its credit
        key = (kind, path, text)
        if (old := self.by_key.get(key)) is None:
            self.by_key[key] = SubDiff(kind, path, level, text, size, self.traj, self.t, list(units), list(ranges),
                                       set(parts))
            return key
        if LEVELS.index(level) > LEVELS.index(old.level):
            old.level = level  # the same text at a finer level: it is a block (or line), not a hunk
        old.parts.update(parts)
        seen = set(old.units)
        for u, r in zip(units, ranges):
            if u not in seen:  # the same text at a second place in the turn: one member, both places
                old.units.append(u)
                old.ranges.append(r)
        return key


@dataclass(slots=True)
class _File:
    """What candidates() reads of one changed file."""
    path: str
    before: str
    after: str
    new: list[str]          # the new file's lines
    origin: list            # per new line, the char range of the response that wrote it (or None)
    doc: set[int]           # the new file's docstring lines (empty unless docstring_blind)


def _doc_lines(text: str, lines: list[str], cache: dict, blind: bool) -> set[int]:
    """A file's docstring lines: no unit's text holds them, as no verdict version does (docstring_blind)."""
    if not blind:
        return set()
    docs = cache.setdefault("doc", {})
    return docs[text] if text in docs else docs.setdefault(text, file_docstrings(text, lines))


def _runs(hunk: Hunk, doc: set[int]) -> list[tuple[list[int], list[int]]]:
    """The hunk's runs of changed lines: (deleted source lines, added target lines)."""
    runs: list[tuple[list[int], list[int]]] = []
    prev = " "
    for kind, i, j in hunk.lines:
        if kind == " ":
            prev = prev if j in doc else " "  # a docstring's line the old file also had does not cut the run
            continue
        if prev == " " or (prev == "+" and kind == "-"):
            runs.append(([], []))
        prev = kind
        if kind == "-":
            runs[-1][0].append(i)
        else:
            runs[-1][1].append(j)
    return runs


def _block_candidates(f: _File, kind: str, adds: list[int], found: _Found, cache: dict, min_line_chars: int,
                      line_scope: bool) -> list[tuple]:
    """A run's statement blocks and, inside each, its lines; returns the blocks' keys."""
    # A boundary in the run needs a later line that can start a statement (unindented; def/class/@ in a class).
    can_cut = any(_starts(f.new[n]) for n in adds[1:])
    stmts = cache["stmt"]
    if can_cut and f.after not in stmts:
        stmts[f.after] = statement_ids(f.after)
    keys = []
    for blk in _blocks(adds, stmts[f.after]) if can_cut else [adds]:
        rs = [f.origin[n] if n < len(f.origin) else None for n in blk]
        line_keys = []
        for n, r in zip(blk, rs):
            norm = "" if n in f.doc else _norm(f.new[n], cache["norm"])[1]
            if len(norm) >= min_line_chars:
                text = f"{norm}  @{_scope(f.new, n)}" if line_scope else norm
                line_keys.append(found.add(kind, f.path, "line", text, 1, [(f.path, "+", n)], [r]))
        text, size = normalize([f.new[n] for n in blk if n not in f.doc], cache["norm"])
        keys.append(found.add(kind, f.path, "block", text, size, [(f.path, "+", n) for n in blk], rs,
                              [k for k in line_keys if k]))
    return keys


def _hunk_candidates(f: _File, hunk: Hunk, found: _Found, cache: dict, min_line_chars: int, line_scope: bool,
                     blind: bool) -> None:
    """The hunk itself and the blocks and lines of each of its runs."""
    before_lines = None
    units, ranges, deleted, added, parts = [], [], [], [], []
    for dels, adds in _runs(hunk, f.doc):
        if dels:
            before_lines = before_lines or _lines(f.before, cache["lines"])
            old_doc = _doc_lines(f.before, before_lines, cache, blind)
            deleted += [before_lines[n] for n in dels if n not in old_doc]
            units += [(f.path, "-", n) for n in dels]
            ranges += [None] * len(dels)
        added += [f.new[n] for n in adds if n not in f.doc]
        units += [(f.path, "+", n) for n in adds]
        ranges += [f.origin[n] if n < len(f.origin) else None for n in adds]
        if adds:
            parts += _block_candidates(f, "replace" if dels else "add", adds, found, cache, min_line_chars, line_scope)
    if not added:
        return
    d_text, _ = normalize(deleted, cache["norm"])
    a_text, a_size = normalize(added, cache["norm"])
    # A pure addition keeps its plain text, so a one-block hunk is the same candidate as its block.
    text = "-" + d_text.replace("\n", "\n-") + "\n+" + a_text.replace("\n", "\n+") if d_text else a_text
    found.add("replace" if deleted else "add", f.path, "hunk", text, a_size, units, ranges, [k for k in parts if k])


def candidates(turn, traj: int, t: int, min_line_chars: int = 10, context: int = 3,
               _cache: dict | None = None, line_scope: bool = True, docstring_blind: bool = True) -> list[SubDiff]:
    """All sub-diff candidates of one turn (hunks, blocks, lines), deduplicated by (kind, path, text). line_scope:
    a line's text carries its top-level statement's header ("return out  @def f(xs):"), so it never pools across
    blocks; docstring_blind: docstring lines are in no unit's text and do not cut a run of changed lines."""
    cache = {"stmt": {}, "norm": {}, "lines": {}} if _cache is None else _cache
    found, f = _Found(traj, t), None
    for hunk in turn_hunks(turn, context, cache["lines"]):
        if f is None or hunk.path != f.path:
            after = turn.files_after.get(hunk.path, "")
            new = _lines(after, cache["lines"])
            f = _File(hunk.path, turn.files_before.get(hunk.path, ""), after, new, turn.origin.get(hunk.path) or [],
                      _doc_lines(after, new, cache, docstring_blind))
        _hunk_candidates(f, hunk, found, cache, min_line_chars, line_scope, docstring_blind)
    return list(found.by_key.values())


def groupability(size: float, n: int, s0: float = 8.0, g0: float = 8.0, form: str = "saturating") -> float:
    """GS = φ(L̄)·ψ(n); zero for a singleton."""
    if form == "saturating":
        return (1.0 - math.exp(-size / s0)) * (1.0 - math.exp(-(n - 1) / g0))
    if form == "log":
        return math.log1p(size / s0) * math.log1p((n - 1) / g0)
    if form == "linear":
        return (size / s0) * ((n - 1) / g0)
    raise ValueError(f"groupability form {form!r}; use one of {', '.join(GS_FORMS)}")


@dataclass
class Anchor:
    id: int
    kind: str
    path: str
    level: str
    text: str                          # the representative's normalized text
    members: list[SubDiff]             # at most one per (traj, turn)
    gs: float = 0.0
    contrast: bool = True              # some trajectory of the group has no member
    rank: float = 0.0                  # GS, lifted above every no-contrast anchor when contrast is True
    kept: dict[tuple[int, int], list[Range]] = field(default_factory=dict)  # (traj, turn) -> ranges after the cut

    @property
    def n(self) -> int:
        return len(self.members)

    @property
    def mean_size(self) -> float:
        return sum(m.size for m in self.members) / len(self.members)

    @property
    def trajs(self) -> set[int]:
        return {m.traj for m in self.members}


@dataclass
class AnchorResult:
    anchors: list[Anchor]              # selected, in rank order (best first); members trimmed by the cut
    n_candidates: int = 0
    n_clusters: int = 0                # clusters after merging, singletons included
    n_merged: int = 0                  # stragglers attached to a representative
    singleton_rate: float = 0.0        # candidates left in no group of >= min_group members
    group_sizes: list[int] = field(default_factory=list)  # members of each selected anchor

    def stats(self) -> dict:
        sizes = self.group_sizes
        by_level = {lv: 0.0 for lv in LEVELS}
        for a in self.anchors:
            by_level[a.level] += 1 / len(self.anchors)
        return {"anchors": len(self.anchors), "candidates": self.n_candidates, "clusters": self.n_clusters,
                "merged": self.n_merged, "singleton_rate": self.singleton_rate,
                "group_size_mean": sum(sizes) / len(sizes) if sizes else 0.0,
                "group_size_median": statistics.median(sizes) if sizes else 0.0,
                **{f"anchors_{lv}": f for lv, f in by_level.items()}}


def cluster(cands: list[SubDiff], n_trajs: int, eta: float = ETA, min_group: int = 2,
            max_compare: int = 64) -> tuple[list[Anchor], int]:
    """Steps a–c: exact buckets, then stragglers attached to representatives; returns (clusters, members merged)."""
    # a. exact buckets
    buckets: dict[tuple, list[SubDiff]] = defaultdict(list)
    for c in cands:
        buckets[(c.kind, c.path, c.text)].append(c)
    clusters = [Anchor(0, k[0], k[1], ms[0].level, k[2], ms) for k, ms in buckets.items()]
    for a in clusters:  # the finest level any member has: a text that is a block somewhere is a block
        a.level = LEVELS[max(LEVELS.index(m.level) for m in a.members)]

    # b + c. stragglers attach to the nearest representative inside the length band
    reps: dict[tuple, list[tuple[int, int]]] = defaultdict(list)  # (kind, path) -> sorted [(len, cluster index)]
    for j, a in enumerate(clusters):
        if a.n >= min_group:
            reps[(a.kind, a.path)].append((len(a.text), j))
    for v in reps.values():
        v.sort()
    merged = 0
    if reps:
        lo_f, hi_f = eta / (2 - eta), (2 - eta) / eta  # ratio <= 2·min/(min+max) >= eta  <=>  length in band
        members_of = [{(m.traj, m.turn) for m in a.members} for a in clusters]
        trajs_of = [{m.traj for m in a.members} for a in clusters]
        parts = [set().union(*(m.parts for m in a.members)) for a in clusters]

        def forming(keys) -> bool:
            return any(len(buckets[x]) >= min_group for x in keys)

        for j, a in enumerate(clusters):
            band = reps.get((a.kind, a.path))
            if a.n >= min_group or not band:
                continue
            L = len(a.text)
            i0 = bisect.bisect_left(band, (math.floor(L * lo_f), -1))
            i1 = bisect.bisect_right(band, (math.ceil(L * hi_f), sys.maxsize))
            if i0 >= i1:
                continue
            if i1 - i0 > max_compare:  # keep the representatives nearest in length
                mid = bisect.bisect_left(band, (L, -1), i0, i1)
                i0 = max(i0, mid - max_compare // 2)
                i1 = min(i1, i0 + max_compare)
            choices = {k: clusters[k].text for _, k in band[i0:i1]}
            mine = parts[j]
            for _, _, k in process.extract(a.text, choices, scorer=fuzz.ratio, score_cutoff=eta * 100, limit=4):
                theirs = parts[k]
                if forming(mine - theirs) and forming(theirs - mine):
                    continue  # they differ by swapping one group-forming part for another: keep them apart
                if len(trajs_of[k] | {m.traj for m in a.members}) == n_trajs:
                    continue  # joining would put the anchor in every trajectory and erase its contrast
                if not any((m.traj, m.turn) in members_of[k] for m in a.members):
                    clusters[k].members.extend(a.members)
                    members_of[k].update((m.traj, m.turn) for m in a.members)
                    trajs_of[k].update(m.traj for m in a.members)
                    merged += a.n
                    a.members = []
                    break
    return [a for a in clusters if a.members], merged


def find_anchors(group, eta: float = ETA, s0: float = 8.0, g0: float = 8.0, K: int = 64, min_group: int = 2,
                 min_line_chars: int = 10, form: str = "saturating", context: int = 3,
                 max_compare: int = 64, line_scope: bool = True, lift_contrast: bool = True,
                 hunk_exclusion: bool = True, docstring_blind: bool = True) -> AnchorResult:
    """Anchors of one task group (a list of env.Trajectory), non-overlapping per turn. lift_contrast, hunk_exclusion
    and docstring_blind are this project's departures; off, they give the paper's anchors (AdvConfig.paper)."""
    cache: dict[str, dict] = {"stmt": {}, "norm": {}, "lines": {}, "doc": {}}  # per text: statements, norm, ...
    cands = [c for i, tr in enumerate(group) for t, turn in enumerate(tr.turns)
             for c in candidates(turn, i, t, min_line_chars, context, cache, line_scope, docstring_blind)]
    res = AnchorResult([], n_candidates=len(cands))
    if not cands:
        return res
    clusters, res.n_merged = cluster(cands, len(group), eta, min_group, max_compare)  # a-c
    res.n_clusters = len(clusters)
    res.singleton_rate = sum(a.n for a in clusters if a.n < min_group) / len(cands)
    pool = rank_pool(clusters, len(group), min_group, s0, g0, form, lift_contrast, hunk_exclusion)  # d
    res.anchors = non_overlap(greedy_pick(pool, K))  # e, f
    res.group_sizes = [a.n for a in res.anchors]
    return res


def rank_pool(clusters: list[Anchor], G: int, min_group: int = 2, s0: float = 8.0, g0: float = 8.0,
              form: str = "saturating", lift_contrast: bool = True, hunk_exclusion: bool = True) -> list[Anchor]:
    """Step d: the clusters that may anchor, each with its GS and its rank."""
    home = {(m.kind, m.path, m.text): a for a in clusters for m in a.members}  # candidate key -> its cluster
    pool = []
    for a in clusters:
        if a.n < min_group:
            continue
        a.gs = groupability(a.mean_size, a.n, s0, g0, form)
        a.contrast = len(a.trajs) < G
        if hunk_exclusion and a.level == "hunk" and any(
                (b := home.get(k)) is not None and b is not a and b.n >= min_group for m in a.members for k in m.parts):
            # Its blocks form groups: they carry its contrast at a finer grain, where the hunk (changes within
            # 2·context lines, a unit of the diff format) would spread one value over them (pitfall a).
            continue
        if a.gs > 0:
            pool.append(a)
    lift = 1.0 + max((a.gs for a in pool), default=0.0)
    for a in pool:
        a.rank = a.gs + (lift if a.contrast and lift_contrast else 0.0)
    return pool


def greedy_pick(pool: list[Anchor], K: int = 64) -> list[Anchor]:
    """Step e: greedy facility location over changed lines (lazy greedy: gains only shrink)."""
    best: dict[tuple, float] = defaultdict(float)

    def units(a: Anchor):
        return [(m.traj, m.turn, u) for m in a.members for u in m.units]

    def gain(a: Anchor) -> float:
        return sum(max(0.0, a.rank - best[u]) for u in units(a))

    heap = [(-gain(a), -LEVELS.index(a.level), j, a) for j, a in enumerate(pool)]  # ties: the finer level
    heapq.heapify(heap)
    chosen: list[Anchor] = []
    while heap and len(chosen) < K:
        _, lv, j, a = heapq.heappop(heap)
        g = gain(a)
        if heap and g < -heap[0][0] - 1e-12:
            heapq.heappush(heap, (-g, lv, j, a))
            continue
        if g <= 0:
            break
        chosen.append(a)
        for u in units(a):
            best[u] = max(best[u], a.rank)
    return chosen


def non_overlap(chosen: list[Anchor]) -> list[Anchor]:
    """Step f, non-overlap: each changed line keeps its best-ranked anchor (finer level breaks ties); the anchors
    left with a kept member, in rank order, numbered."""
    chosen.sort(key=lambda a: (-a.rank, -LEVELS.index(a.level), a.text))
    owned: set[tuple] = set()
    for a in chosen:
        for m in a.members:
            rs = []
            for u, r in zip(m.units, m.ranges):
                key = (m.traj, m.turn, u)
                if key not in owned:
                    owned.add(key)
                    if r is not None:
                        rs.append(r)
            if rs:
                a.kept[(m.traj, m.turn)] = sorted(rs)
    anchors = [a for a in chosen if a.kept]
    for i, a in enumerate(anchors):
        a.id = i
    return anchors


def holders(group, anchors: list[Anchor], survive: bool = True) -> list[set[int]]:
    """Per anchor, the trajectories that hold it: wrote a kept member and, with survive (didpo.py, departure 2),
    still have every line it added in their final workspace (a bug fixed in a later turn is not held)."""
    memo: dict[str, list[str]] = {}

    def norm(text: str) -> list[str]:  # S_t recurs (after of turn t, before of t+1, final): normalize each once
        return memo[text] if text in memo else memo.setdefault(text, [normalize_line(x) for x in lines_of(text)])

    final = [{p: set(norm(x)) for p, x in tr.turns[-1].files_after.items()} if tr.turns and survive else {}
             for tr in group]

    def holds(m: SubDiff) -> bool:
        if not survive or m.turn + 1 == len(group[m.traj].turns):
            return True
        after = group[m.traj].turns[m.turn].files_after
        return all(no >= len(ls := norm(after.get(path, ""))) or ls[no] in final[m.traj].get(path, ())
                   for path, sign, no in m.units if sign == "+")

    return [{m.traj for m in a.members if (m.traj, m.turn) in a.kept and holds(m)} for a in anchors]


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: python diffs.py GROUP.jsonl   (a saved step file: its first group)")
    from env import read_groups  # lazy: env imports the sandbox
    with open(argv[0]) as f:
        group = read_groups(f.read().splitlines())[0]
    res = find_anchors(group)
    print(res.stats())
    for a in res.anchors:
        first = a.text.splitlines()[0] if a.text else ""
        print(f"#{a.id:<3} {a.level:5} {a.kind:7} {a.path} n={a.n:<3} L={a.mean_size:5.1f} GS={a.gs:.3f} "
              f"contrast={a.contrast!s:5} trajs={sorted(a.trajs)}  {first[:60]}")


if __name__ == "__main__":
    main(sys.argv[1:])
