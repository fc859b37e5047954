"""train.learn against what the update should do, not against another run of itself.

1. Direction: one step on hand-set advantages raises the log-probs of the A > 0 tokens and lowers
   those of the A < 0 tokens, through the real Policy, pad_batch's shift and masks, FSDP and the
   default dtype. Response tokens alternate between A = +1 and A = -1, and the masked prompt and
   observation tokens carry large advantages of the opposite sign, so a flipped sign, a one-token
   shift of the mask or the advantages, or a mask that lets other tokens in, each flips the result.
2. Golden: the parameters after learn() equal plain SGD on the textbook objective, computed on the
   unwrapped Hugging Face model straight from the trajectories:
       L = -(1 / N) sum_t mask_t A_t exp(lp_t - old_t),  lp_t = log p(token_t | tokens_<t)
   with old = a separate no-grad forward before any step (what learn did before the old-log-prob
   pass was skipped), for one step per batch and for two mini-batches / two epochs.

    .venv/bin/python -m pytest -q tests/test_learn_direction.py
"""

import copy

import torch

import train
from env import Trajectory

POS, NEG = range(100, 150), range(200, 250)  # token ids that get A > 0 / A < 0 in responses


def direction_batch(seed: int = 0):
    """Trajectories shaped like two-turn episodes: prompt, response, observation, response."""
    g = torch.Generator().manual_seed(seed)

    def draw(ids, n):
        return [ids[int(i)] for i in torch.randint(len(ids), (n,), generator=g)]

    trajs, advs = [], []
    for segments in [[(6, 0), (8, 1), (4, 0), (6, 1)], [(5, 0), (11, 1)], [(9, 0), (7, 1), (3, 0), (9, 1)]]:
        ids, mask, adv = [], [], []
        for n, sampled in segments:
            for i in range(n):
                good = (i + len(ids)) % 2 == 0  # alternate: a shift by one swaps good and bad
                ids += draw(POS if good else NEG, 1)
                mask.append(sampled)
                # Masked tokens get 4x the opposite advantage: garbage that the mask must hide.
                adv.append((1.0 if good else -1.0) * (1.0 if sampled else -4.0))
        trajs.append(Trajectory(task_id="t", token_ids=ids, loss_mask=mask))
        advs.append(torch.tensor(adv))
    return trajs, advs


def _learner(cfg):
    from conftest import build_tiny_model

    rank, world, device = train.init()
    lm = build_tiny_model(600)
    plain = copy.deepcopy(lm)
    policy = train.build_learner(lm, cfg, device, world)
    return policy, plain, device


def _token_logprobs(policy, trajs) -> list[torch.Tensor]:
    """Per trajectory, log p(token_t | tokens_<t) for t >= 1, through the Policy."""
    out = []
    with torch.no_grad():
        for t in trajs:
            ids = torch.tensor([t.token_ids])
            out.append(policy(ids, torch.ones_like(ids))[0][0].float())
    return out


def test_one_step_raises_positive_and_lowers_negative_tokens():
    cfg = train.Config(lr=0.05, grad_clip=1e9, entropy_coef=0.0, micro_batch_tokens=40)  # default dtype
    policy, _, device = _learner(cfg)
    trajs, advs = direction_batch()
    before = _token_logprobs(policy, trajs)
    opt = torch.optim.SGD(policy.parameters(), lr=cfg.lr)
    train.learn(policy, opt, trajs, advs, cfg, device)
    after = _token_logprobs(policy, trajs)
    up, down = [], []
    for t, a, b0, b1 in zip(trajs, advs, before, after):
        sampled = torch.tensor(t.loss_mask[1:], dtype=torch.bool)
        delta = (b1 - b0)[sampled]
        sign = a[1:][sampled]
        up.append(delta[sign > 0])
        down.append(delta[sign < 0])
    up, down = torch.cat(up), torch.cat(down)
    assert len(up) > 10 and len(down) > 10
    assert (up > 0).all(), up
    assert (down < 0).all(), down


