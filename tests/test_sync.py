"""The sampler <-> learner boundary on the CPU path: after `train.sync_weights`, the sampler computes
with exactly the learner's current weights, every parameter of them (a tied head included).

The HF sampler starts as a copy of the learner, so any test that only compares runs would pass with a
no-op sync; this one steps the learner first and checks parameter by parameter.

    .venv/bin/python -m pytest -q tests/test_sync.py
"""

import torch
from test_learn_direction import _learner, direction_batch

import rollout
import train


def test_sync_after_a_step_gives_the_sampler_every_learner_weight(tiny_tokenizer):
    cfg = train.Config(lr=0.05, grad_clip=1e9, entropy_coef=0.0)
    policy, plain, device = _learner(cfg)
    sampler = train.make_sampler(cfg, "", plain, tiny_tokenizer, device)
    start = {n: t.clone() for n, t in sampler.model.state_dict().items()}
    trajs, advs = direction_batch()
    train.learn(policy, torch.optim.SGD(policy.parameters(), lr=cfg.lr), trajs, advs, cfg, device)

    train.sync_weights(policy, sampler)
    learner = dict(train.full_named_parameters(policy))
    state = sampler.model.state_dict()
    assert set(learner) <= set(state)
    for name, t in learner.items():
        assert torch.equal(state[name], t), f"{name}: the sampler holds a different tensor than the learner"
        assert not torch.equal(state[name], start[name]), f"{name}: unchanged by the step, so the check is void"
    # The tiny model ties its head: the sampler's head is the synced embedding, not a stale copy.
    assert sampler.model.config.tie_word_embeddings
    assert torch.equal(sampler.model.lm_head.weight, learner["model.embed_tokens.weight"])


def test_hf_sampler_rejects_unknown_or_misshapen_tensors(tiny_model, tiny_tokenizer):
    sampler = rollout.HFSampler(tiny_model, tiny_tokenizer)
    try:
        sampler.load_weights([("model.nope.weight", torch.zeros(1))])
    except KeyError as e:
        assert "model.nope.weight" in str(e)
    else:
        raise AssertionError("an unknown name must be refused")
    w = tiny_model.model.embed_tokens.weight
    try:
        sampler.load_weights([("model.embed_tokens.weight", torch.zeros(w.shape[0] + 1, w.shape[1]))])
    except ValueError as e:
        assert "shape" in str(e)
    else:
        raise AssertionError("a misshapen tensor must be refused")


def test_one_process_sampler_aliases_the_learners_weights(tiny_tokenizer):
    """World 1, HF sampler: after sync the sampler's parameters are the learner's storage (no second copy), so an
    update reaches the sampler; sleeping drops the packed copies, and generation is unchanged across sleep/wake."""
    cfg = train.Config(lr=0.05, grad_clip=1e9, entropy_coef=0.0)
    policy, plain, device = _learner(cfg)
    sampler = train.make_sampler(cfg, "", plain, tiny_tokenizer, device)
    train.sync_weights(policy, sampler)
    mine = dict(sampler.model.named_parameters())
    for name, p in policy.lm.named_parameters():
        assert mine[name].data_ptr() == p.to_local().data_ptr(), f"{name}: the sampler holds a copy"
    trajs, advs = direction_batch()
    train.learn(policy, torch.optim.SGD(policy.parameters(), lr=cfg.lr), trajs, advs, cfg, device)
    for name, t in train.full_named_parameters(policy):  # no sync in between
        assert torch.equal(mine[name], t), f"{name}: the step did not reach the sampler"

    greedy = rollout.Sampling(temperature=0, max_tokens=6)
    prompt = [tiny_tokenizer.encode("def f(x):")]
    first = sampler.generate(prompt, greedy)[0].token_ids
    packs = [m for m in sampler.model.modules() if hasattr(m, "unpack")]
    assert all(m.packed is not None for m in packs) or not torch.backends.mkldnn.is_available()
    sampler.sleep()
    assert all(m.packed is None for m in packs)
    sampler.wake()
    assert sampler.generate(prompt, greedy)[0].token_ids == first
