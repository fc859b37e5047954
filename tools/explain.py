"""Credit for people: a group's tokens coloured by their final advantage, anchors outlined.

    python -m tools.explain runs/default/groups/step_1.jsonl --html out.html  # terminal, and an HTML page
    python -m tools.explain --help                                             # --algo, --baseline, --norm

Reads a saved group (one env.Trajectory JSON per line, as the trainer writes OUT/groups/step_N.jsonl) and renders
didpo.compute_credit's record: each response char on its token's colour (green > 0, red < 0), anchor members
framed ⟦aN … ⟧, then the anchors; in the terminal (`render_terminal`) or as one HTML page (`render_html`).
"""

from __future__ import annotations

import html
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import cli
import didpo
from env import Trajectory, read_groups


def _rgb(v: float, scale: float) -> tuple[int, int, int]:
    x = max(-1.0, min(1.0, v / scale)) if scale > 0 else 0.0
    if x >= 0:
        return int(255 - 155 * x), 255, int(255 - 155 * x)
    return 255, int(255 + 155 * x), int(255 + 155 * x)


def _segments(turn, values, owner):
    """Runs of turn.response's chars with the same (value, owner) of the last token covering them."""
    n, a = len(turn.response), turn.span[0]
    per_char = [(0.0, -1)] * n
    for k, (s, e) in enumerate(turn.offsets):
        for c in range(s, min(e, n)):
            per_char[c] = (values[a + k], owner[a + k])
    out, i = [], 0
    for (v, o), run in itertools.groupby(per_char):
        j = i + len(list(run))
        out.append((turn.response[i:j], v, o))
        i = j
    return out


def verdict_line(verdicts: dict, escape: dict | None = None, apart: dict | None = None) -> str:
    """A^V's posteriors: q = P(correct) of each function version the group wrote, π̂_f (how often f's bugs pass its
    public tests) and the pairs of versions that behave apart near f's tests (not both correct)."""
    seen, terms, name = {}, [], {}
    for u, q in verdicts.items():
        seen[u[0]] = seen.get(u[0], 0) + 1
        name[u] = f"{u[0] or '(top level)'} v{seen[u[0]]}"
        terms.append(f"{name[u]} {q:.2f}")
    rates = ", ".join(f"{f or '(top level)'} {p:.2f}" for f, p in sorted((escape or {}).items()))
    pairs = sorted({tuple(sorted((name[u], name[w]))) for u, ws in (apart or {}).items() for w in ws
                    if u in name and w in name})
    return ("A^V (P(correct) of each function version, from the rewards and public tests; s·(q − q̄) − A^E on "
            "the lines a turn wrote in it, q̄ the mean of each trajectory's mean q): " + ", ".join(terms)
            + (f"; π̂ (a bug of f passes f's public tests): {rates}" if rates else "")
            + ("; apart (they behave differently near f's tests, so not both correct): "
               + ", ".join(f"{a} / {b.rsplit(' ', 1)[1]}" for a, b in pairs) if pairs else ""))


def _scale(credit) -> float:
    return max((abs(v) for adv in credit.token_adv for v in adv.tolist()), default=0.0)


def _anchor_cells(credit, a) -> list[str]:
    """An anchor's row: id, level, kind, path, n, L̄, GS, held by, DiD Δ, the A^D span."""
    ad = credit.anchor_values.get(a.id, [])
    return [str(a.id), a.level, a.kind, a.path, str(a.n), f"{a.mean_size:.1f}", f"{a.gs:.3f}",
            ",".join(map(str, credit.holders.get(a.id, []))), f"{credit.contrast.get(a.id, 0.0):+.3f}",
            f"{min(ad):+.3f}..{max(ad):+.3f}" if ad else "-"]


def render_terminal(group: list[Trajectory], credit, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    console, scale = console or Console(), _scale(credit)
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
        table.add_row(*_anchor_cells(credit, a), a.text.splitlines()[0][:50] if a.text else "")
    console.print(table)
    console.print("held by: the trajectories whose member of the anchor survives to the end (the ridge's "
                  "indicators x_{i,g}); DiD Δ: mean G_{i,1} of those minus the rest (baseline=contrast); "
                  "A^D: the value the baseline gave (ridge: β_g, the anchor's own coefficient given the others)")
    if (post := credit.posterior) and post.q:
        console.print(verdict_line(post.q, post.escape, post.apart))
    console.print(f"colour scale: ±{scale:.3f} (green positive, red negative); stats: {credit.stats}")


def render_html(group: list[Trajectory], credit, title: str = "DiDPO credit") -> str:
    scale = _scale(credit)
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
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in _anchor_cells(credit, a))
        out.append(f"<tr>{cells}<td><pre>{html.escape(a.text[:400])}</pre></td></tr>")
    post = credit.posterior
    line = verdict_line(post.q, post.escape, post.apart) if post and post.q else ""
    out.append("</table>" + (f"<p>{html.escape(line)}</p>" if line else "") + "</body></html>")
    return "".join(out)


@dataclass
class Explain:
    html: str | None = None  # also write a standalone HTML page to this path
    algo: str = "didpo"  # grpo | gigpo | didpo
    baseline: str = "ridge"  # ridge | contrast | group_mean
    norm: str = "mean_norm"  # mean_norm | mean_std_norm
    group: int = 0  # which group of the file (the trainer writes save_groups of them per step)


def main(argv: list[str] | None = None) -> None:
    values = cli.parse(argv, Explain, description="Render a group's tokens coloured by their final advantage.",
                       extra=[("group_file", dict(help="a saved group: one env.Trajectory JSON per line"))])
    group_file, opts = Path(values.pop("group_file")), Explain(**values)
    if not group_file.exists():
        cli.fail(f"{group_file} does not exist; pass a .jsonl file of saved trajectories (the trainer writes them)")
    try:
        groups = read_groups(group_file.read_text().splitlines())
    except (ValueError, TypeError, KeyError) as e:
        cli.fail(f"{group_file} is not a file of env.Trajectory JSON lines ({e})")
    if not 0 <= opts.group < len(groups):
        fix = f"pass --group 0 to {len(groups) - 1}" if groups else "pass a file of saved trajectories"
        cli.fail(f"{group_file} holds {len(groups)} group(s), no group {opts.group}; {fix}")
    group = groups[opts.group]
    try:
        cfg = didpo.AdvConfig(algo=opts.algo, baseline=opts.baseline, norm=opts.norm)
    except ValueError as e:
        cli.fail(str(e))
    credit = didpo.compute_credit(group, cfg)
    render_terminal(group, credit)
    if opts.html is not None:
        Path(opts.html).write_text(render_html(group, credit, title=f"{group_file.name}: {opts.algo}/{opts.baseline}"))
        print(f"wrote {opts.html}")


if __name__ == "__main__":
    main()
