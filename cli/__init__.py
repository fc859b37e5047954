"""Command lines from dataclasses: every field a flag, its comment the help, its default shown.

    python -c "import cli, eval; print(cli.parse(['--bench', 'mbpp', '--no-strict'], eval.EvalConfig))"

`parse(argv, *classes, extra=())` -> {field: value} of the flags given (to merge over a config file or presets):
field x_y is --x-y, its help its trailing comment; str, int, float, bool (--x / --no-x), `X | None`, comma-separated
lists (a string item takes \\n and \\t). Bad input: one `error: ...` line naming the closest flag, exit code 2
(`fail(message)` for any). `read_file(path, cls)`: the fields of a YAML or TOML file. `git_revision()`: this
checkout's commit, or "unknown".
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import io
import subprocess
import sys
import textwrap
import tokenize
import types
import typing
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        if message.startswith("unrecognized arguments: "):
            flags = [s for a in self._actions for s in a.option_strings]
            hints = []
            for bad in message.split(": ", 1)[1].split():
                close = difflib.get_close_matches(bad.split("=")[0], flags, n=1)
                hints.append(f"{bad}" + (f" (did you mean {close[0]}?)" if close else ""))
            message = f"unknown option {', '.join(hints)}; see --help"
        fail(message)


def fail(message: str) -> typing.NoReturn:
    """Bad input: one `error: ...` line on stderr, exit code 2, no traceback."""
    sys.exit(print(f"error: {message}", file=sys.stderr) or 2)


def field_comments(cls) -> dict[str, str]:
    """field name -> its trailing `# comment` (joined with comment-only lines aligned under it)."""
    src = textwrap.dedent(inspect.getsource(cls))
    lines = src.splitlines()
    comments = {t.start[0]: (t.start[1], t.string[1:].strip())
                for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT}
    out = {}
    for node in ast.parse(src).body[0].body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        row = node.end_lineno
        if row not in comments or lines[row - 1].lstrip().startswith("#"):
            continue
        col, text = comments[row]
        parts = [text]
        while row + 1 in comments and lines[row].lstrip().startswith("#") and comments[row + 1][0] == col:
            row += 1
            parts.append(comments[row][1])
        out[node.target.id] = " ".join(parts)
    return out


def _kind(tp) -> tuple[type, bool, bool] | None:
    """(scalar type, optional, list) of a field type this module can parse, else None."""
    args = typing.get_args(tp)
    optional = typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return None
        tp, args = rest[0], typing.get_args(rest[0])
    if typing.get_origin(tp) is list and len(args) == 1 and args[0] in (int, float, str):
        return args[0], optional, True
    return (tp, optional, False) if tp in (str, int, float, bool) else None


def _list_of(scalar: type, flag: str):
    names = {int: "integers", float: "numbers", str: "strings"}

    def convert(text: str) -> list:
        try:
            return [scalar(x.strip()) if scalar is not str else x.strip().replace("\\n", "\n").replace("\\t", "\t")
                    for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} {text!r} is not a comma-separated list of {names[scalar]}, e.g. 1,5") from None
    return convert


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def parser(*classes, extra=(), description: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser of `classes`' fields (see the module docstring); absent flags stay absent."""
    p = _Parser(description=description, allow_abbrev=False, argument_default=argparse.SUPPRESS,
                formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=32, width=110))
    for flag, kwargs in extra:
        p.add_argument(flag, **kwargs)
    for cls in classes:
        hints, comments = typing.get_type_hints(cls), field_comments(cls)
        for f in dataclasses.fields(cls):
            if (kind := _kind(hints[f.name])) is None:
                continue
            scalar, optional, many = kind
            flag, default = "--" + f.name.replace("_", "-"), _default(f)
            shown = ",".join(map(str, default)) if many and default else default
            text = comments.get(f.name, "")
            text = (text + " " if text else "") + ("(required)" if default is dataclasses.MISSING else
                                                   f"(default: {shown})")
            kw: dict = dict(dest=f.name, help=text.replace("%", "%%"), required=default is dataclasses.MISSING)
            if scalar is bool and not many:
                kw["action"] = argparse.BooleanOptionalAction
            else:
                kw["type"] = _list_of(scalar, flag) if many else scalar
                kw["metavar"] = ({int: "N", float: "X", str: "TEXT"}[scalar] + (",..." if many else "")
                                 + ("|none" if optional and scalar is not str else ""))
                if optional and scalar is not str:
                    kw["type"] = _or_none(kw["type"])
            p.add_argument(flag, **kw)
    return p


def _or_none(convert):
    def parse(text: str):
        return None if text.lower() == "none" else convert(text)
    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def parse(argv: list[str] | None, *classes, extra=(), description: str | None = None) -> dict:
    """{field: value} of the flags given in argv (sys.argv[1:] when None); see the module docstring."""
    return vars(parser(*classes, extra=extra, description=description).parse_args(argv))


def read_file(path: str | Path, cls) -> dict:
    """{field: value} of a YAML (.yaml / .yml) or TOML (.toml) file of `cls` fields; see the module docstring."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist; pass a .yaml or .toml file")
    try:
        if path.suffix == ".toml":
            import tomllib
            values = tomllib.loads(path.read_text())
        else:
            import yaml
            values = yaml.safe_load(path.read_text()) or {}
    except Exception as e:  # noqa: BLE001 - any parse error becomes one line
        raise ValueError(f"config file {path} does not parse ({type(e).__name__}); fix its syntax") from None
    if not isinstance(values, dict):
        raise ValueError(f"config file {path} must hold a mapping of {cls.__name__} fields")
    names = [f.name for f in dataclasses.fields(cls)]
    if unknown := sorted(set(values) - set(names)):
        hint = difflib.get_close_matches(unknown[0], names, n=1)
        raise ValueError(f"config file {path}: unknown field {unknown[0]!r}"
                         + (f"; did you mean {hint[0]!r}?" if hint else ""))
    return values


def git_revision(path: str | Path | None = None) -> str:
    """The commit checked out at `path` (default: this project), or "unknown" without git or a repository."""
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                           cwd=Path(path) if path else Path(__file__).resolve().parent.parent)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"
