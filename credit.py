"""From sub-diffs to tokens: exact char ranges of sampled tokens, projection of A^D, and rendering credit.

    python credit.py explain GROUP.jsonl                  # tokens coloured by Â in the terminal
    python credit.py explain GROUP.jsonl --html out.html  # the same as a standalone HTML page

How a char range becomes a token range (DESIGN.md §3, step 7):

1. `token_offsets(tokenizer, ids)` decodes the sampled ids incrementally, the
   way streaming detokenizers do: the text that token k adds is
   decode(ids[p:k+1]) minus decode(ids[p:r]) for a window [p, r) of already
   final tokens, so decoders that drop a leading space (SentencePiece) or fuse
   bytes stay exact. C_k = number of final chars after token k; a decode that
   ends in U+FFFD means token k stopped inside a multi-byte character (byte
   BPE, byte fallback), whose chars are not final yet. Token k's range is
   [C_{k-1}, C_k), widened by one char when it ends inside a character: every
   token that holds bytes of a character covers that character. The result is
   checked against decode(ids); any mismatch falls back to exact prefix decodes.
2. `tokens_in_range(offsets, start, end)`: the tokens whose range intersects
   [start, end). Every char of the range is covered by a returned token, and a
   token outside it (no byte in the range) is never returned.
3. `project(traj, regions)`: each token of a turn inside an anchor member's
   ranges gets that member's A^D; tokens of no member get 0. Regions come
   best-ranked first and a token keeps the first region that claims it, so a
   token that straddles two regions is never counted twice. Ranges of one
   member separated only by whitespace (the newline between two lines) are
   merged, so those tokens get the member's credit too.

Nothing here imports torch.distributed, vLLM or the sandbox; a tokenizer object is passed in.
"""

from __future__ import annotations

import bisect
import html
import json
import operator
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer

if TYPE_CHECKING:
    from env import Trajectory

Range = tuple[int, int]
_BAD = "\ufffd"
_START, _END = operator.itemgetter(0), operator.itemgetter(1)


# --- char ranges of tokens --------------------------------------------------------


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
        n = 0
        for x, y in zip(s, text):  # length of the common prefix with the full text
            if x != y:
                break
            n += 1
        lengths.append(n)
        longer.append(len(s) > n)
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
            # Token k stops inside a character (or a byte-fallback decoder has not settled the
            # window yet): keep the window, count only the chars that are certainly final.
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
    # A fast tokenizer's Rust decode costs ~1 µs a call, its Python wrapper ~5 µs: use the
    # backend when there is one, and the wrapper (then exact prefix decodes) if that disagrees.
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
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


# --- projection ----------------------------------------------------------------------


def _merge(ranges: list[Range], text: str) -> list[Range]:
    out: list[list[int]] = []
    for s, e in sorted(ranges):
        if out and (s <= out[-1][1] or not text[out[-1][1]: s].strip()):
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def project(traj: Trajectory, regions) -> tuple[np.ndarray, np.ndarray]:
    """Per token of traj: (value, owner) from regions = [(turn index, char ranges, value, owner id), ...].

    Regions are given best first; a token keeps the first region that claims it.
    Tokens of no region get value 0 and owner -1. Only tokens inside a turn's span
    can be claimed, so prompt and observation tokens are never touched.
    """
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


# --- explain -------------------------------------------------------------------------


def _char_values(turn, token_values: list[float], token_owner: list[int]) -> tuple[list[float], list[int]]:
    """Per char of turn.response: the value and owner of the last token covering it."""
    n = len(turn.response)
    cv, co = [0.0] * n, [-1] * n
    a = turn.span[0]
    for k, (s, e) in enumerate(turn.offsets):
        for c in range(s, min(e, n)):
            cv[c], co[c] = token_values[a + k], token_owner[a + k]
    return cv, co


def _rgb(v: float, scale: float) -> tuple[int, int, int]:
    x = max(-1.0, min(1.0, v / scale)) if scale > 0 else 0.0
    if x >= 0:
        return int(255 - 155 * x), 255, int(255 - 155 * x)
    return 255, int(255 + 155 * x), int(255 + 155 * x)


def _segments(turn, values, owner):
    """Runs of chars with the same (value, owner): (text, value, owner)."""
    cv, co = _char_values(turn, values, owner)
    out, i, s = [], 0, turn.response
    while i < len(s):
        j = i
        while j < len(s) and cv[j] == cv[i] and co[j] == co[i]:
            j += 1
        out.append((s[i:j], cv[i], co[i]))
        i = j
    return out


