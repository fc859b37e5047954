"""The trainer on CPU with the tiny model: invariances, resume, export, CLI errors."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _run(args, **kw):
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600, **kw)


def _learn(tmp_path, world: int, micro: int, tokens: int = 0, pack: bool = False) -> dict:
    out = tmp_path / f"w{world}_m{micro}_t{tokens}_p{int(pack)}.pt"
    args = ["tests/dist_learn.py", str(out), str(micro), str(tokens), *(["pack"] if pack else [])]
    if world == 1:
        cmd = [PY, *args]
    else:
        cmd = [PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(world), *args]
    r = _run(cmd)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return torch.load(out)


def test_update_invariant_to_world_size_and_micro_batches(tmp_path):
    from conftest import build_tiny_model

    before = dict(build_tiny_model(600).named_parameters())
    a = _learn(tmp_path, 1, 6)
    b = _learn(tmp_path, 1, 1)
    c = _learn(tmp_path, 2, 2)
    # Token budgets (lengths 12..37): 40 packs only 17+12; at 50 rank 0 (12, 22, 32) needs two
    # micro-batches and rank 1 (17, 27, 37) three, so rank 0 runs an empty one.
    d = _learn(tmp_path, 1, 1, tokens=40)
    e = _learn(tmp_path, 2, 1, tokens=50)
    # Padding-free: all six sequences in one row; and by a budget of real tokens (40: rank 0 packs
    # 22+12 after 32 alone, rank 1 runs 37, 27, 17 alone).
    f = _learn(tmp_path, 1, 6, pack=True)
    g = _learn(tmp_path, 2, 1, tokens=40, pack=True)
    changed = max((a["params"][n] - before[n]).abs().max().item() for n in before)
    assert changed > 1e-4  # the step really moved the parameters
    for other in (b, c, d, e, f, g):
        for n in a["params"]:
            torch.testing.assert_close(other["params"][n], a["params"][n], rtol=0, atol=2e-6)
        assert other["metrics"]["loss"] == pytest.approx(a["metrics"]["loss"], abs=1e-6)


def test_chunked_logprobs_match_full_logits(tiny_model, tiny_tokenizer):
    import copy

    import train

    rank, world, device = train.init()
    ids = torch.tensor([tiny_tokenizer.encode("def add(a, b):\n    return a + b\n" * 4)])
    full = torch.log_softmax(tiny_model(ids).logits[:, :-1], -1)  # (B, T-1, V)
    want = full.gather(-1, ids[:, 1:, None]).squeeze(-1)
    want_ent = -(full.exp() * full).sum(-1)
    cfg = train.Config(logprob_chunk=7, dtype="float32")
    policy = train.build_learner(copy.deepcopy(tiny_model), cfg, device, world)
    with torch.no_grad():
        lp, ent = policy(ids, torch.ones_like(ids), entropy=True)
    torch.testing.assert_close(lp, want, atol=1e-5, rtol=0)
    torch.testing.assert_close(ent, want_ent, atol=1e-5, rtol=0)


def _ragged(lens, vocab: int, seed: int = 0):
    """Right-padded (B, T) ids and attention mask of random sequences of the given lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lens), max(lens), dtype=torch.long)
    for b, n in enumerate(lens):
        ids[b, :n] = torch.randint(3, vocab, (n,), generator=g)
    return ids, (torch.arange(max(lens)) < torch.tensor(lens)[:, None]).long()


def test_packed_logprobs_equal_padded_and_each_sequence_alone(tiny_model):
    """Golden reference: each sequence run alone through the HF model with full logits. A packed
    row that let a sequence attend to its predecessor (position ids not restarting, no block-diagonal
    mask) or scored its first target from the previous sequence's last token fails here."""
    import train

    lens = [9, 2, 23, 14, 5]
    ids, attn = _ragged(lens, tiny_model.config.vocab_size)
    mask = attn[:, 1:].clone()
    mask[:, :3] = 0  # a prompt off the loss mask, as in pad_batch
    padded, packed = train.Policy(tiny_model, chunk=4), train.Policy(tiny_model, chunk=4, pack=True)
    with torch.no_grad():
        for m in (None, mask):
            lp, ent = packed(ids, attn, entropy=True, mask=m)
            want, want_ent = padded(ids, attn, entropy=True, mask=m)
            torch.testing.assert_close(lp, want, atol=2e-6, rtol=0)
            torch.testing.assert_close(ent, want_ent, atol=2e-6, rtol=0)
        lp, ent = packed(ids, attn, entropy=True)
        for b, n in enumerate(lens):
            full = torch.log_softmax(tiny_model(ids[b : b + 1, :n]).logits[0, :-1], -1)  # (n-1, V)
            torch.testing.assert_close(lp[b, : n - 1], full.gather(-1, ids[b, 1:n, None])[:, 0], atol=2e-6, rtol=0)
            torch.testing.assert_close(ent[b, : n - 1], -(full.exp() * full).sum(-1), atol=2e-6, rtol=0)
            assert not lp[b, n - 1 :].any()  # pad positions stay zero
        # Sequence 1 alone decides sequence 2's log-probs: changing every token of it changes none of them.
        other = ids.clone()
        other[1, :2] = (ids[1, :2] + 7) % tiny_model.config.vocab_size
        torch.testing.assert_close(packed(other, attn)[0][2:], lp[2:], atol=1e-6, rtol=0)


