"""credit.py: exact token char ranges (real tokenizers), token ranges, projection, and the explain CLI."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from pathlib import Path

import pytest
import transformers
from conftest import CORPUS
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers.convert_slow_tokenizer import bytes_to_unicode

import credit
import env

ROOT = Path(__file__).resolve().parent.parent
ALPHABET = (list("abcdefxyz_ ()[]:=+-*#\n\t\"'") + list("éöüßñçøå") + list("中文字符日本語")
            + ["😀", "🚀", "👍🏽", "∑", "€"])


@pytest.fixture(scope="module")
def sp_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """A SentencePiece-style BPE (Llama-2/Mistral decoders): ▁ spaces, a stripped leading space, byte fallback."""
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tok.train_from_iterator([p.read_text() for p in sorted(CORPUS.iterdir())],
                            trainer=trainers.BpeTrainer(vocab_size=420, special_tokens=specials))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def _token_bytes(tokenizer, ids: list[int], kind: str) -> list[bytes]:
    """Oracle: the bytes each token contributes to the decoded text."""
    pieces = tokenizer.convert_ids_to_tokens(ids)
    if kind == "bytelevel":
        back = {c: b for b, c in bytes_to_unicode().items()}
        return [bytes(back[c] for c in p) for p in pieces]
    out = [bytes([int(p[3:5], 16)]) if p.startswith("<0x") and len(p) == 6 else p.replace("▁", " ").encode()
           for p in pieces]
    for k, b in enumerate(out):  # the decoder strips one leading space of the whole text
        if b:
            if b.startswith(b" "):
                out[k] = b[1:]
            break
    return out


def _oracle(text: str, token_bytes: list[bytes]) -> list[tuple[int, int]]:
    char_of = [i for i, ch in enumerate(text) for _ in ch.encode()]
    out, pos = [], 0
    for b in token_bytes:
        if b:
            out.append((char_of[pos], char_of[pos + len(b) - 1] + 1))
        else:
            prev = out[-1][1] if out else 0
            out.append((prev, prev))
        pos += len(b)
    return out


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 60))) for _ in range(n)]


@pytest.mark.parametrize("kind", ["bytelevel", "sentencepiece"])
def test_token_offsets_are_exact(kind, tiny_tokenizer, sp_tokenizer):
    tok = tiny_tokenizer if kind == "bytelevel" else sp_tokenizer
    split = 0
    for text in _texts(150, seed=len(kind)):
        ids = tok.encode(text, add_special_tokens=False)
        decoded, offsets = credit.token_offsets(tok, ids)
        assert decoded == tok.decode(ids)
        tb = _token_bytes(tok, ids, kind)
        assert b"".join(tb) == decoded.encode()
        want = _oracle(decoded, tb)
        # empty tokens (a stripped leading space) may sit anywhere in the gap; all others exactly
        assert [o for o, w in zip(offsets, want) if w[0] != w[1]] == [w for w in want if w[0] != w[1]]
        assert all(o[0] == o[1] for o, w in zip(offsets, want) if w[0] == w[1])
        split += sum(1 for b in tb if b and not _complete(b))
    assert split > 20  # the texts really did make tokens that split multi-byte characters


def _complete(b: bytes) -> bool:
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


def test_tokens_in_range_covers_exactly(tiny_tokenizer):
    rng = random.Random(3)
    for text in _texts(80, seed=9):
        ids = tiny_tokenizer.encode(text, add_special_tokens=False)
        decoded, offsets = credit.token_offsets(tiny_tokenizer, ids)
        for _ in range(10):
            s = rng.randrange(len(decoded) + 1)
            e = rng.randrange(s, len(decoded) + 1)
            got = credit.tokens_in_range(offsets, s, e)
            if s == e:
                assert got == []  # an empty range holds no character
                continue
            covered = {c for k in got for c in range(*offsets[k])}
            assert set(range(s, e)) <= covered                                   # every char is covered
            assert all(offsets[k][0] < e and offsets[k][1] > s for k in got)     # each returned token is inside
            outside = set(range(len(offsets))) - set(got)
            assert not any(offsets[k][0] < e and offsets[k][1] > s for k in outside)  # none inside is missing


def test_long_response_matches_decode_and_is_monotone(tiny_tokenizer):
    text = (CORPUS / "code.py").read_text()[:3000] + " 中文 😀👍🏽"
    ids = tiny_tokenizer.encode(text, add_special_tokens=False)
    decoded, offsets = credit.token_offsets(tiny_tokenizer, ids)
    assert decoded == text and len(offsets) == len(ids)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(offsets, offsets[1:]))
    assert offsets[-1][1] == len(text)


def _traj(response: str, offsets) -> env.Trajectory:
    n = len(offsets)
    turn = env.Turn(response=response, span=(2, 2 + n), offsets=offsets)
    return env.Trajectory(task_id="t", token_ids=[0] * (n + 4), loss_mask=[0, 0] + [1] * n + [0, 0], turns=[turn])


def test_project_first_region_wins_and_whitespace_gaps_merge():
    resp = "ab cd\nef"
    offsets = [(0, 2), (2, 4), (4, 5), (5, 6), (6, 8), (8, 8)]    # "ab", " c", "d", "\n", "ef", eot
    tr = _traj(resp, offsets)
    values, owner = credit.project(tr, [(0, [(3, 5)], 2.0, 7), (0, [(0, 3)], -1.0, 8)])
    assert owner.tolist() == [-1, -1, 8, 7, 7, -1, -1, -1, -1, -1]  # " c" straddles: the first region keeps it
    assert values.tolist()[2:5] == [-1.0, 2.0, 2.0]
    values, owner = credit.project(tr, [(0, [(0, 5), (6, 8)], 1.0, 0)])  # "\n" between two lines of one member
    assert owner.tolist()[2:8] == [0, 0, 0, 0, 0, -1]                   # the eot token is never claimed


def test_explain_renders_terminal_and_html(tmp_path, tiny_tokenizer):
    from test_didpo import F_BAD, F_OK, G_BAD, G_OK, build, whole

    group = [build(tiny_tokenizer, [whole(f, g)], [0.0], float(f == F_OK and g == G_OK))
             for f, g in [(F_OK, G_OK), (F_OK, G_BAD), (F_BAD, G_OK), (F_BAD, G_BAD), (F_OK, G_BAD)]]
    path = tmp_path / "group.jsonl"
    path.write_text("".join(tr.to_json() + "\n" for tr in group))
    out = tmp_path / "credit.html"
    proc = subprocess.run([sys.executable, "-m", "tools.explain", str(path), "--html", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "trajectory 4" in proc.stdout and "⟦a" in proc.stdout and "anchors" in proc.stdout
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.count("class='a'") >= 5 and "s = a+b" in page
    bad = subprocess.run([sys.executable, "-m", "tools.explain", str(tmp_path / "missing.jsonl")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "does not exist" in bad.stderr + bad.stdout


def test_explain_reads_one_group_of_a_step_file_holding_several(tmp_path, tiny_tokenizer):
    # The trainer writes save_groups groups per step file, one after another: credit is computed within one.
    from test_didpo import F_BAD, F_OK, G_OK, build, whole

    first = [build(tiny_tokenizer, [whole(f, G_OK)], [0.0], float(f == F_OK)) for f in (F_OK, F_BAD, F_BAD)]
    first = [dataclasses.replace(tr, meta={"episode": i}) for i, tr in enumerate(first)]  # as rollout numbers them
    second = [dataclasses.replace(tr, task_id="other") for tr in first[:2]]
    path = tmp_path / "step_3.jsonl"
    path.write_text("".join(tr.to_json() + "\n" for tr in first + second))
    assert [[tr.task_id for tr in g] for g in env.read_groups(path.read_text().splitlines())] == [
        [first[0].task_id] * 3, ["other"] * 2]
    again = [tr.to_json() for tr in first[:2] + first]  # two groups of one task (a small file wraps around)
    assert [len(g) for g in env.read_groups(again)] == [2, 3]
    run = [sys.executable, "-m", "tools.explain", str(path), "--group"]
    one = subprocess.run(run + ["1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and "trajectory 1" in one.stdout and "trajectory 2" not in one.stdout, one.stderr
    past = subprocess.run(run + ["2"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert past.returncode == 2 and "holds 2 group(s), no group 2; pass --group 0 to 1" in past.stderr