def behaviour_line(behaviour: dict) -> str:
    """The A^B terms: β of each (function, passes its public tests) column of the ridge."""
    terms = ", ".join(f"{f or '(top level)'} {'passes' if ok else 'fails'}: {v:+.3f}"
                      for (f, ok), v in sorted(behaviour.items()))
    return "A^B (ridge β of a function passing / failing its public tests, on every line a turn wrote in it): " + terms


def render_terminal(group: list[Trajectory], credit, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    vals = [v for adv in credit.token_adv for v in adv.tolist()]
    scale = max((abs(v) for v in vals), default=0.0)
    for i, tr in enumerate(group):
        adv = credit.token_adv[i].tolist()
        console.rule(f"trajectory {i}  task {tr.task_id}  R={tr.reward:g}  A^E={credit.episode[i]:+.3f}  "
                     f"turns={len(tr.turns)}")
        for t, turn in enumerate(tr.turns):
            console.print(Text(f"turn {t + 1}  r={turn.reward:+g}  G={credit.returns[i][t]:+.3f}  "
                               f"action={turn.action or '-'}", style="bold"))
            text = Text()
            last = -1
            for seg, v, o in _segments(turn, adv, credit.owner[i]):
                if o != -1 and o != last:
                    text.append(f"⟦a{o}", style="bold magenta")
                if o == -1 and last != -1:
                    text.append("⟧", style="bold magenta")
                r, g, b = _rgb(v, scale)
                text.append(seg, style=f"black on rgb({r},{g},{b})" + (" underline" if o != -1 else ""))
                last = o
            if last != -1:
                text.append("⟧", style="bold magenta")
            console.print(text)
            if turn.observation:
                console.print(Text(turn.observation[:400], style="dim"))
    table = Table(title="anchors (⟦aN … ⟧ above)")
    for col in ("id", "level", "kind", "path", "n", "L̄", "GS", "held by (x=1)", "DiD Δ", "A^D", "text"):
        table.add_column(col)
    for a in credit.anchors:
        ad = credit.anchor_values.get(a.id, [])
        span = f"{min(ad):+.3f}..{max(ad):+.3f}" if ad else "-"
        first = a.text.splitlines()[0][:50] if a.text else ""
        table.add_row(str(a.id), a.level, a.kind, a.path, str(a.n), f"{a.mean_size:.1f}", f"{a.gs:.3f}",
                      ",".join(map(str, credit.holders.get(a.id, []))), f"{credit.contrast.get(a.id, 0.0):+.3f}",
                      span, first)
    console.print(table)
    console.print("held by: the trajectories whose member of the anchor survives to the end (the ridge's "
                  "indicators x_{i,g}); DiD Δ: mean G_{i,1} of those minus the rest (baseline=contrast); "
                  "A^D: the value the baseline gave (ridge: β_g, the anchor's own coefficient given the others)")
    if credit.behaviour:
        console.print(behaviour_line(credit.behaviour))
    console.print(f"colour scale: ±{scale:.3f} (green positive, red negative); stats: {credit.stats}")


def render_html(group: list[Trajectory], credit, title: str = "DiDPO credit") -> str:
    vals = [v for adv in credit.token_adv for v in adv.tolist()]
    scale = max((abs(v) for v in vals), default=0.0)
    info = {a.id: f"a{a.id}: {a.level} {a.kind} {a.path} n={a.n} L={a.mean_size:.1f} GS={a.gs:.3f} "
                  f"contrast={a.contrast}" for a in credit.anchors}
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>",
           "body{font-family:sans-serif;margin:2em} pre{font-family:monospace;white-space:pre-wrap;line-height:1.6}",
           ".a{outline:1.5px solid #a0a;border-radius:2px} .lab{color:#a0a;font-size:70%;vertical-align:super}",
           ".obs{color:#777} table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:2px 6px}",
           "</style></head><body>", f"<h1>{html.escape(title)}</h1>",
           f"<p>Token colour = final advantage Â (green &gt; 0, red &lt; 0, full colour at ±{scale:.3f}); "
           "outlined spans are anchor members (hover for details).</p>",
           f"<p>{html.escape(json.dumps(credit.stats))}</p>"]
    for i, tr in enumerate(group):
        adv = credit.token_adv[i].tolist()
        out.append(f"<h2>trajectory {i} · task {html.escape(tr.task_id)} · R={tr.reward:g} · "
                   f"A<sup>E</sup>={credit.episode[i]:+.3f}</h2>")
        for t, turn in enumerate(tr.turns):
            out.append(f"<h3>turn {t + 1} · r={turn.reward:+g} · G={credit.returns[i][t]:+.3f} · "
                       f"{html.escape(turn.action or '-')}</h3><pre>")
            open_ = -1
            for seg, v, o in _segments(turn, adv, credit.owner[i]):
                if o != open_:
                    if open_ != -1:
                        out.append("</span>")
                    if o != -1:
                        out.append(f"<span class='a' title='{html.escape(info.get(o, ''), quote=True)}'>"
                                   f"<span class='lab'>a{o}</span>")
                    open_ = o
                r, g, b = _rgb(v, scale)
                out.append(f"<span style='background:rgb({r},{g},{b})' title='Â={v:+.4f}'>{html.escape(seg)}</span>")
            if open_ != -1:
                out.append("</span>")
            out.append("</pre>")
            if turn.observation:
                out.append(f"<pre class='obs'>{html.escape(turn.observation[:2000])}</pre>")
    out.append("<h2>anchors</h2><table><tr><th>id</th><th>level</th><th>kind</th><th>path</th><th>n</th><th>L̄</th>"
               "<th>GS</th><th>held by</th><th>DiD Δ</th><th>A<sup>D</sup></th><th>text</th></tr>")
    for a in credit.anchors:
        ad = credit.anchor_values.get(a.id, [])
        span = f"{min(ad):+.3f}..{max(ad):+.3f}" if ad else "-"
        out.append(f"<tr><td>{a.id}</td><td>{a.level}</td><td>{a.kind}</td><td>{html.escape(a.path)}</td>"
                   f"<td>{a.n}</td><td>{a.mean_size:.1f}</td><td>{a.gs:.3f}</td>"
                   f"<td>{','.join(map(str, credit.holders.get(a.id, [])))}</td>"
                   f"<td>{credit.contrast.get(a.id, 0.0):+.3f}</td>"
                   f"<td>{span}</td><td><pre>{html.escape(a.text[:400])}</pre></td></tr>")
    out.append("</table>" + (f"<p>{html.escape(behaviour_line(credit.behaviour))}</p>" if credit.behaviour else "")
               + "</body></html>")
    return "".join(out)


