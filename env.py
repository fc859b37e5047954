"""The multi-turn coding environment: episodes, line provenance, rewards.

    python -c "import env,tasks; [print(m['content']) for m in env.Episode(tasks.load('data/tasks.jsonl')[0]).messages]"

An episode is a workspace S_0 (the task's files) and turns t = 1..T: response y_t's actions turn S_{t-1} into
S_t, and the environment answers with public-test feedback. Rewards (DESIGN.md §4):

    r_t = -p·[turn had no valid action] + c·(Φ(S_t) − Φ(S_{t−1}))     step reward, Turn.reward
    Φ(S) = share of public tests that the entry file of S passes          (c = shaping_coef, p = invalid_penalty)
    R    = 1[all hidden tests pass]  or  share passed                     final reward, Trajectory.reward

Shaping telescopes to c·(Φ(S_T) − Φ(S_0)), so it cannot pay for slowness. Provenance: `Turn.origin[path][i]` is
the char range of `Turn.response` that wrote line i of `files_after[path]` (less the indent a re-indented SEARCH
adds), or None where it was carried over (protocol.lines.carry: re-emitted code keeps its old origin, so it never
earns diff credit); `Turn.emitted` has the range of every line written, re-emissions included (for the verdict).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

import sandbox
from protocol.actions import EDITS, Action, parse
from protocol.edits import MAX_FILES, Refused, apply_diff, apply_search_replace, check_path
from protocol.hacks import hacks
from protocol.lines import Range, carry, join, lines_of
from protocol.messages import build_messages, describe_test, report_tests, syntax_error
from tasks import Task

_PHI0: dict[tuple, float] = {}  # Φ(S_0) per (code, tests): every episode of a task shares its starter


@dataclass
class Turn:
    response: str                      # assistant text, decoded from the sampled ids
    span: Range = (0, 0)               # token range of the response in Trajectory.token_ids
    offsets: list[Range] = field(default_factory=list)  # char range of each response token
    action: str = ""                   # kinds of the parsed actions, e.g. "search_replace,run_tests"
    applied: bool = False              # the turn had at least one edit and every edit applied
    files_before: dict[str, str] = field(default_factory=dict)
    files_after: dict[str, str] = field(default_factory=dict)
    origin: dict[str, list[Range | None]] = field(default_factory=dict)   # [path][line]: see the module docstring
    emitted: dict[str, list[Range | None]] = field(default_factory=dict)  # as origin, re-emitted lines keep theirs
    observation: str = ""
    reward: float = 0.0                # step reward r_t (penalty + shaping); the final reward is NOT in it
    public: dict[str, bool] | None = None  # describe_test(test) -> passed, on S_t; None when no test ran
    # f -> {input: output} (short hashes) of top-level function f of S_t near its tests (protocol.behaviour)
    behaviour: dict[str, dict[str, str]] | None = None


@dataclass
class Trajectory:
    task_id: str
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)   # 1 exactly on sampled assistant tokens
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0                                   # final reward, from hidden tests
    sampler_logprobs: list[float] | None = None           # aligned with token_ids (0 off the mask)
    truncated: bool = False
    meta: dict = field(default_factory=dict)
    hack: bool = False                                    # final code touches the grader or the host (hacks)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(line: str) -> Trajectory:
        d = json.loads(line)
        turns = []
        for t in d.pop("turns"):
            t["span"] = tuple(t["span"])
            t["offsets"] = [tuple(o) for o in t["offsets"]]
            for key in ("origin", "emitted"):
                t[key] = {p: [tuple(r) if r is not None else None for r in rs] for p, rs in t.get(key, {}).items()}
            turns.append(Turn(**t))
        return Trajectory(turns=turns, **d)


def read_groups(lines: list[str]) -> list[list[Trajectory]]:
    """A saved step file's groups (trainer.log): each starts where the task changes or meta["episode"] is 0 again."""
    ts = [Trajectory.from_json(line) for line in lines if line.strip()]
    starts = [i for i, t in enumerate(ts) if not i or t.task_id != ts[i - 1].task_id or t.meta.get("episode") == 0]
    return [ts[a:b] for a, b in zip(starts, starts[1:] + [len(ts)])]


