"""diffs.py: whole diffs, sub-diff candidates, similarity, GS and anchors, on turns made by env.Episode."""

from __future__ import annotations

import difflib
import math
import random

import pytest
import unidiff
from rapidfuzz import fuzz

import diffs
import env
import sandbox
import tasks

STUBS = "def f(a, b):\n    pass\n\n\ndef g(x):\n    pass\n"
F_OK = "def f(a, b):\n    s = a+b\n    return s\n"
F_BAD = "def f(a, b):\n    s = a-b\n    return s\n"
G_OK = "def g(x):\n    y = x*3\n    return y\n"
G_BAD = "def g(x):\n    y = x*4\n    return y\n"


def similarity(a: str, b: str) -> float:
    """What diffs' clustering compares (rapidfuzz's normalized Indel similarity), as a number in [0, 1]."""
    return fuzz.ratio(a, b) / 100.0


def _range(start: int, stop: int) -> str:  # the @@ range format of difflib / GNU diff
    length = stop - start
    return f"{start + 1}" if length == 1 else f"{start + (length > 0)},{length}"


def unified(path: str, before: str, after: str, context: int = 3) -> str:
    """diffs.hunks written as a unified diff (--- a/path, +++ b/path, @@ hunks), "" if unchanged."""
    a, b = diffs.lines_of(before), diffs.lines_of(after)
    out = []
    for h in diffs.hunks(path, before, after, context):
        out.append(f"@@ -{_range(*h.src)} +{_range(*h.dst)} @@\n")
        out += [f"{t}{a[i] if t != '+' else b[j]}\n" for t, i, j in h.lines]
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(out) if out else ""


def file_diff(path: str, before: str, after: str, context: int = 3) -> unidiff.PatchedFile | None:
    """That text parsed with unidiff; None if the file did not change."""
    text = unified(path, before, after, context)
    return unidiff.PatchSet(text)[0] if text else None


def episode_turns(responses: list[str], files: dict[str, str] | None = None) -> list[env.Turn]:
    """Turns exactly as env.Episode parses and applies the responses (grading answered by hand)."""
    ok = [tasks.Test("assert", "assert True")]
    task = tasks.Task(id="t", prompt="p", files=files or {"solution.py": STUBS}, public_tests=ok, hidden_tests=ok)
    ep = env.Episode(task, env.EnvConfig(max_turns=len(responses) + 1))
    for r in responses:
        job = ep.act(r)
        ep.observe(None if job is None else [sandbox.Verdict(True, "pass", "")] * len(job.tests))
    return ep.turns


def whole(f: str, g: str, thought: str = "Here it is.") -> str:
    return f"{thought}\n```python\n{f}\n\n{g}```\n"


def sr(search: str, replace: str) -> str:
    return f"Edit.\nsolution.py\n```python\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def traj(turns: list[env.Turn], reward: float = 0.0) -> env.Trajectory:
    return env.Trajectory(task_id="t", turns=turns, reward=reward)


def wf_group(combos) -> list[env.Trajectory]:
    return [traj(episode_turns([whole(F_OK if fo else F_BAD, G_OK if go else G_BAD)]), float(fo and go))
            for fo, go in combos]


# --- whole diffs ----------------------------------------------------------------------


def test_hunks_are_what_unidiff_parses_and_rebuild_the_new_file():
    rng = random.Random(1)
    base = [f"line {k} = {k * 7}" for k in range(60)]
    for _ in range(60):
        new = list(base)
        for _e in range(rng.randint(1, 4)):
            j = rng.randrange(len(new))
            op = rng.random()
            if op < 0.4:
                new[j] = new[j] + " # changed"
            elif op < 0.7:
                new.insert(j, f"inserted {rng.random():.3f}")
            else:
                del new[j]
        before, after = "\n".join(base) + "\n", "\n".join(new) + "\n"
        hs = diffs.hunks("p.py", before, after)
        parsed = file_diff("p.py", before, after)
        assert [[(ln.line_type, (ln.source_line_no or 0) - 1, (ln.target_line_no or 0) - 1) for ln in h]
                for h in parsed] == [h.lines for h in hs]
        # old lines outside hunks + hunk content rebuild the new file exactly
        a, rebuilt, i = base, [], 0
        for h in hs:
            rebuilt += a[i:h.src[0]]
            rebuilt += [a[s] if t == " " else new[d] for t, s, d in h.lines if t != "-"]
            i = h.src[1]
        assert rebuilt + a[i:] == new