def test_packed_gradients_equal_padded(tiny_model):
    import copy

    import train

    ids, attn = _ragged([9, 2, 23, 14, 5], tiny_model.config.vocab_size, seed=1)
    w = torch.randn(ids.shape[0], ids.shape[1] - 1, generator=torch.Generator().manual_seed(2))
    grads = []
    for pack in (False, True):
        policy = train.Policy(copy.deepcopy(tiny_model), chunk=4, pack=pack)
        lp, ent = policy(ids, attn, entropy=True)
        ((lp + 0.1 * ent) * w).sum().backward()
        grads.append({n: p.grad for n, p in policy.named_parameters()})
    for n, g in grads[0].items():
        torch.testing.assert_close(grads[1][n], g, atol=1e-5, rtol=1e-5, msg=n)


def test_a_shared_prefix_runs_once_with_the_padded_batchs_logprobs_and_gradients(tiny_model):
    """trainer.prefix: rows that share a prompt run it once, in one tree-masked row. Log-probs, entropies
    and gradients equal the padded batch's (a mask letting a row see another's tokens, or a position
    id not continuing from the prefix, fails here), with a row that is the prompt alone and two equal
    rows; and the decoder really saw one row of P + sum(n - P) tokens."""
    import copy

    import train

    lens, P = [31, 20, 27, 25, 25], 20  # row 1 is the prompt alone, rows 3 and 4 are equal
    ids, attn = _ragged(lens, tiny_model.config.vocab_size, seed=3)
    ids[:, :P], ids[4] = ids[0, :P], ids[3]
    w = torch.randn(ids.shape[0], ids.shape[1] - 1, generator=torch.Generator().manual_seed(4))
    seen, out = [], []
    for share in (False, True):
        policy = train.Policy(copy.deepcopy(tiny_model), chunk=4, share=share)
        policy.lm.model.register_forward_pre_hook(lambda m, a, kw: seen.append(tuple(kw["input_ids"].shape)),
                                                  with_kwargs=True)
        lp, ent = policy(ids, attn, entropy=True)
        ((lp + 0.1 * ent) * w).sum().backward()
        out.append((lp.detach(), ent.detach(), {n: p.grad for n, p in policy.named_parameters()}))
    assert seen == [tuple(ids.shape), (1, P + sum(n - P for n in lens))]
    torch.testing.assert_close(out[1][0], out[0][0], atol=2e-6, rtol=0)
    torch.testing.assert_close(out[1][1], out[0][1], atol=2e-6, rtol=0)
    for n, g in out[0][2].items():
        torch.testing.assert_close(out[1][2][n], g, atol=1e-5, rtol=1e-5, msg=n)