def _golden_step(plain, trajs, advs, old, lr):
    """One SGD step of L on the plain model, in place; `old` as given (fixed, from before any step)."""
    n = sum(sum(t.loss_mask[1:]) for t in trajs)
    plain.zero_grad(set_to_none=True)
    for t, a, o in zip(trajs, advs, old):
        ids = torch.tensor([t.token_ids])
        lp = torch.log_softmax(plain(ids).logits[0, :-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]  # (T-1,)
        mask = torch.tensor(t.loss_mask[1:], dtype=torch.float)
        loss = -(mask * a[1:] * torch.exp(lp - o)).sum() / n
        loss.backward()
    with torch.no_grad():
        for p in plain.parameters():
            p -= lr * p.grad


def _old(plain, trajs):
    with torch.no_grad():
        return [torch.log_softmax(plain(torch.tensor([t.token_ids])).logits[0, :-1], -1)
                .gather(-1, torch.tensor(t.token_ids[1:])[:, None])[:, 0] for t in trajs]


def _assert_same(policy, plain):
    got = dict(train.full_named_parameters(policy))
    for name, p in plain.named_parameters():
        torch.testing.assert_close(got[name], p.detach(), rtol=0, atol=2e-6, msg=name)


def _check_golden(epochs, minis, count_steps=None):
    # Small lr keeps every ratio inside the clip range, where the PPO-clip loss is exactly L.
    cfg = train.Config(lr=0.02, grad_clip=1e9, entropy_coef=0.0, dtype="float32", micro_batch_tokens=40,
                       ppo_epochs=epochs, ppo_mini_batches=minis)
    policy, plain, device = _learner(cfg)
    trajs, advs = direction_batch()
    opt = torch.optim.SGD(policy.parameters(), lr=cfg.lr)
    steps = []
    opt.register_step_post_hook(lambda *_: steps.append(1))
    m = train.learn(policy, opt, trajs, advs, cfg, device)
    old = _old(plain, trajs)  # once, before any step
    cut = [len(trajs) * k // minis for k in range(minis + 1)]
    for _ in range(epochs):
        for k in range(minis):
            s = slice(cut[k], cut[k + 1])
            _golden_step(plain, trajs[s], advs[s], old[s], cfg.lr)
    assert len(steps) == epochs * minis
    _assert_same(policy, plain)
    return m


def test_one_step_per_batch_equals_the_golden_step():
    m = _check_golden(1, 1)
    assert m["clip_frac"] == 0.0 and abs(m["ratio_mean"] - 1.0) < 1e-6  # old = current: ratio 1


def test_two_mini_batches_and_two_epochs_step_against_the_old_log_probs():
    _check_golden(1, 2)
    m = _check_golden(2, 1)
    assert m["ratio_mean"] != 1.0  # the second epoch's ratio is against the first's old log-probs


def test_overlong_filter_trains_only_the_responses_that_ended():
    # DAPO's overlong filtering: a response cut at its token cap adds no loss and no token to the mean; the golden
    # step is the textbook one on the other trajectories alone.
    cfg = train.Config(lr=0.02, grad_clip=1e9, entropy_coef=0.0, dtype="float32", micro_batch_tokens=40,
                       overlong_filter=True)
    policy, plain, device = _learner(cfg)
    trajs, advs = direction_batch()
    trajs[1].meta["truncated"] = "length"
    trajs[2].meta["truncated"] = "max_turns"  # ended by the turn limit, not cut: it trains
    train.learn(policy, torch.optim.SGD(policy.parameters(), lr=cfg.lr), trajs, advs, cfg, device)
    kept = [trajs[0], trajs[2]]
    _golden_step(plain, kept, [advs[0], advs[2]], _old(plain, kept), cfg.lr)
    _assert_same(policy, plain)


def test_a_logged_entropy_holds_no_graph_and_a_bonus_still_moves_the_weights():
    """At entropy_coef 0 the entropy is only logged: learn asks the Policy for it without a graph (a graph would
    keep two (N, V) tensors a chunk through backward, its recompute never freed), the same values, the log-probs'
    gradients unchanged. At entropy_coef > 0 its gradient reaches the weights: they end elsewhere than at 0."""
    policy, _, _ = _learner(train.Config(dtype="float32"))
    trajs, advs = direction_batch()
    ids = torch.tensor([trajs[0].token_ids])
    out = []
    for entropy_grad in (True, False):
        policy.zero_grad(set_to_none=True)
        lp, ent = policy(ids, torch.ones_like(ids), entropy=True, entropy_grad=entropy_grad)
        lp.sum().backward()
        out.append((ent, {n: p.grad.full_tensor().clone() for n, p in policy.named_parameters()}))
    (ent_grad, grads), (ent_log, grads_log) = out
    assert ent_grad.requires_grad and not ent_log.requires_grad
    torch.testing.assert_close(ent_log, ent_grad.detach(), atol=0, rtol=0)
    for n, g in grads.items():
        torch.testing.assert_close(grads_log[n], g, atol=0, rtol=0, msg=n)

    after = []
    for coef in (0.0, 5.0):
        cfg = train.Config(lr=0.05, grad_clip=1e9, entropy_coef=coef, dtype="float32", micro_batch_tokens=40)
        policy, _, device = _learner(cfg)
        train.learn(policy, torch.optim.SGD(policy.parameters(), lr=cfg.lr), trajs, advs, cfg, device)
        after.append(torch.cat([p.full_tensor().flatten() for p in policy.parameters()]))
    assert (after[1] - after[0]).abs().max() > 1e-5
