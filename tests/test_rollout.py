"""Samplers and the rollout loop: token exactness, log-prob agreement, batching, the vLLM wrapper (fake engine).

    .venv/bin/python -m pytest tests/test_rollout.py -q
"""

from __future__ import annotations

import copy
import logging
import os
import sys
import types
from pathlib import Path

import pytest
import torch
import transformers

import env
import models
import rollout
import sandbox
import tasks
from protocol import chat
from rollout import HFSampler, Sample, Sampling, ScriptedSampler
from trainer import hardware

DATA = Path(__file__).resolve().parent.parent / "data" / "tasks.jsonl"


@pytest.fixture(scope="module")
def data_tasks():
    return tasks.load(str(DATA))


def forward_logprobs(model, ids: list[int]) -> torch.Tensor:
    """log pi(ids[j] | ids[:j]) for j >= 1 from one fp32 forward pass: the learner's view."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()  # T x V
    return torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1)  # T-1


def with_eot_rate(model, eot: int, p: float):
    """A copy of `model` whose end-of-turn probability is exactly p at every position.

    A random-init model almost never ends a turn by itself; this makes multi-turn episodes happen.
    The hook is part of the model, so the forward pass used for checking sees the same function.
    """
    m = copy.deepcopy(model)

    def hook(module, args, out):  # out: B x T x V
        others = torch.cat([out[..., :eot], out[..., eot + 1:]], -1)
        out = out.clone()
        out[..., eot] = torch.logsumexp(others, -1) + torch.log(torch.tensor(p / (1 - p)))
        return out

    m.lm_head.register_forward_hook(hook)
    return m


class Recorder:
    """Wraps a sampler and keeps every (prompt, sample) it returned, to check the trajectories against."""

    def __init__(self, inner):
        self.inner, self.calls, self.seen = inner, 0, {}

    def generate(self, prompts, sampling):
        self.calls += 1
        out = self.inner.generate(prompts, sampling)
        for p, s in zip(prompts, out):
            self.seen.setdefault(tuple(p), []).append(s.token_ids)
        return out


def check_layout(traj: env.Trajectory, task, tokenizer, recorder: Recorder | None = None):
    """Every token-layout property the trainer and credit.py rely on (DESIGN.md §2, §4)."""
    ids, mask, lps = traj.token_ids, traj.loss_mask, traj.sampler_logprobs
    assert len(ids) == len(mask) == len(lps)
    eot = chat.eot_id(tokenizer)
    prompt = chat.prompt_ids(tokenizer, env.Episode(task).messages)
    assert ids[: len(prompt)] == prompt and traj.meta["prompt_tokens"] == len(prompt)
    expect = [0] * len(ids)
    pos = len(prompt)
    for k, turn in enumerate(traj.turns):
        a, b = turn.span
        assert a == pos and b > a  # spans tile the sequence in order, observations in between
        expect[a:b] = [1] * (b - a)
        sampled = ids[a:b]
        if recorder is not None:  # the sampled ids, verbatim (cut to the episode's cap at most)
            assert sampled in [got[: b - a] for got in recorder.seen[tuple(ids[:a])]]
        body = sampled[:-1] if sampled[-1] == eot else sampled
        assert turn.response == tokenizer.decode(body, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        assert len(turn.offsets) == b - a
        ends = [o[1] for o in turn.offsets]
        assert ends == sorted(ends) and all(0 <= s <= e <= len(turn.response) for s, e in turn.offsets)
        if sampled[-1] == eot:
            assert turn.offsets[-1] == (len(turn.response), len(turn.response))
        pos = b
        if k + 1 < len(traj.turns):  # the observation delta, rendered by the template alone
            obs = chat.observation_ids(tokenizer, turn.observation, ended_with_eot=sampled[-1] == eot)
            assert ids[b: b + len(obs)] == obs
            pos = b + len(obs)
    assert pos == len(ids)  # a trajectory ends on its last sampled token
    assert mask == expect
    assert all(lp == 0.0 for lp, m in zip(lps, mask) if not m)


# --- Sampling / Sample --------------------------------------------------------


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(top_p=0), dict(top_p=1.5), dict(max_tokens=0),
                                 dict(stop=("x", ""))])
def test_sampling_rejects_bad_values(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        Sampling(**bad)


# --- HFSampler ----------------------------------------------------------------


def prompts_of(tokenizer):
    texts = ["def add(a, b):", "Write a function that reverses a string, then test it.", "x", "return a + b"]
    return [tokenizer.encode(t) for t in texts]


def test_hf_logprobs_equal_forward_pass(tiny_model, tiny_tokenizer):
    """Left-padded batches, temperature and top-p sampling: logprobs are the raw policy's, to 1e-4 (fp32)."""
    prompts = prompts_of(tiny_tokenizer)
    out = HFSampler(tiny_model, tiny_tokenizer, batch_size=3).generate(
        prompts, Sampling(temperature=0.7, top_p=0.9, max_tokens=12, seed=0))
    assert [len(s.token_ids) for s in out] == [12] * 4 and {s.finish_reason for s in out} == {"length"}
    for p, s in zip(prompts, out):
        ref = forward_logprobs(tiny_model, p + s.token_ids)[len(p) - 1:]
        assert torch.allclose(torch.tensor(s.logprobs), ref, atol=1e-4, rtol=0)


