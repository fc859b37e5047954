"""What the environment writes: the prompt that teaches the protocol, test reports, syntax errors.

    python -c "import protocol.messages as m, tasks; print(m.build_messages(tasks.load('data/tasks.jsonl')[0], {}))"

`build_messages(task, files)`: PROTOCOL, the problem, the workspace and the public tests (never the hidden ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lines import clip, fence, lines_of
from tasks import Task, Test

if TYPE_CHECKING:
    import sandbox

STDIO_HEAD = "input:\n"  # how describe_test opens a stdio test (protocol.functions: such a test names no function)
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
        return f"{STDIO_HEAD}{fence(t.input)}\nexpected output:\n{fence(t.output)}"
    if t.kind == "call":
        args = ", ".join(x for x in t.input.split("\n") if x.strip())
        return f"{fn_name}({args}) should return {t.output}"
    return fence(t.input, "python")


def report_tests(tests: list[Test], verdicts: list[sandbox.Verdict], fn_name: str | None, n: int) -> str:
    head = f"Public tests: {sum(v.passed for v in verdicts)}/{len(tests)} passed."
    if (fail := next((k for k, v in enumerate(verdicts) if not v.passed), None)) is None:
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