def test_micro_batches_by_token_budget():
    import train
    from env import Trajectory

    trajs = [Trajectory(task_id="t", token_ids=[1] * n, loss_mask=[0] + [1] * (n - 1)) for n in (12, 37, 22, 17, 12)]
    advs = [torch.zeros(len(t.token_ids)) for t in trajs]
    cfg = train.Config(micro_batch_tokens=40, share_prefix=False)
    # Longest first; a part grows while (its sequences + 1) x its longest <= 40:
    # 2 x 37 and 2 x 22 do not fit, 2 x 17 = 34 does, 3 x 17 = 51 does not.
    got = [tuple(int(n) for n in b[1].sum(1)) for b in train.micro_batches(trajs, advs, cfg, "cpu")]
    assert got == [(37,), (22,), (17, 12), (12,)]
    one = train.micro_batches(trajs, advs, train.Config(micro_batch_tokens=10), "cpu")  # each alone, never dropped
    assert sorted(int(b[1].sum()) for b in one) == [12, 12, 17, 22, 37]
    by_count = train.micro_batches(trajs, advs, train.Config(micro_batch_tokens=0, micro_batch_size=2), "cpu")
    assert [tuple(int(n) for n in b[1].sum(1)) for b in by_count] == [(12, 37), (22, 17), (12,)]
    # Packed, the budget counts real tokens: 22 + 17 = 39 fits 40, 12 + 12 = 24 fits, 17 + 12 + 12 does not.
    packed = train.micro_batches(trajs, advs, train.Config(micro_batch_tokens=40, pack="on"), "cpu")
    assert [tuple(int(n) for n in b[1].sum(1)) for b in packed] == [(37,), (22, 17), (12, 12)]
    # Sharing prefixes, a group stays together and costs its tree row: group a (prompt 30, rows 40, 36,
    # 33) is 30 + 10 + 6 + 3 = 49 <= 50, its rows with b's share nothing (4 x 40 padded), b is 30 + 8 + 5.
    grouped = [Trajectory(task_id=t, token_ids=[p] * 30 + [100 + i] * (n - 30), loss_mask=[0] * 30 + [1] * (n - 30))
             for i, (t, p, n) in enumerate([("b", 6, 35), ("a", 5, 33), ("a", 5, 40), ("b", 6, 38), ("a", 5, 36)])]
    zeros = [torch.zeros(len(t.token_ids)) for t in grouped]
    got = [tuple(int(n) for n in b[1].sum(1)) for b in train.micro_batches(grouped, zeros, train.Config(
        micro_batch_tokens=50, share_prefix=True), "cpu")]
    assert got == [(40, 36, 33), (38, 35)]
    got = [tuple(int(n) for n in b[1].sum(1)) for b in train.micro_batches(grouped, zeros, train.Config(
        micro_batch_tokens=50, share_prefix=False), "cpu")]
    assert got == [(40,), (38,), (36,), (35,), (33,)]


def test_cpu_bf16_autocast_keeps_fp32_weights_and_close_logprobs(tiny_model, tiny_tokenizer):
    import copy

    import train

    rank, world, device = train.init()
    policy = train.build_learner(copy.deepcopy(tiny_model), train.Config(dtype="float32"), device, world)
    ids = torch.tensor([tiny_tokenizer.encode("def add(a, b):\n    return a + b\n" * 4)])
    fp32, _ = policy(ids, torch.ones_like(ids))
    policy.autocast = True  # what dtype auto picks on a CPU with fast bf16
    lp, _ = policy(ids, torch.ones_like(ids))
    lp.sum().backward()
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in policy.parameters())
    diff = (lp - fp32).abs()
    assert 0 < diff.max() < 0.05 and diff.mean() < 0.01  # bf16 really ran, and stayed close


def _train(tmp_path, tiny_model_dir, out, *extra, env=None):
    # fp32 pinned: under CPU bf16 autocast two fresh runs once differed at step 1 in sampler_kl's 4th digit (both had
    # decided bf16; seen under load, cause not pinned down), and this test compares runs bit for bit
    cmd = [PY, "train.py", "--model", str(tiny_model_dir), "--out", str(out), "--tasks", "data/tasks.jsonl",
           "--dtype", "float32", "--tasks-per-step", "2", "--group-size", "2", "--max-turns", "2",
           "--max-response-tokens", "12", "--lr", "1e-3", "--save-every", "1", "--save-groups", "1", *extra]
    return _run(cmd, env=env)


def _metrics(run: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if "time" not in k} for r in rows]  # timings differ run to run