def test_hf_greedy_batched_equals_single_and_argmax(tiny_model, tiny_tokenizer):
    prompts = prompts_of(tiny_tokenizer)
    sampler = HFSampler(tiny_model, tiny_tokenizer, batch_size=4)
    batched = sampler.generate(prompts, Sampling(temperature=0, max_tokens=8))
    for p, s in zip(prompts, batched):
        assert s.token_ids == sampler.generate([p], Sampling(temperature=0, max_tokens=8))[0].token_ids
        ids = p + s.token_ids
        with torch.no_grad():
            logits = tiny_model(torch.tensor([ids])).logits[0]
        assert s.token_ids == logits[len(p) - 1: -1].argmax(-1).tolist()


def test_hf_shared_prompts_prefill_once(tiny_model, tiny_tokenizer):
    """A batch repeating prompts (n episodes of a task) runs each distinct prompt's prefill once, and samples
    exactly as if every row were prefilled: greedy tokens equal the unshared path, logprobs the forward pass."""
    a, b = prompts_of(tiny_tokenizer)[:2]
    prompts = [a, b, a, a, b]
    rows, greedy = [], Sampling(temperature=0, max_tokens=6)
    hook = tiny_model.register_forward_pre_hook(lambda m, a, kw: rows.append(kw["input_ids"].shape), with_kwargs=True)
    try:
        out = HFSampler(tiny_model, tiny_tokenizer).generate(prompts, greedy)
    finally:
        hook.remove()
    assert rows[0] == (2, max(len(a), len(b)) - 1) and all(r == (5, 1) for r in rows[1:])  # prefill, then decode
    for p, s in zip(prompts, out):
        assert s.token_ids == HFSampler(tiny_model, tiny_tokenizer).generate([p], greedy)[0].token_ids
        assert torch.allclose(torch.tensor(s.logprobs), forward_logprobs(tiny_model, p + s.token_ids)[len(p) - 1:],
                              atol=1e-4, rtol=0)


def test_hf_stops_on_stop_token_without_padding(tiny_model, tiny_tokenizer):
    prompts = prompts_of(tiny_tokenizer)[:2]
    sampler = HFSampler(tiny_model, tiny_tokenizer)
    free = sampler.generate(prompts, Sampling(temperature=0, max_tokens=10))
    stop = free[0].token_ids[3]
    assert stop not in free[1].token_ids  # so row 1 must run to the cap while row 0 stops
    out = sampler.generate(prompts, Sampling(temperature=0, max_tokens=10, stop_token_ids=[stop]))
    k = free[0].token_ids.index(stop)
    assert out[0].token_ids == free[0].token_ids[: k + 1] and out[0].finish_reason == "stop"
    assert len(out[0].logprobs) == k + 1
    assert out[1].token_ids == free[1].token_ids and out[1].finish_reason == "length"


def ends_on_stop(tokenizer, s, stop: str) -> bool:
    """s's text holds `stop` and the text of all its tokens but the last does not."""
    return stop in tokenizer.decode(s.token_ids) and stop not in tokenizer.decode(s.token_ids[:-1])


