"""The learner -> sampler weight push on the CPU path (HFSampler), with the tiny tied Qwen2.

The HF sampler starts as a copy of the learner, so a run that never syncs still samples sensibly
and runs compared with each other cannot tell. Here the learner takes one real `train.learn` step
and `sync_weights` must make every sampler parameter, the tied head included, equal the learner's.
The vLLM side of the same boundary is tested in test_vllm.py (`make test-vllm`).
"""

import copy

import torch
from dist_learn import fixed_batch

import train


def test_sync_weights_copies_the_stepped_learner_into_the_hf_sampler(tiny_model, tiny_tokenizer, tiny_model_dir):
    rank, world, device = train.init()
    cfg = train.Config(micro_batch_size=3, lr=1e-2, entropy_coef=0.01)
    policy = train.build_learner(copy.deepcopy(tiny_model), cfg, device, world)
    sampler = train.make_sampler(cfg, str(tiny_model_dir), tiny_model, tiny_tokenizer, device)
    assert sampler.model.lm_head.weight is sampler.model.model.embed_tokens.weight  # tied, like SmolLM2
    before = {n: p.detach().clone() for n, p in sampler.model.named_parameters()}

    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr)
    trajs, advs = fixed_batch(len(tiny_tokenizer))
    train.learn(policy, opt, trajs, advs, cfg, device)
    learner = {n: t.clone() for n, t in train.full_named_parameters(policy)}
    assert learner.keys() == before.keys()

    train.sync_weights(policy, sampler)
    for n, p in sampler.model.named_parameters():
        assert not torch.equal(p, before[n]), f"{n} did not change: the sync left the sampler stale"
        assert torch.equal(p, learner[n]), f"{n} differs from the learner's after the sync"
    # The tie survives the copy: the head is the (new) embedding, not a stale tensor of its own.
    assert sampler.model.lm_head.weight is sampler.model.model.embed_tokens.weight
    ids = torch.tensor([trajs[0].token_ids])
    with torch.no_grad():
        want = policy(ids, torch.ones_like(ids))[0]
        logits = sampler.model(ids).logits[:, :-1].float()
    got = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
