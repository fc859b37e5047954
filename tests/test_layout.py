"""The layout a reader relies on: imports flow one way, root modules stay short, each opens with a command.

    python -m pytest tests/test_layout.py -q

Every project module (root *.py and the packages beside them) is parsed with `ast`; every import in it
counts, at module level or inside a function (lazy), except those under `if TYPE_CHECKING:`, which never
run. Importing `pkg.mod` also runs `pkg/__init__.py`; that implicit edge is not counted, so a
package's __init__ may gather its own submodules. bench/ and tests/ are consumers, not modules.

Issue 18 moved what a reader of the method and the trainer does not need into folders named for
their contents: jail/, benchmarks/, protocol/ (the text protocol under env.py), trainer/ (logs,
checkpoints, sharding under train.py), tools/ (explain), cli/.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jail", "benchmarks", "tools", "cli", "trainer", "protocol", "models")
ROOT_LINES, FILE_LINES = 4000, 700
PRODUCT_LINES = 8436  # issue 34: every project module together (all but tests/, bench/, data/) does not grow
# (8,436 until tools.explain read one group of a step file holding several, and Config.overlong_filter, stop 46)

# The layering (DESIGN.md §1): a module imports only modules of a lower rank, or of its own package.
RANK = {"tasks": 0, "jail": 0, "cli": 0, "models": 0, "credit": 1, "sandbox": 1, "benchmarks": 1, "protocol": 1,
        "env": 2, "rollout": 3, "diffs": 4, "verdict": 5, "didpo": 6, "tools": 7, "trainer": 7, "train": 8, "eval": 8}


def modules() -> dict[str, Path]:
    out = {p.stem: p for p in sorted(ROOT.glob("*.py"))}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).glob("*.py")):
            out[pkg if p.stem == "__init__" else f"{pkg}.{p.stem}"] = p
    return out


MODULES = modules()


def _runtime_nodes(tree: ast.AST):
    """Every node except the bodies of `if TYPE_CHECKING:` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def imports(path: Path) -> set[str]:
    """Every absolute module name `path` imports (from a.b import c gives a.b and a.b.c)."""
    names = set()
    for n in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            names |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module:
            assert n.level == 0, f"{path}: relative import; the layout test resolves absolute ones only"
            names |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
    return names


def project_edges(name: str) -> set[str]:
    out = set()
    for x in imports(MODULES[name]):
        while x and x not in MODULES:
            x = x.rpartition(".")[0]
        if x and x != name:
            out.add(x)
    return out


GRAPH = {m: project_edges(m) for m in MODULES}


def cycles() -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import env\n"
                 "def f():\n    import didpo\n    from jail.host import launch\n")
    assert imports(p) == {"typing", "typing.TYPE_CHECKING", "didpo", "jail.host", "jail.host.launch"}
    assert "rollout" in GRAPH["eval"]  # eval imports rollout only inside its functions


def test_no_import_cycle():
    assert cycles() == []


def _rank(name: str) -> int:
    return RANK[name.split(".")[0]]


def _violations(names) -> list[str]:
    return [f"{m} -> {d}" for m in names for d in sorted(GRAPH[m])
            if d.split(".")[0] != m.split(".")[0] and _rank(d) >= _rank(m)]


def test_imports_flow_down_the_layers():
    assert set(MODULES) == {m for m in MODULES if m.split(".")[0] in RANK}, "give a new module a RANK"
    assert _violations(MODULES) == []


def test_no_module_imports_the_trainer_or_the_evaluator():
    assert [m for m in MODULES if GRAPH[m] & {"train", "eval"}] == []


@pytest.mark.parametrize("name", ["didpo", "diffs", "credit"])
def test_method_modules_never_touch_distributed_vllm_or_the_sandbox(name):
    bad = {x for x in imports(MODULES[name])
           if x.split(".")[0] in ("vllm", "sandbox", "jail") or x.startswith("torch.distributed")}
    assert bad == set()


def test_the_sandbox_side_needs_only_the_standard_library():
    """docker and fusion run jail.server in a bare python image: what it imports may need nothing else,
    but under `try: ... except ImportError` (lcb preloads numpy where the program may use it)."""
    inside, todo = set(), ["jail.server"]
    while todo:
        m = todo.pop()
        inside.add(m)
        todo += [d for d in GRAPH[m] if d not in inside]
    assert inside >= {"jail", "jail.confine", "jail.graders", "jail.strict", "jail.lcb"} and "sandbox" not in inside
    for m in inside:
        tree = ast.parse(MODULES[m].read_text())
        optional = {a.name for t in ast.walk(tree) if isinstance(t, ast.Try)
                    and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in t.handlers)
                    for n in t.body if isinstance(n, ast.Import) for a in n.names}
        other = {x.split(".")[0] for x in imports(MODULES[m]) - optional}
        assert other - set(sys.stdlib_module_names) - {"jail", "__future__"} == set(), m


def lines(name: str) -> int:
    return len(MODULES[name].read_text().splitlines())


ROOT_MODULES = sorted(m for m in MODULES if "." not in m and m not in PACKAGES)


@pytest.mark.parametrize("name", ROOT_MODULES)
def test_root_module_within_its_line_budget(name):
    assert lines(name) <= FILE_LINES


def test_root_modules_within_the_total_budget():
    assert sum(lines(m) for m in ROOT_MODULES) <= ROOT_LINES


def test_product_code_within_its_line_budget():
    # Root modules and every .py of every top-level package (a folder with __init__.py): a virtualenv is no package.
    packages = [d for d in ROOT.iterdir() if (d / "__init__.py").exists() and d.name not in ("tests", "bench", "data")]
    on_disk = {*ROOT.glob("*.py"), *(p for d in packages for p in d.rglob("*.py"))}
    assert on_disk == set(MODULES.values()), "a project module outside the layout: add its package to PACKAGES"
    assert sum(lines(m) for m in MODULES) <= PRODUCT_LINES


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_opens_with_its_contract_and_a_command(name):
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text())) or ""
    assert len(doc.splitlines()) >= 2 or name in PACKAGES, f"{name}: the docstring says what the module owns"
    assert name in ("tools",) or any(s.strip().startswith("python ") for s in doc.splitlines()), \
        f"{name}: its docstring shows a runnable command"


FUNCTION_LINES = 60  # issue 34: a function of the method or the trainer reads as the steps of its formula
STEPWISE = ("didpo", "verdict", "diffs", "credit", "train")


def long_functions(path: Path) -> dict[str, int]:
    """Every function (methods and nested ones included) longer than FUNCTION_LINES, def line to last line."""
    return {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > FUNCTION_LINES}


def test_long_functions_counts_from_def_to_last_line(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("@decorated\ndef f():\n" + "    x = 1\n" * 59 + "\n\ndef g():\n" + "    x = 1\n" * 60)
    assert long_functions(p) == {"g": 61}


@pytest.mark.parametrize("name", STEPWISE)
def test_functions_of_the_method_and_the_trainer_within_their_line_budget(name):
    assert long_functions(MODULES[name]) == {}


def test_didpo_reads_as_the_paper_within_350_lines():
    """Issue 34: didpo.py is the paper's estimator and its baselines; the loss lives in trainer/ppo.py and the
    verdict in verdict.py."""
    assert lines("didpo") <= 350
    assert not re.search(r"^def policy_loss", MODULES["didpo"].read_text(), re.M)