def test_hf_stop_strings_end_a_response_with_the_token_that_completes_one(tiny_model, tiny_tokenizer):
    """Sampling.stop: the sample ends exactly at the token whose text completes the string (a greedy prefix of
    the free response, with its log-probs); a row whose text never holds it runs to the cap."""
    prompts = prompts_of(tiny_tokenizer)[:2]
    sampler = HFSampler(tiny_model, tiny_tokenizer)
    free = sampler.generate(prompts, Sampling(temperature=0, max_tokens=12))
    text = tiny_tokenizer.decode(free[0].token_ids)
    stop = text[len(text) // 2: len(text) // 2 + 3]  # spans a token boundary or sits inside one: either works
    assert stop not in tiny_tokenizer.decode(free[1].token_ids)
    out = sampler.generate(prompts, Sampling(temperature=0, max_tokens=12, stop=(stop,)))
    k = len(out[0].token_ids)
    assert ends_on_stop(tiny_tokenizer, out[0], stop) and out[0].finish_reason == "stop" and k < 12
    assert out[0].token_ids == free[0].token_ids[:k] and out[0].logprobs == pytest.approx(free[0].logprobs[:k])
    assert out[1].token_ids == free[1].token_ids and out[1].finish_reason == "length"


def test_hf_without_logprobs_samples_the_same_tokens(tiny_model, tiny_tokenizer):
    """Sampling(logprobs=False) (eval) keeps no logits: the same tokens for the same seed, log-probs 0.0."""
    prompts, sampler = prompts_of(tiny_tokenizer), HFSampler(tiny_model, tiny_tokenizer, batch_size=3)
    with_lp = sampler.generate(prompts, Sampling(temperature=0.7, top_p=0.9, max_tokens=12, seed=0))
    without = sampler.generate(prompts, Sampling(temperature=0.7, top_p=0.9, max_tokens=12, seed=0, logprobs=False))
    assert [s.token_ids for s in without] == [s.token_ids for s in with_lp]
    assert all(s.logprobs == [0.0] * len(s.token_ids) for s in without)
    assert any(lp != 0.0 for s in with_lp for lp in s.logprobs)


def test_hf_seed_reproduces_and_ignores_model_generation_config(tiny_model, tiny_tokenizer):
    model = copy.deepcopy(tiny_model)
    # Defaults that a checkpoint's generation_config.json may carry must not leak into sampling:
    # with top_k=1 or min_p=1 leaking, temperature-1 sampling would always return the argmax.
    model.generation_config.top_k = 1
    model.generation_config.min_p = 1.0
    model.generation_config.repetition_penalty = 2.0
    sampler = HFSampler(model, tiny_tokenizer)
    p = prompts_of(tiny_tokenizer)[:1]
    a = sampler.generate(p, Sampling(max_tokens=16, seed=3))[0]
    assert a.token_ids == sampler.generate(p, Sampling(max_tokens=16, seed=3))[0].token_ids
    assert a.token_ids != sampler.generate(p, Sampling(max_tokens=16, seed=4))[0].token_ids
    greedy = sampler.generate(p, Sampling(temperature=0, max_tokens=16))[0].token_ids
    assert a.token_ids != greedy
    assert (model.generation_config.top_k, model.generation_config.min_p) == (1, 1.0)  # restored after generate


def test_hf_load_weights_changes_and_restores_output(tiny_model, tiny_tokenizer):
    model = copy.deepcopy(tiny_model)
    sampler = HFSampler(model, tiny_tokenizer)
    p, greedy = prompts_of(tiny_tokenizer)[:2], Sampling(temperature=0, max_tokens=8)
    before = [s.token_ids for s in sampler.generate(p, greedy)]
    original = {n: t.clone() for n, t in model.named_parameters()}
    torch.manual_seed(0)
    sampler.load_weights((n, t + 0.5 * torch.randn_like(t)) for n, t in original.items())
    assert [s.token_ids for s in sampler.generate(p, greedy)] != before
    sampler.load_weights(original.items())
    assert [s.token_ids for s in sampler.generate(p, greedy)] == before
    with pytest.raises(KeyError, match="not_a_weight"):
        sampler.load_weights([("not_a_weight", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        sampler.load_weights([("model.norm.weight", torch.zeros(3))])


def test_append_layer_writes_in_place_and_survives_reorder():
    """The sampler's KV layer: keys / values equal the concatenation DynamicLayer keeps, each decode step
    writes into the same buffer (no copy of the cache), and a reorder (shared prefill -> rows) starts anew."""
    layer, ref = rollout._AppendLayer(room=3), transformers.cache_utils.DynamicLayer()
    torch.manual_seed(0)
    steps = [(torch.randn(2, 2, t, 4), torch.randn(2, 2, t, 4)) for t in (5, 1, 1, 1)]
    ptrs = []
    for k, v in steps:
        got, want = layer.update(k, v), ref.update(k, v)
        assert all(torch.equal(g, w) for g, w in zip(got, want))
        ptrs.append(got[0].data_ptr())
    assert ptrs[0] == ptrs[1] == ptrs[2] == ptrs[3]  # room=3: the three decode steps append in place
    k, v = torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4)
    assert all(torch.equal(g, w) for g, w in zip(layer.update(k, v), ref.update(k, v)))  # full: a new buffer
    rows = torch.tensor([1, 1, 0])
    layer.reorder_cache(rows), ref.reorder_cache(rows)
    k, v = torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)
    assert all(torch.equal(g, w) for g, w in zip(layer.update(k, v), ref.update(k, v)))
    assert layer.get_seq_length() == 10


def test_prepacked_linears_follow_the_weights(tiny_model, tiny_tokenizer):
    """prepack_linears: the same function as the plain model (fp32, 1e-5), the same state_dict, a weight
    changed in place (load_weights, an optimizer step) is repacked, and with grad on it is nn.Linear."""
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN: prepack_linears leaves the model as it is")
    plain, packed = copy.deepcopy(tiny_model), hardware.prepack_linears(copy.deepcopy(tiny_model))
    assert isinstance(packed.lm_head, hardware._PrepackedLinear)
    assert packed.state_dict().keys() == plain.state_dict().keys()
    ids = torch.tensor([prompts_of(tiny_tokenizer)[1]] * 3)
    with torch.no_grad():
        assert torch.allclose(packed(ids).logits, plain(ids).logits, atol=1e-5, rtol=0)
    assert packed.lm_head.packed_for is not None  # the packed kernel ran
    sampler, greedy = HFSampler(packed, tiny_tokenizer), Sampling(temperature=0, max_tokens=6)
    torch.manual_seed(1)
    new = {n: t + 0.5 * torch.randn_like(t) for n, t in plain.named_parameters()}
    sampler.load_weights(new.items())
    plain.load_state_dict(new, strict=False)
    with torch.no_grad():
        assert torch.allclose(packed(ids).logits, plain(ids).logits, atol=1e-5, rtol=0)
    assert [s.token_ids for s in sampler.generate(ids[:1].tolist(), greedy)] == \
        [s.token_ids for s in HFSampler(plain, tiny_tokenizer).generate(ids[:1].tolist(), greedy)]
    packed(ids).logits.sum().backward()
    assert packed.lm_head.weight.grad is not None and packed.model.layers[0].mlp.up_proj.weight.grad is not None


def test_prepacked_linear_without_the_kernel_is_a_plain_linear(tiny_model, monkeypatch):
    """A torch whose oneDNN cannot pack: the module becomes nn.Linear again and computes the same."""
    def no_kernel(*args):
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(torch.ops.mkldnn, "_reorder_linear_weight", no_kernel)
    lin = hardware.prepack_linears(copy.deepcopy(tiny_model)).lm_head
    x = torch.randn(3, lin.in_features)
    with torch.no_grad():
        assert torch.allclose(lin(x), x @ lin.weight.T, atol=1e-6) and type(lin) is torch.nn.Linear


def test_sleep_guards_generate(tiny_model, tiny_tokenizer):
    sampler = HFSampler(tiny_model, tiny_tokenizer)
    sampler.sleep()
    with pytest.raises(RuntimeError, match="wake"):
        sampler.generate(prompts_of(tiny_tokenizer)[:1], Sampling(max_tokens=2))
    sampler.wake()
    assert len(sampler.generate(prompts_of(tiny_tokenizer)[:1], Sampling(max_tokens=2))[0].token_ids) == 2


# --- ScriptedSampler ----------------------------------------------------------


def test_scripted_sampler_encodes_cuts_and_tracks_episodes(tiny_tokenizer):
    eot = chat.eot_id(tiny_tokenizer)
    s = ScriptedSampler(tiny_tokenizer, [["first a", "second a"], ["first b"]])
    p = tiny_tokenizer.encode("prompt")
    one = s.generate([p, p], Sampling(max_tokens=100))
    assert one[0].token_ids == tiny_tokenizer.encode("first a") + [eot] and one[0].finish_reason == "stop"
    assert one[1].token_ids == tiny_tokenizer.encode("first b") + [eot]
    assert one[0].logprobs == [0.0] * len(one[0].token_ids)
    # episode 0 continues: its prompt extends its own context, wherever it sits in the batch
    cont = p + one[0].token_ids + tiny_tokenizer.encode(" obs")
    two = s.generate([cont], Sampling(max_tokens=2))
    assert two[0].token_ids == tiny_tokenizer.encode("second a")[:2] and two[0].finish_reason == "length"
    with pytest.raises(ValueError, match="scripted responses"):
        s.generate([p + one[1].token_ids + [5]], Sampling())
    # a stop string cuts the script, and the episode's next prompt extends the cut response
    s = ScriptedSampler(tiny_tokenizer, [["keep this. not this", "then"]])
    cut = s.generate([p], Sampling(stop=("this.",)))[0]
    assert tiny_tokenizer.decode(cut.token_ids) == "keep this." and cut.finish_reason == "stop"
    assert s.generate([p + cut.token_ids + [5]], Sampling())[0].token_ids == tiny_tokenizer.encode("then") + [eot]
    with pytest.raises(ValueError, match="one list of response strings"):
        ScriptedSampler(tiny_tokenizer, ["not", "nested"])


def test_rollout_scripted_two_episodes_keep_their_scripts(data_tasks, tiny_tokenizer):
    task = data_tasks[0]  # didpo/add
    good = "```python\ndef add(a, b):\n    return a + b\n```\nrun tests"
    scripts = [["thinking", good, "finish"], [good, "finish"]]
    rec = Recorder(ScriptedSampler(tiny_tokenizer, scripts))
    [group] = rollout.rollout([task], rec, tiny_tokenizer, env.EnvConfig(max_turns=4), n=2, sampling=Sampling())
    assert [[t.response for t in tr.turns] for tr in group] == scripts
    assert [tr.reward for tr in group] == [1.0, 1.0] and not any(tr.truncated for tr in group)
    assert rec.calls == 3  # one generate per turn for all live episodes
    for tr in group:
        check_layout(tr, task, tiny_tokenizer, rec)


def test_rollout_limits_mark_truncation(data_tasks, tiny_tokenizer):
    task = data_tasks[0]
    long = "word " * 200
    [[cut]] = rollout.rollout([task], ScriptedSampler(tiny_tokenizer, [[long]]), tiny_tokenizer,
                              env.EnvConfig(max_response_tokens=16), n=1, sampling=Sampling())
    assert cut.truncated and cut.meta["truncated"] == "length" and cut.meta["finish_reasons"] == ["length"]
    assert len(cut.turns) == 1 and cut.turns[0].span[1] - cut.turns[0].span[0] == 16
    check_layout(cut, task, tiny_tokenizer)
    [[turns]] = rollout.rollout([task], ScriptedSampler(tiny_tokenizer, [["hm", "hm"]]), tiny_tokenizer,
                                env.EnvConfig(max_turns=2), n=1, sampling=Sampling())
    assert turns.meta["truncated"] == "max_turns" and len(turns.turns) == 2
    prompt = len(chat.prompt_ids(tiny_tokenizer, env.Episode(task).messages))
    [[total]] = rollout.rollout([task], ScriptedSampler(tiny_tokenizer, [["hm"] * 8]), tiny_tokenizer,
                                env.EnvConfig(max_total_tokens=prompt + 10), n=1, sampling=Sampling())
    assert total.meta["truncated"] == "total_tokens" and len(total.token_ids) <= prompt + 10
    check_layout(total, task, tiny_tokenizer)
    with pytest.raises(ValueError, match="max_total_tokens"):
        rollout.rollout([task], ScriptedSampler(tiny_tokenizer, [["x"]]), tiny_tokenizer,
                        env.EnvConfig(max_total_tokens=prompt), n=1, sampling=Sampling())


# --- rollout with real models -------------------------------------------------


def test_rollout_tiny_model_end_to_end(data_tasks, tiny_model, tiny_tokenizer, monkeypatch):
    """2 tasks x 2 episodes x 2 turns; the trainer's invariant: sampler logprobs == forward pass, 1e-4."""
    model = with_eot_rate(tiny_model, chat.eot_id(tiny_tokenizer), 0.2)
    rec = Recorder(HFSampler(model, tiny_tokenizer))
    grade_calls = []
    real = sandbox.grade_many
    monkeypatch.setattr(sandbox, "grade_many", lambda jobs, **kw: grade_calls.append(len(jobs)) or real(jobs, **kw))
    two = data_tasks[:2]
    groups = rollout.rollout(two, rec, tiny_tokenizer, env.EnvConfig(max_turns=2, max_response_tokens=32), n=2,
                             sampling=Sampling(temperature=1.0, seed=0))
    assert [[t.task_id for t in g] for g in groups] == [[two[0].id] * 2, [two[1].id] * 2]
    assert rec.calls == 2 and grade_calls[-1] == 4 and len(grade_calls) <= 3
    for task, group in zip(two, groups):
        for tr in group:
            assert len(tr.turns) == 2 and tr.meta["truncated"] == "max_turns"
            check_layout(tr, task, tiny_tokenizer, rec)
            ref = forward_logprobs(model, tr.token_ids)  # position j predicts token j + 1
            on = torch.tensor(tr.loss_mask[1:]).bool()
            assert torch.allclose(torch.tensor(tr.sampler_logprobs[1:])[on], ref[on], atol=1e-4, rtol=0)


@pytest.fixture(scope="module")
def smollm2():
    return models.load_model("smollm2-135m")


def test_rollout_smollm2_on_data_task(data_tasks, smollm2):
    model, tok = smollm2
    task = data_tasks[0]
    rec = Recorder(HFSampler(model, tok))
    [group] = rollout.rollout([task], rec, tok, env.EnvConfig(max_turns=2, max_response_tokens=32), n=2,
                              sampling=Sampling(temperature=0.8, seed=0))
    for tr in group:
        check_layout(tr, task, tok, rec)
        ref = forward_logprobs(model, tr.token_ids)
        on = torch.tensor(tr.loss_mask[1:]).bool()
        assert torch.allclose(torch.tensor(tr.sampler_logprobs[1:])[on], ref[on], atol=1e-4, rtol=0)


def test_replay_smollm2_tokens_are_exact(data_tasks, smollm2):
    """Multi-turn token layout with the real SmolLM2 chat template and non-ASCII text."""
    _, tok = smollm2
    task = data_tasks[0]
    responses = ["Let me write it — naïvely: ∑\n```python\ndef add(a, b):\n    return a + b\n```\nrun tests", "finish"]
    tr = rollout.replay(task, responses, tok)
    assert [t.response for t in tr.turns] == responses and tr.reward == 1.0
    check_layout(tr, task, tok)


# --- VLLMSampler around a fake engine ------------------------------------------


class FakeOutput:
    def __init__(self, token_ids, logprobs, finish_reason):
        self.token_ids, self.logprobs, self.finish_reason = token_ids, logprobs, finish_reason


class FakeLLM:
    """Mimics vllm.LLM's return shapes: token k = prompt[-1] + k + 1, logprob -0.1 * (k + 1)."""

    def __init__(self, **kwargs):
        self.kwargs, self.calls, self.rpcs, self.resets = kwargs, [], [], 0
        self.in_process = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"
        self.slept = self.woke = 0
        self.finish = None

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))
        outs = []
        for p, sp in zip(prompts, params):
            ids, lps = [], []
            for k in range(sp.max_tokens):
                t = p["prompt_token_ids"][-1] + k + 1
                ids.append(t)
                lps.append({t: types.SimpleNamespace(logprob=-0.1 * (k + 1))})
                if t in sp.stop_token_ids:
                    break
            reason = self.finish or ("stop" if ids[-1] in sp.stop_token_ids else "length")
            outs.append(types.SimpleNamespace(outputs=[FakeOutput(ids, lps, reason)]))
        return outs

    def collective_rpc(self, method, args=(), kwargs=None):
        # vLLM runs a callable on each worker as method(worker, *args); record what would reach it.
        [weights] = args
        self.rpcs.append((method.__name__, type(weights), [(n, t.sum().item()) for n, t in weights]))
        return [None]

    def reset_prefix_cache(self):
        self.resets += 1

    def sleep(self, level=1):
        self.slept = level

    def wake_up(self, tags=None):
        self.woke += 1


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = types.ModuleType("vllm")
    platform = types.SimpleNamespace(sleep=False, device_type="cpu")
    platform.is_sleep_mode_available = lambda: platform.sleep
    platform.is_cpu = lambda: platform.device_type == "cpu"
    mod.LLM = FakeLLM
    mod.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
    mod.platforms = types.SimpleNamespace(current_platform=platform)
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.platforms", mod.platforms)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)  # restored after the test
    return mod