def _fail(msg: str) -> None:
    print(f"credit.py explain: {msg}", file=sys.stderr)
    raise typer.Exit(2)


app = typer.Typer(add_completion=False, help="Credit assignment of DiDPO, shown to people.")


@app.callback()
def _root() -> None:
    """didpo credit tools."""


@app.command()
def explain(group_file: Annotated[Path, typer.Argument(help="a saved group: one env.Trajectory JSON per line")],
            html_out: Annotated[Path | None, typer.Option("--html", help="also write a standalone HTML page")] = None,
            algo: Annotated[str, typer.Option(help="grpo | gigpo | didpo")] = "didpo",
            baseline: Annotated[str, typer.Option(help="ridge | contrast | group_mean")] = "ridge",
            norm: Annotated[str, typer.Option(help="mean_norm | mean_std_norm")] = "mean_norm") -> None:
    """Render a group's tokens coloured by their final advantage, with anchors outlined."""
    import didpo  # lazy: didpo imports this module for project()
    from env import Trajectory

    if not group_file.exists():
        _fail(f"{group_file} does not exist; pass a .jsonl file of saved trajectories (the trainer writes them)")
    try:
        group = [Trajectory.from_json(line) for line in group_file.read_text().splitlines() if line.strip()]
    except (ValueError, TypeError, KeyError) as e:
        _fail(f"{group_file} is not a file of env.Trajectory JSON lines ({e})")
    if not group:
        _fail(f"{group_file} holds no trajectory; pass a non-empty group file")
    try:
        cfg = didpo.AdvConfig(algo=algo, baseline=baseline, norm=norm)
    except ValueError as e:
        _fail(str(e))
    credit = didpo.compute_credit(group, cfg)
    render_terminal(group, credit)
    if html_out is not None:
        html_out.write_text(render_html(group, credit, title=f"{group_file.name}: {algo}/{baseline}"))
        print(f"wrote {html_out}")


if __name__ == "__main__":
    app()