def test_single_change_matches_difflib_text():
    before, after = "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\nz\n"
    want = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/p.py", "b/p.py"))
    assert unified("p.py", before, after) == want
    assert isinstance(file_diff("p.py", before, after), unidiff.PatchedFile)


def test_failed_edit_has_no_diff_and_no_candidates():
    (t,) = episode_turns([sr("    not in the file\n", "    s = 1\n")])
    assert not t.applied
    assert diffs.turn_hunks(t) == [] and diffs.candidates(t, 0, 0) == []


def test_candidates_carry_exact_char_ranges_from_origin():
    (t,) = episode_turns([whole(F_OK, G_OK)])
    cands = diffs.candidates(t, 3, 0)
    blocks = sorted(c.text for c in cands if c.level == "block")
    assert blocks == ["s = a+b\nreturn s", "y = x*3\nreturn y"]
    (h,) = [c for c in cands if c.level == "hunk"]
    assert h.kind == "replace" and h.size == 4 and h.traj == 3 and h.turn == 0
    new = diffs.lines_of(t.files_after["solution.py"])
    for c in cands:
        for (_, side, n), r in zip(c.units, c.ranges):
            if side == "+":
                assert t.response[r[0]:r[1]] == new[n]  # the very characters that wrote the line


def test_blocks_cut_at_statements_and_methods():
    code = ("import os\n\n\nclass Solution:\n    def a(self):\n        return 1\n\n    def b(self):\n"
            "        return 2\n\n\ndef helper(x):\n    return x + 1\n")
    (t,) = episode_turns([f"```python\n{code}```\n"], files={"solution.py": ""})
    cands = diffs.candidates(t, 0, 0)
    blocks = {c.text for c in cands if c.level != "hunk" and (c.level == "block" or c.size == 1)}
    assert {"import os", "class Solution:", "def a(self):\n    return 1", "def b(self):\n    return 2",
            "def helper(x):\n    return x + 1"} <= blocks
    assert not any("def a" in x and "def b" in x for x in blocks)  # a block never spans two statements
    ids = diffs.statement_ids(code)
    assert ids[4] == ids[5] != ids[7] == ids[8]            # two methods, two statements
    assert diffs.statement_ids("def f(:\n  x\ny = 1\n") == [0, 0, 1]   # does not parse: unindented lines cut


def test_reemitted_code_is_not_in_the_diff():
    turns = episode_turns([whole(F_BAD, G_OK), whole(F_OK, G_OK, "Fixed f.")])
    texts = {c.text for c in diffs.candidates(turns[1], 0, 1)}
    assert "s = a+b" in texts and not any("y = x*3" in x for x in texts)  # g was re-emitted unchanged


def test_normalization():
    assert diffs.normalize_line("  x  =  1   # set x") == "x = 1"
    assert diffs.normalize_line("s = '# not a comment'  # real") == "s = '# not a comment'"
    assert diffs.normalize_line("   # only a comment") == ""
    assert diffs.normalize(["    if x:", "", "        y = 1  # c", "    # gone"]) == ("if x:\n    y = 1", 2)


def test_similarity_and_groupability_by_hand():
    assert similarity("abcd", "abce") == pytest.approx(0.75)   # 1 - 2/8
    assert diffs.groupability(8, 1) == 0.0
    assert diffs.groupability(8, 9) == pytest.approx((1 - math.exp(-1)) ** 2)
    assert diffs.groupability(8, 9, form="log") == pytest.approx(math.log(2) ** 2)
    assert diffs.groupability(4, 5, form="linear") == pytest.approx(0.5 * 0.5)
    with pytest.raises(ValueError, match="groupability form"):
        diffs.groupability(1, 2, form="cubic")


def _anchors(group, **kw):
    return {a.text: a for a in diffs.find_anchors(group, **kw).anchors}