@dataclass
class EnvConfig:
    # episode
    max_turns: int = 8                  # the episode ends after this many turns
    stop_when_public_pass: bool = False  # also end as soon as every public test passes
    # rewards
    reward: str = "binary"              # final reward: "binary" (all hidden pass) or "fraction" (share passed)
    invalid_penalty: float = 0.01       # subtracted from r_t when a turn has no valid action
    shaping_coef: float = 0.0           # c in r_t = c·(Φ_t − Φ_{t−1}); 0 turns shaping off
    # feedback and grading
    feedback_chars: int = 1000          # each of input / expected / actual / stderr is cut to this
    grade_mode: str = "strict"          # sandbox.grade mode: "strict" (rewards the code cannot game), "judge", "lcb"
    limits: sandbox.Limits | None = None
    sandbox_workers: int | None = None  # parallel grading processes; None: one per core (train.py divides by ranks)
    probe: bool = True                  # record Turn.behaviour beside each public-test run (one more sandboxed run)
    # token budgets (enforced by the rollout loop, which owns the tokens)
    max_response_tokens: int = 512
    max_total_tokens: int = 8192 + 4096

    def __post_init__(self):
        if self.reward not in ("binary", "fraction"):
            raise ValueError(f"EnvConfig.reward={self.reward!r}; use 'binary' or 'fraction'")
        if self.grade_mode not in sandbox.MODES:
            raise ValueError(f"EnvConfig.grade_mode={self.grade_mode!r}; use one of {', '.join(sandbox.MODES)}")
        for name in ("max_turns", "feedback_chars", "max_response_tokens", "max_total_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"EnvConfig.{name}={getattr(self, name)}; it must be >= 1")
        if self.invalid_penalty < 0:
            raise ValueError(f"EnvConfig.invalid_penalty={self.invalid_penalty}; pass a penalty >= 0")


def make_config(**cfg) -> EnvConfig:
    """EnvConfig from keyword overrides, naming any unknown key."""
    known = {f.name for f in fields(EnvConfig)}
    if bad := sorted(set(cfg) - known):
        raise ValueError(f"unknown EnvConfig field(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    return EnvConfig(**cfg)


class Episode:
    """One live episode, text only; the rollout loop owns tokens and batches the sandbox calls. Per turn:
    job = act(response); msg = observe(grade_many([job, ...])[i]); when done, R = finish(grade(final_job()))."""

    def __init__(self, task: Task, cfg: EnvConfig | None = None):
        if not task.hidden_tests:
            raise ValueError(f"task {task.id} has no hidden tests; the final reward needs at least one")
        self.task, self.cfg = task, cfg or EnvConfig()
        self.files = {p: t.replace("\r\n", "\n") for p, t in task.files.items()}
        self.files.setdefault(task.entry, "")
        self.messages = build_messages(task, self.files)
        self.turns: list[Turn] = []
        self.done, self.reward, self.hack = False, 0.0, False
        self.ended = ""  # why it ended: finish | all public tests pass | turn limit reached
        self._job: sandbox.GradeJob | None = None
        self._pending: dict = {}
        self.phi = self._phi0() if self.cfg.shaping_coef else 0.0

    def _grade_job(self, tests: list, stop: bool) -> sandbox.GradeJob:
        return sandbox.GradeJob(self.files[self.task.entry], tests, self.task.fn_name, self.cfg.grade_mode, stop,
                                self.cfg.limits)

    def _phi0(self) -> float:
        # Shaping needs Φ(S_0), graded here, synchronously, once per starter: act() hands the loop one job per turn.
        code = self.files[self.task.entry]
        if not self.task.public_tests or not code.strip() or syntax_error(self.task.entry, code):
            return 0.0
        key = (code, repr(self.task.public_tests), self.task.fn_name, self.cfg.grade_mode)
        if key not in _PHI0:
            vs = sandbox.grade(code, self.task.public_tests, fn_name=self.task.fn_name, stop_on_first_failure=False,
                               mode=self.cfg.grade_mode, limits=self.cfg.limits)
            _PHI0[key] = sum(v.passed for v in vs) / len(self.task.public_tests)
        return _PHI0[key]

    def _apply(self, a: Action, origins: dict[str, list], restore: bool = True) -> list[tuple[str, list, list, str]]:
        """Apply one edit to the workspace copy in `origins`' frame; (path, lines, origin, message) per file.
        restore=False: re-emitted lines keep their new ranges (the emitted frame)."""
        n, entry = self.cfg.feedback_chars, self.task.entry
        if a.kind == "diff":
            return apply_diff(self.files, origins, a, entry, n, restore)
        path = check_path(a.path or entry)
        lines, origin = lines_of(self.files.get(path, "")), origins.get(path, [])
        if a.kind == "write":
            new = [ln.text for ln in a.lines]
            verb = "written" if path in self.files else "created"
            return [(path, new, carry(lines, origin, new, [ln.range for ln in a.lines], restore),
                     f"{path}: {verb} ({len(new)} line{'s' * (len(new) != 1)}).")]
        if path not in self.files and any(s.strip() for s in a.search):
            raise Refused(f"{path}: no such file; existing files: {', '.join(sorted(self.files))}")
        a.path = path
        return [(path, *apply_search_replace(lines, origin, a, n, restore))]

    def act(self, response: str) -> sandbox.GradeJob | None:
        """Parse and apply the response's actions, append a Turn; return the public-test job, or None."""
        if self.done:
            raise RuntimeError(f"episode of task {self.task.id} is done; start a new Episode")
        if self._pending:
            raise RuntimeError("act() called twice without observe(); call observe(verdicts) first")
        before = dict(self.files)
        origins: dict[str, list] = {p: [None] * len(lines_of(t)) for p, t in self.files.items()}
        emitted = {p: list(o) for p, o in origins.items()}
        msgs, kinds, edited = [], [], set()
        edits = ok = 0
        valid = run = finish = False
        for a in parse(response):
            if a.kind == "ignored":
                msgs.append(f"Note: {a.error}.")
                continue
            kinds.append(a.kind)
            edits += a.kind in EDITS
            try:
                if a.error:
                    raise Refused(a.error, invalid=True)
                if a.kind == "run_tests":
                    run = True
                elif a.kind == "finish":
                    finish = True
                else:
                    results = self._apply(a, origins)
                    if len(set(self.files) | {r[0] for r in results}) > MAX_FILES:
                        raise Refused(f"the workspace is limited to {MAX_FILES} files", invalid=True)
                    echo = {r[0]: r[2] for r in self._apply(a, emitted, restore=False)}
                    for path, lines, origin, msg in results:
                        self.files[path] = join(lines)
                        origins[path], emitted[path] = origin, echo[path]
                        edited.add(path)
                        msgs.append(msg + (f" Note: {a.note}." if a.note else ""))
                    ok += 1
                valid = True
            except Refused as e:
                valid = valid or not e.invalid
                msgs.append(f"Refused: {e}")
        checked = {p: syntax_error(p, self.files[p]) for p in sorted(edited | {self.task.entry})}
        errors = [e for p, e in checked.items() if e and p in edited]
        entry_bad = checked[self.task.entry]
        job = None
        # After `finish` only shaping (Φ_T) and the verdict (Turn.public after an edit) need the tests.
        if (ok or run and not (finish and not self.cfg.shaping_coef)) and self.task.public_tests and not entry_bad:
            job = self._grade_job(self.task.public_tests, stop=False)
        self.turns.append(Turn(response=response, action=",".join(kinds), applied=edits > 0 and ok == edits,
                               files_before=before, files_after=dict(self.files), origin=origins, emitted=emitted))
        self._job = job
        self._pending = dict(msgs=msgs, valid=valid, errors=errors, finish=finish, run=run,
                             changed=ok > 0, entry_bad=entry_bad)
        return job

    def observe(self, verdicts: list[sandbox.Verdict] | None) -> str | None:
        """Fill the last turn's observation and step reward; return the next user message, or None when done."""
        if not self._pending:
            raise RuntimeError("observe() called without act(); call act(response) first")
        if (self._job is None) != (verdicts is None):
            want = "the verdicts of the job act() returned" if self._job else "None (act() returned no job)"
            raise ValueError(f"observe() got {'None' if verdicts is None else 'verdicts'}; pass {want}")
        st, turn, cfg = self._pending, self.turns[-1], self.cfg
        self._pending = {}
        parts = list(st["msgs"])
        if not st["valid"]:
            parts.insert(0, "No valid action found in your reply. Edit a file (the path alone on a line, then "
                            "a fenced block: SEARCH/REPLACE markers or the whole file, or a ```diff block), "
                            "or write `run tests` or `finish` alone on a line.")
        parts += st["errors"]
        phi, all_pass = self.phi, False
        if verdicts is not None:
            tests = self.task.public_tests
            phi = sum(v.passed for v in verdicts[:len(tests)]) / len(tests)
            all_pass = len(verdicts) >= len(tests) and all(v.passed for v in verdicts[:len(tests)])
            parts.append(report_tests(tests, verdicts, self.task.fn_name, cfg.feedback_chars))
            turn.public = {describe_test(t, self.task.fn_name): v.passed for t, v in zip(tests, verdicts)}
        elif st["entry_bad"] and st["changed"]:
            phi = 0.0  # a workspace whose entry does not compile passes no test
            if st["entry_bad"] not in st["errors"]:
                parts.append(st["entry_bad"])
        elif st["run"] and not self.task.public_tests:
            parts.append("This task has no public tests.")
        elif st["run"] and st["entry_bad"]:
            parts.append(f"Tests not run: {st['entry_bad']}")
        turn.reward = -cfg.invalid_penalty * (not st["valid"]) + cfg.shaping_coef * (phi - self.phi)
        self.phi = phi
        self._job = None
        self.done = st["finish"] or len(self.turns) >= cfg.max_turns or (cfg.stop_when_public_pass and all_pass)
        if not self.done:
            left = cfg.max_turns - len(self.turns)
            parts.append(f"{left} turn{'s' * (left != 1)} left. Edit, `run tests`, or `finish`.")
        else:
            why = ("finish" if st["finish"] else "all public tests pass" if cfg.stop_when_public_pass and all_pass
                   else "turn limit reached")
            parts.append(f"Episode over ({why}).")
            self.ended = why
        turn.observation = "\n\n".join(p for p in parts if p)
        return None if self.done else turn.observation

    def final_job(self) -> sandbox.GradeJob:
        """The hidden-test job on the final workspace; binary rewards stop at the first failure."""
        return self._grade_job(self.task.hidden_tests, stop=self.cfg.reward == "binary")

    def finish(self, verdicts: list[sandbox.Verdict]) -> float:
        """Final reward R from the final job's verdicts; also stored as self.reward."""
        n = len(self.task.hidden_tests)
        passed = sum(v.passed for v in verdicts[:n])
        self.reward = float(len(verdicts) >= n and passed == n) if self.cfg.reward == "binary" else passed / n
        self.hack = hacks(self.files[self.task.entry])
        self.done = True
        return self.reward


def hack_rate(trajs: list[Trajectory]) -> float:
    """Share of passing trajectories (reward >= 1) whose final code touches the grader or scans the host."""
    passing = [t for t in trajs if t.reward >= 1.0]
    return sum(t.hack for t in passing) / len(passing) if passing else 0.0
