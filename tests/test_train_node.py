"""What an 8-GPU node needs from the trainer, checked with gloo on CPU (issue 14):
construction on the meta device with weights broadcast from rank 0, the update independent of which
rank rolled out what, collectives fed only tensors on the training device, a bf16 export, and
bench/gpu_smoke.py --cpu (the GPU smoke's loop and parity parts on tiny shapes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _run(args, **kw):
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, **kw)


def _torchrun(n: int, *args):
    return _run([PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n), *args])


def test_meta_device_load_gives_exactly_the_plain_weights_and_spares_other_ranks(tmp_path, tiny_tokenizer):
    # Big enough that a full copy shows in a process's peak RSS; stored in bf16 as the hub stores Qwen2.5.
    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=32000, hidden_size=1024, intermediate_size=2048,
                                      num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4,
                                      tie_word_embeddings=False)
    transformers.Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(tmp_path / "m")
    tiny_tokenizer.save_pretrained(tmp_path / "m")
    r = _torchrun(2, "tests/dist_load.py", str(tmp_path / "m"), str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / "r.json").read_text())
    for k in ("policy", "ref"):
        assert rep[f"{k}_names"] and rep[f"{k}_exact"] and rep[f"{k}_buffers"], rep
    assert rep["policy_dtype"] == "torch.float32" and rep["checkpointing"]
    print(f"peak host memory per rank (MiB): {rep['peak_mib']}, fp32 model {rep['model_mib']:.0f} MiB")
    # Rank 1 never holds the full model (rank 0 holds it once, in its stored bf16).
    assert rep["peak_mib"][1] < rep["peak_mib"][0] - 0.25 * rep["model_mib"], rep


def test_update_with_uneven_and_idle_ranks_matches_one_process(tmp_path):
    outs = {}
    for name, cmd in {"one": [PY, "tests/dist_learn.py"], "uneven": [PY, "-m", "torch.distributed.run",
                      "--standalone", "--nproc_per_node", "3", "tests/dist_learn.py"]}.items():
        out = tmp_path / f"{name}.pt"
        r = _run([*cmd, str(out), "1", *(["uneven"] if name == "uneven" else [])])
        assert r.returncode == 0, r.stderr[-3000:]
        outs[name] = torch.load(out)
    for n, p in outs["one"]["params"].items():
        torch.testing.assert_close(outs["uneven"]["params"][n], p, rtol=0, atol=2e-6, msg=n)
    for k, v in outs["one"]["metrics"].items():
        assert outs["uneven"]["metrics"][k] == pytest.approx(v, abs=1e-5), k


def test_spread_balances_tokens_and_keeps_every_trajectory():
    import train
    from env import Trajectory

    class FakeGather:  # the plan alone, as each of 3 ranks computes it from the same gathered list
        def __init__(self, parts):
            self.parts = parts

    lens = [50, 10, 40, 30, 20, 5]
    pairs = [(Trajectory(task_id=str(i), token_ids=[0] * n, loss_mask=[1] * n), i) for i, n in enumerate(lens)]
    parts = [pairs[:5], pairs[5:], []]
    shares = []
    orig = train.dist.all_gather_object
    try:
        train.dist.all_gather_object = lambda out, obj: out.__setitem__(slice(None), parts)
        for rank in range(3):
            shares.append(train.spread([], [], rank, 3))
    finally:
        train.dist.all_gather_object = orig
    ids = sorted(int(t.task_id) for trajs, _ in shares for t in trajs)
    assert ids == list(range(6))  # each trajectory exactly once
    loads = [sum(len(t.token_ids) for t in trajs) for trajs, _ in shares]
    assert max(loads) - min(loads) <= max(lens) and all(loads), loads
    for trajs, advs in shares:  # advantages travel with their trajectory
        assert [int(t.task_id) for t in trajs] == advs


def test_collectives_get_tensors_on_the_training_device(tmp_path, tiny_model_dir, monkeypatch):
    """NCCL serves only CUDA tensors: every tensor train.py (or trainer/) hands a collective must be made on
    the training device. Tensors they create without a device are tagged; a collective given one fails."""
    import torch.distributed as dist

    import train

    real_tensor, seen = torch.tensor, []

    def tensor(*a, **k):
        t = real_tensor(*a, **k)
        if "device" not in k and sys._getframe(1).f_globals.get("__name__").split(".")[0] in ("train", "trainer"):
            t._made_without_device = True
        return t

    def checked(real):
        def collective(t, *a, **k):
            seen.append(t.device)
            assert not getattr(t, "_made_without_device", False), "a collective got a tensor made without device="
            assert t.device.type == device.type
            return real(t, *a, **k)
        return collective

    _, _, device = train.init()
    monkeypatch.setattr(torch, "tensor", tensor)
    monkeypatch.setattr(dist, "all_reduce", checked(dist.all_reduce))
    monkeypatch.setattr(dist, "broadcast", checked(dist.broadcast))
    cfg = train.Config(model=str(tiny_model_dir), out=str(tmp_path / "run"), steps=1, tasks_per_step=1,
                       group_size=2, max_turns=1, max_response_tokens=8, save_groups=0, kl_coef=0.01)
    train.train(cfg)
    assert len(seen) >= 5  # learn's token counts and metrics, the step's reward sums, the weight broadcast
    assert (tmp_path / "run" / "metrics.jsonl").exists()


def test_export_in_bf16_with_the_config_saying_so(tmp_path, tiny_model, tiny_tokenizer):
    import copy

    from safetensors import safe_open

    import models
    import train
    from trainer import checkpoint, hardware

    _, world, device = train.init()
    policy = train.build_learner(copy.deepcopy(tiny_model), train.Config(), device, world)
    checkpoint.export(policy, tiny_tokenizer, tmp_path / "export", dtype=torch.bfloat16)
    conf = json.loads((tmp_path / "export" / "config.json").read_text())
    assert conf.get("dtype", conf.get("torch_dtype")) == "bfloat16"
    with safe_open(str(tmp_path / "export" / "model.safetensors"), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
    model, _ = models.load_model(str(tmp_path / "export"), dtype="auto")
    assert model.dtype == torch.bfloat16
    for n, p in train.full_named_parameters(policy):
        torch.testing.assert_close(dict(model.named_parameters())[n], p.to(torch.bfloat16), rtol=0, atol=0)
    # The 7B preset's run exports bf16; the CPU default keeps fp32.
    assert hardware.compute_bf16(train.resolve_config({"model": "Qwen2.5-7B-Coder"}), torch.device("cpu"))
    assert not hardware.compute_bf16(train.Config(), torch.device("cpu"))


def test_gpu_smoke_cpu_mode_passes():
    r = _run([PY, "bench/gpu_smoke.py", "--cpu"])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for line in ("PASS (a) loop", "PASS (a) export dtype", "PASS (b) log-probs", "PASS (b) entropy",
                 "PASS (b) gradient", "PASS gpu_smoke --cpu"):
        assert line in r.stdout, r.stdout[-3000:]