def test_twins_stay_apart_and_every_combination_is_credited_by_blocks():
    group = wf_group([(1, 1), (1, 0), (0, 1), (0, 0), (1, 0), (0, 1)])
    an = _anchors(group)
    assert set(an) == {"s = a+b\nreturn s", "s = a-b\nreturn s", "y = x*3\nreturn y", "y = x*4\nreturn y"}
    assert sorted(an["s = a+b\nreturn s"].trajs) == [0, 1, 4] and sorted(an["s = a-b\nreturn s"].trajs) == [2, 3, 5]
    assert all(a.contrast for a in an.values())
    # hunk_exclusion=False (the paper's pool): where each combination is written whole three times, its hunk
    # (f and g within 2·context lines) outranks its blocks and takes their lines; by default the blocks keep them
    group = wf_group([(1, 0)] * 3 + [(0, 1)] * 3 + [(1, 1), (0, 0)])
    assert {a.level for a in diffs.find_anchors(group).anchors} == {"block"}
    paper = diffs.find_anchors(group, hunk_exclusion=False).anchors
    assert [sorted(a.trajs) for a in paper if a.level == "hunk"] == [[0, 1, 2], [3, 4, 5]]


def _sub(text: str, traj: int, parts=(), kind: str = "add") -> diffs.SubDiff:
    return diffs.SubDiff(kind, "p.py", "block", text, 1, traj, 0, [("p.py", "+", 0)], [(0, 1)], set(parts))


def test_straggler_attaches_to_its_representative_not_transitively():
    base = "total_value = a + b"
    near = base + " + 0"                      # sim(base, near) = 0.95
    far = near + " + 1 + 2"                   # sim(near, far) = 0.85, sim(base, far) = 0.76
    assert similarity(near, far) >= 0.8 > similarity(base, far)
    cands = [_sub(base, 0), _sub(base, 1), _sub(near, 2), _sub(far, 3), _sub("other", 4)]
    clusters, merged = diffs.cluster(cands, n_trajs=6, eta=0.8)
    by_text = {c.text: sorted(c.trajs) for c in clusters}
    assert by_text == {base: [0, 1, 2], far: [3], "other": [4]} and merged == 1
    # a different kind never joins
    clusters, merged = diffs.cluster(cands[:2] + [_sub(near, 2, kind="replace")], n_trajs=6, eta=0.8)
    assert merged == 0


def test_groups_are_never_fused_even_through_their_parts():
    twin_a, twin_b = "return total_value + 1", "return total_value - 1"
    cands = [_sub(twin_a, 0), _sub(twin_a, 1), _sub(twin_b, 2), _sub(twin_b, 3)]
    assert similarity(twin_a, twin_b) > 0.9
    assert sorted(sorted(c.trajs) for c in diffs.cluster(cands, 6, eta=0.8)[0]) == [[0, 1], [2, 3]]
    # a rare combination (hunk) that swaps a group-forming block for another never joins a common one
    pa, pb = ("add", "p.py", "A-ok"), ("add", "p.py", "A-bad")
    parts = [_sub("A-ok", 0), _sub("A-ok", 1), _sub("A-bad", 2), _sub("A-bad", 3)]
    hunk_ok = "A-ok\n" + "shared line of code\n" * 6
    hunks = [_sub(hunk_ok, 0, [pa]), _sub(hunk_ok, 1, [pa]), _sub(hunk_ok.replace("ok", "bad"), 2, [pb])]
    clusters, merged = diffs.cluster(parts + hunks, 6, eta=0.8)
    assert merged == 0 and similarity(hunk_ok, hunk_ok.replace("ok", "bad")) > 0.8


def test_straggler_never_makes_an_anchor_universal():
    group = wf_group([(1, 1), (1, 0), (0, 1)])  # f_bad and g_bad are lone twins of a 2-member majority
    an = _anchors(group)
    assert sorted(an["s = a+b\nreturn s"].trajs) == [0, 1] and "s = a-b\nreturn s" not in an