def test_vllm_wrapper_generate(fake_vllm, tiny_model_dir, tiny_tokenizer):
    sampler = rollout.VLLMSampler(str(tiny_model_dir), tiny_tokenizer, dtype="bfloat16", seed=7)
    llm = sampler.llm
    assert llm.kwargs["model"] == str(tiny_model_dir) and llm.kwargs["enable_sleep_mode"] is False
    assert llm.in_process and "distributed_executor_backend" not in llm.kwargs
    assert llm.kwargs["enable_chunked_prefill"] is False  # CPU: a seeded request cannot survive a chunked prefill
    eot = tiny_tokenizer.eos_token_id
    prompts = [[1, 2, eot - 3], [4, 5, 6]]
    out = sampler.generate(prompts, Sampling(temperature=0.5, top_p=0.9, max_tokens=5, seed=1))
    sent, params = llm.calls[0]
    assert sent == [{"prompt_token_ids": p} for p in prompts]
    assert [(q.logprobs, q.stop_token_ids, q.temperature, q.top_p, q.max_tokens) for q in params] == \
        [(0, [eot], 0.5, 0.9, 5)] * 2
    # one seed per request: the n episodes of a group share their prompt and must not share samples
    assert len({q.seed for q in params}) == 2
    assert out[0] == Sample([eot - 2, eot - 1, eot], pytest.approx([-0.1, -0.2, -0.3]), "stop")
    assert out[1] == Sample([7, 8, 9, 10, 11], pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5]), "length")
    sampler.generate(prompts, Sampling(max_tokens=2))
    assert [q.seed for q in llm.calls[-1][1]] == [None, None]
    llm.finish = "abort"
    with pytest.raises(RuntimeError, match="abort"):
        sampler.generate(prompts, Sampling(max_tokens=2))