def test_resume_is_exact_and_survives_a_kill(tmp_path, tiny_model_dir):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    r = _train(tmp_path, tiny_model_dir, straight, "--steps", "4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (straight / "groups" / "step_1.jsonl").exists() and (straight / "config.json").exists()

    r = _train(tmp_path, tiny_model_dir, resumed, "--steps", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    # A kill during the next checkpoint write leaves a partial temp dir: it must be ignored.
    partial = resumed / "checkpoints" / ".step_3.tmp"
    shutil.copytree(resumed / "checkpoints" / "step_2", partial)
    (partial / "COMPLETE").unlink()
    (partial / "__0_0.distcp").write_bytes(b"garbage")
    r = _train(tmp_path, tiny_model_dir, resumed, "--steps", "4", "--resume", "auto")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ignoring incomplete checkpoint" in r.stderr
    assert _metrics(resumed) == _metrics(straight)
    import models

    a, _ = models.load_model(str(straight / "export"))
    b, _ = models.load_model(str(resumed / "export"))
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=n)


def test_a_run_decides_cpu_bf16_once_and_a_resume_reads_it_back(tmp_path, monkeypatch):
    # The probe times matmuls: a resumed run under another load must not decide differently.
    import train
    from trainer import hardware

    train.init()
    monkeypatch.setattr(hardware, "_fast", hardware._fast)  # restored after the test: others probe as before
    probes = []
    monkeypatch.setattr(hardware, "_probe", lambda: probes.append(1) or True)
    hardware.settle_cpu_bf16(tmp_path, resume=False)
    assert hardware.cpu_bf16_is_fast() is True and probes == [1]
    for decided in (False, True):  # whatever the probe would say now, the saved decision wins
        (tmp_path / "cpu_bf16.json").write_text(json.dumps({"fast": decided}))
        hardware.settle_cpu_bf16(tmp_path, resume=True)
        assert hardware.cpu_bf16_is_fast() is decided and probes == [1]


def test_sigkill_mid_run_then_resume(tmp_path, tiny_model_dir):
    import signal
    import time

    run = tmp_path / "killed"
    cmd = [PY, "train.py", "--model", str(tiny_model_dir), "--out", str(run), "--tasks-per-step", "1",
           "--group-size", "2", "--max-turns", "1", "--max-response-tokens", "16", "--save-every", "1",
           "--steps", "50"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not (run / "checkpoints" / "step_2").exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert (run / "checkpoints" / "step_2" / "COMPLETE").exists()
    r = _run(cmd[:-1] + ["3", "--resume", "auto"])
    assert r.returncode == 0, r.stderr[-3000:]
    steps = [m["step"] for m in _metrics(run)]
    assert steps[-1] == 3 and "resumed from" in r.stderr


@pytest.mark.parametrize("args, needle", [
    (["--lrr", "1e-6"], "--lr"),
    (["--model", "no-such-model"], "unknown model"),
    (["--algo", "ppo"], "--algo"),
    (["--config", "missing.yaml"], "does not exist"),
    (["--ppo-epochs", "0"], "--ppo-epochs"),
    (["--micro-batch-tokens", "-1"], "--micro-batch-tokens"),
    (["--keep-last", "-1"], "--keep-last"),
    (["--tasks", "leetcode"], "unknown source"),
    (["--tasks", "nowhere.jsonl"], "no such file"),
    (["--holdout", "apps:level"], "not key=value"),
])
def test_cli_rejects_bad_input_in_one_line(args, needle):
    r = _run([PY, "train.py", *args])
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_a_new_run_never_overwrites_an_old_one(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    r = _run([PY, "train.py", "--out", str(run)])
    assert r.returncode == 2 and "already holds a run" in r.stderr and "--resume auto" in r.stderr
    assert (run / "metrics.jsonl").read_text() == '{"step": 1}\n'


def test_help_gives_each_flag_its_meaning_and_default_and_dual_clip_turns_off():
    import cli
    import train

    r = _run([PY, "train.py", "--help"])
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "--dual-clip X|none c > 1 bounds the loss" in text and "(default: 3.0)" in text
    assert "--compile, --no-compile torch.compile each decoder layer" in text
    assert "--activation-checkpointing TEXT off | full (recompute each decoder layer)" in text
    assert text.count("(default: ") == len(train.dataclasses.fields(train.Config))
    cfg = train.resolve_config(cli.parse(["--dual-clip", "none"], train.Config))
    assert cfg.dual_clip is None and train.loss_config(cfg).dual_clip is None
    assert train.resolve_config({}).dual_clip == 3.0
    with pytest.raises(ValueError, match="--dual-clip 0.5 must be > 1"):
        train.resolve_config(cli.parse(["--dual-clip", "0.5"], train.Config))


def test_cli_rejects_bad_config_file(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("lr: [unclosed\n")
    r = _run([PY, "train.py", "--config", str(bad)])
    assert r.returncode == 2 and "does not parse" in r.stderr and "Traceback" not in r.stderr
    typo = tmp_path / "t.toml"
    typo.write_text("leraning_rate = 1.0\n")
    r = _run([PY, "train.py", "--config", str(typo)])
    assert r.returncode == 2 and "unknown field" in r.stderr


def test_embedded_default_one_step(tmp_path):
    """`python train.py` with the embedded default, one step, end to end."""
    # The embedded model and data, one step, sized down so that CI stays fast.
    # --keep-last 0: no checkpoint (1.6 GB of weights and Adam moments; CI machines have run out of disk).
    r = _run([PY, "train.py", "--steps", "1", "--out", str(tmp_path / "demo"), "--group-size", "2",
              "--max-turns", "1", "--max-response-tokens", "64", "--keep-last", "0"])
    assert r.returncode == 0, r.stderr[-3000:]
    m = _metrics(tmp_path / "demo")
    assert len(m) == 1 and all(v == v for v in m[0].values() if isinstance(v, float))  # finite, no NaN
    assert (tmp_path / "demo" / "export" / "model.safetensors").exists()
    assert not list((tmp_path / "demo").glob("checkpoints/*"))


def test_export_round_trip_gives_the_learners_log_probs(tmp_path, tiny_model, tiny_tokenizer):
    import copy

    import models
    import train
    from trainer import checkpoint

    rank, world, device = train.init()
    policy = train.build_learner(copy.deepcopy(tiny_model), train.Config(dtype="float32"), device, world)
    with torch.no_grad():  # move the weights off the fixture's, so the export has something to carry
        for p in policy.parameters():
            p.add_(0.01 * torch.randn_like(p))
    checkpoint.export(policy, tiny_tokenizer, tmp_path / "export")
    model, tok = models.load_model(str(tmp_path / "export"))
    ids = torch.tensor([tiny_tokenizer.encode("def add(a, b):\n    return a + b\n")])
    with torch.no_grad():
        want = policy(ids, torch.ones_like(ids))[0]
        got = torch.log_softmax(model(ids).logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    assert tok.chat_template == tiny_tokenizer.chat_template


def _report_a_full_disk(mp) -> None:
    """checkpoint's shutil.disk_usage answers 100 kB free, wherever it is asked (mp: a monkeypatch)."""
    from collections import namedtuple

    from trainer import checkpoint

    full = namedtuple("Usage", "total used free")(10**9, 10**9, 10**5)
    mp.setattr(checkpoint.shutil, "disk_usage", lambda p: full)


def _learner_with_adam_state(tiny_model):
    import copy

    import train

    _, world, device = train.init()
    policy = train.build_learner(copy.deepcopy(tiny_model), train.Config(dtype="float32"), device, world)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    ids = torch.tensor([[1, 2, 3, 4]])
    policy(ids, torch.ones_like(ids))[0].sum().backward()
    opt.step()
    return policy, opt


def test_a_checkpoint_that_cannot_be_written_leaves_the_last_one_intact(tmp_path, tiny_model, monkeypatch):
    """Too little free disk: refused before writing, in one line naming the sizes and --keep-last 0.
    A write that fails anyway (here a real one: the file size limit, EFBIG, as a full disk gives ENOSPC;
    torch reports either as 'unexpected pos' from its zip writer) removes its partial directory."""
    import resource
    import signal

    from trainer import checkpoint

    policy, opt = _learner_with_adam_state(tiny_model)
    run = tmp_path / "run"
    checkpoint.save(run, policy, opt, 1, 7, keep_last=2)
    want = {k: v.full_tensor().clone() for k, v in policy.state_dict().items()}

    with monkeypatch.context() as mp:
        _report_a_full_disk(mp)
        with pytest.raises(checkpoint.DiskFull, match=r"checkpoint step_2 needs .* GB .* 0.00 GB free.*--keep-last 0"):
            checkpoint.save(run, policy, opt, 2, 8, keep_last=2)
        with pytest.raises(checkpoint.DiskFull, match=r"the export .* needs .*--export DIR"):
            checkpoint.export(policy, None, tmp_path / "export")

    limits, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, limits[1]))  # 64 KiB: the model's shard is larger
    try:
        with pytest.raises(RuntimeError, match="step_2 failed while writing .* earlier checkpoints are intact"):
            checkpoint.save(run, policy, opt, 2, 8, keep_last=2)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1"]

    with torch.no_grad():
        for p in policy.parameters():
            p.zero_()
    assert checkpoint.load(run / "checkpoints" / "step_1", policy, opt) == (1, 7)
    for k, v in policy.state_dict().items():
        torch.testing.assert_close(v.full_tensor(), want[k], rtol=0, atol=0, msg=k)


def test_a_full_disk_ends_the_run_in_one_line(tmp_path, tiny_model_dir, monkeypatch):
    import train

    _report_a_full_disk(monkeypatch)
    with pytest.raises(SystemExit) as e:
        train.main(["--model", str(tiny_model_dir), "--out", str(tmp_path / "run"), "--dtype", "float32",
                    "--steps", "1", "--tasks-per-step", "1", "--group-size", "2", "--max-response-tokens", "8",
                    "--save-groups", "0"])
    assert str(e.value.code).startswith("error: checkpoint step_1 needs") and "\n" not in str(e.value.code)
    assert not (tmp_path / "run" / "checkpoints" / ".step_1.tmp").exists()


def test_ranks_sample_apart_and_a_resumed_step_samples_the_same(tiny_model, tiny_tokenizer):
    """train seeds each rank's rollout from (seed, step, rank): two ranks given the same prompts (their task
    windows wrap around a small task file) draw different samples; the same rank and step draws the same."""
    import rollout
    import train

    seeds = [train.rollout_seed(3, step, rank) for step in range(200) for rank in range(8)]
    assert len(set(seeds)) == len(seeds)
    sampler = rollout.HFSampler(tiny_model, tiny_tokenizer)
    prompt = [tiny_tokenizer("def add(a, b):")["input_ids"]] * 4
    sampling = rollout.Sampling(temperature=1.0, max_tokens=12)

    def draw(rank, step=5):
        torch.manual_seed(train.rollout_seed(0, step, rank))
        return [s.token_ids for s in sampler.generate(prompt, sampling)]

    assert draw(0) != draw(1)
    assert draw(1) == draw(1)


@pytest.mark.parametrize("overrides,probes", [({}, 1), ({"verdict": False}, 0), ({"algo": "grpo"}, 0),
                                              ({"algo": "gigpo"}, 0), ({"paper": True}, 0)],
                         ids=["default", "no-verdict", "grpo", "gigpo", "paper"])
def test_the_behaviour_probe_runs_only_where_the_verdict_reads_it(overrides, probes, monkeypatch, tiny_tokenizer):
    """Sandbox runs of one scripted turn through the real rollout loop under train's env config: the grade,
    and the behaviour probe only for didpo with its verdict."""
    import dataclasses

    import rollout
    import sandbox
    import tasks
    import train
    from protocol import behaviour

    runs, real = [], sandbox.execute

    def counted(files, argv, *a, **kw):
        runs.append(argv)
        return real(files, argv, *a, **kw)

    monkeypatch.setattr(sandbox, "execute", counted)
    env_cfg = dataclasses.replace(train.env_config(train.resolve_config(overrides)), max_turns=1)
    task = tasks.load("data/tasks.jsonl")[0]  # didpo/add
    sampler = rollout.ScriptedSampler(tiny_tokenizer, [["```python\ndef add(a, b):\n    return a + b\n```"]])
    group = rollout.rollout([task], sampler, tiny_tokenizer, env_cfg, n=1, sampling=rollout.Sampling(max_tokens=64))
    assert group[0][0].turns[0].public and all(group[0][0].turns[0].public.values())  # graded: the tests ran
    assert sum(behaviour.PROBE in argv for argv in runs) == probes
    assert (group[0][0].turns[0].behaviour is not None) == bool(probes)


def test_config_stop_ends_each_training_response_at_its_first_closed_fence(monkeypatch, tiny_tokenizer):
    """Config.stop reaches the training rollout: "\\n```\\n" ends a response at its first closed fence; the edit
    in it is applied and graded, and the prose the model wrote after it is never a training token."""
    import rollout
    import tasks
    import train

    monkeypatch.setattr(train.dist, "get_rank", lambda: 0)
    cfg = train.resolve_config(dict(stop=["\n```\n"], group_size=2))
    edit = "```python\ndef add(a, b):\n    return a + b\n```\n"
    sampler = rollout.ScriptedSampler(tiny_tokenizer, [[edit + "It adds.\n```python\n1/0\n```"], ["prose"]])
    task = tasks.load("data/tasks.jsonl")[0]  # didpo/add
    (group,), _ = train.rollout_step([task], sampler, tiny_tokenizer, cfg, 0, 1, train.adv_config(cfg), {})
    assert [t.turns[0].response for t in group] == [edit, "prose"] and [t.reward for t in group] == [1.0, 0.0]
    assert [t.meta["finish_reasons"] for t in group] == [["stop"], ["stop"]]