def test_one_member_per_turn_holds_both_places():
    code = "def f(a, b):\n    value = a * b\n    value = a * b\n    return value\n"
    group = [traj(episode_turns([whole(code, G_OK)])) for _ in range(3)] + [traj(episode_turns([whole(F_OK, G_OK)]))]
    res = diffs.find_anchors(group)
    (line,) = [c for c in diffs.candidates(group[0].turns[0], 0, 0) if c.text == "value = a * b  @def f(a, b):"]
    assert len(line.units) == 2
    # line_scope: a line is keyed by its top-level statement, so the same line in g is another unit
    two = "def f(a, b):\n    value = a * b\n    return value\n\n\ndef g(a, b):\n    value = a * b\n    return value\n"
    turn = episode_turns([whole(two, "")])[0]
    scoped = sorted(c.text for c in diffs.candidates(turn, 0, 0) if c.level == "line" and "value = a" in c.text)
    assert scoped == ["value = a * b  @def f(a, b):", "value = a * b  @def g(a, b):"]
    plain = [c for c in diffs.candidates(turn, 0, 0, line_scope=False) if c.text == "value = a * b"]
    assert len(plain) == 1 and len(plain[0].units) == 2
    for a in res.anchors:
        keys = [(m.traj, m.turn) for m in a.members]
        assert len(keys) == len(set(keys))


def test_a_docstring_is_in_no_units_text():
    """Writers word docstrings their own way: f under a docstring over three lines gives the candidate texts of f
    under none, and no docstring line is a line unit (one that long would pool every writer of f, right or wrong).
    The docstring's blank line, which the diff matches to the stub's, does not cut f's block in two: the block
    holds both of the docstring's written lines."""
    doc = F_OK.replace(":\n", ':\n    """Add a and b, as\n\n    the caller expects them."""\n', 1)
    found = [diffs.candidates(episode_turns([whole(f, G_OK)])[0], 0, 0) for f in (F_OK, doc)]
    texts = [sorted((c.level, c.text) for c in cs) for cs in found]
    assert texts[0] == texts[1] and ("block", "s = a+b\nreturn s") in texts[0]
    assert [len(c.units) for c in found[1] if c.text == "s = a+b\nreturn s"] == [4]
    class_doc = "class A:\n    \'\'\'A thing with a long docstring.\'\'\'\n    def m(self):\n        return 1\n"
    assert not [c for c in diffs.candidates(episode_turns([whole(class_doc, G_OK)])[0], 0, 0) if "docstring" in c.text]
    # docstring_blind=False (the paper's units): the docstring is in f's texts, and its own line a line unit
    paper = diffs.candidates(episode_turns([whole(doc, G_OK)])[0], 0, 0, docstring_blind=False)
    assert ("block", "s = a+b\nreturn s") not in {(c.level, c.text) for c in paper}
    assert any(c.level == "line" and "the caller expects them" in c.text for c in paper)


def test_universal_anchor_ranks_below_anchors_with_contrast():
    # every trajectory writes the same long helper (a universal block with a high GS) and f or its twin
    helper = "def g(x):\n" + "".join(f"    x = x + {k}\n" for k in range(12)) + "    return x\n"
    group = wf_group([])
    for fo in (1, 1, 0, 0):
        group.append(traj(episode_turns([whole(F_OK if fo else F_BAD, helper)]), float(fo)))
    res = diffs.find_anchors(group)
    by_text = {a.text.split("\n")[0]: a for a in res.anchors}
    uni = [a for a in res.anchors if not a.contrast]
    assert uni and all(not a.contrast for a in res.anchors[len(res.anchors) - len(uni):])  # ranked last
    assert max(a.gs for a in uni) > by_text["s = a+b"].gs        # although its GS is higher
    assert by_text["s = a+b"].kept and by_text["s = a-b"].kept
    # lift_contrast=False (the paper's rank, GS alone): the universal helper ranks first and takes the lines it covers
    paper = diffs.find_anchors(group, lift_contrast=False)
    assert not paper.anchors[0].contrast and all(a.rank == a.gs for a in paper.anchors)


def test_cut_is_non_overlapping_and_K_bounds_anchors():
    rng = random.Random(0)
    fs, gs = [F_OK, F_BAD], [G_OK, G_BAD]
    group = [traj(episode_turns([whole(rng.choice(fs), rng.choice(gs))])) for _ in range(10)]
    res = diffs.find_anchors(group)
    seen = set()
    for a in res.anchors:
        for (i, t), ranges in a.kept.items():
            for r in ranges:
                assert (i, t, r) not in seen
                seen.add((i, t, r))
    assert len(diffs.find_anchors(group, K=1).anchors) == 1


def test_no_diffs_no_anchors():
    group = [traj(episode_turns(["I will think first.\nrun tests\n"])) for _ in range(3)]
    res = diffs.find_anchors(group)
    assert res.anchors == [] and res.n_candidates == 0 and res.stats()["group_size_mean"] == 0.0