def test_vllm_wrapper_sleep_degrades_and_weights_stream(fake_vllm, tiny_model_dir, tiny_tokenizer, monkeypatch,
                                                        caplog):
    with caplog.at_level(logging.WARNING, logger="didpo.rollout"):
        cpu = rollout.VLLMSampler(str(tiny_model_dir), tiny_tokenizer)
    assert "sleep mode is not supported" in caplog.text
    cpu.sleep()
    assert cpu.llm.slept == 0 and cpu.asleep
    with pytest.raises(RuntimeError, match="wake"):
        cpu.generate([[1]], Sampling())
    cpu.wake()
    assert cpu.llm.woke == 0 and not cpu.asleep

    fake_vllm.platforms.current_platform.sleep, fake_vllm.platforms.current_platform.device_type = True, "cuda"
    monkeypatch.setenv("WORLD_SIZE", "2")  # as under torchrun
    gpu = rollout.VLLMSampler(str(tiny_model_dir), tiny_tokenizer, sleep_level=2)
    assert gpu.llm.kwargs["enable_sleep_mode"] is True
    assert gpu.llm.kwargs["distributed_executor_backend"] == "external_launcher"
    assert gpu.llm.kwargs["enable_chunked_prefill"] is None  # vLLM's default where generators rewind
    gpu.sleep()
    gpu.wake()
    assert (gpu.llm.slept, gpu.llm.woke) == (2, 1)

    weights = [("a.weight", torch.ones(2)), ("b.bias", torch.zeros(3))]
    gpu.load_weights(w for w in weights)  # a generator goes to the worker as is, consumed there
    # to _engine_load_weights in the worker: the reload, then tied layers (tests/test_vllm.py, for real)
    assert gpu.llm.rpcs == [("_engine_load_weights", types.GeneratorType, [("a.weight", 2.0), ("b.bias", 0.0)])]
    gpu.load_weights(weights)
    assert gpu.llm.rpcs[-1][2] == [("a.weight", 2.0), ("b.bias", 0.0)]
    assert gpu.llm.resets == 2  # the prefix cache is dropped after every update
