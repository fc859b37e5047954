"""Session fixtures: a tiny ChatML tokenizer and a random-init tiny Qwen2 model.

Both are built once per test session in a temp dir, from files in the repo,
so tests that need a model run offline and in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = Path(__file__).parent / "corpus"

# The Qwen2.5 chat format (ChatML), with a default system message as Qwen's has.
CHATML = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tiny_tokenizer(vocab_size: int = 600) -> transformers.PreTrainedTokenizerFast:
    # Byte-level BPE, like Qwen2's: every string round-trips, and tokens can
    # split multi-byte characters (which credit.token_offsets must handle).
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    texts = [p.read_text() for p in sorted(CORPUS.iterdir())]
    tok.train_from_iterator(texts, trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    fast.chat_template = CHATML
    return fast


def build_tiny_model(vocab_size: int, seed: int = 0) -> transformers.Qwen2ForCausalLM:
    torch.manual_seed(seed)
    config = transformers.Qwen2Config(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
    )
    return transformers.Qwen2ForCausalLM(config).eval()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny-qwen2")
    tok = build_tiny_tokenizer()
    model = build_tiny_model(len(tok))
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    tok.save_pretrained(out)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir) -> transformers.PreTrainedTokenizerFast:
    return transformers.AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir) -> transformers.Qwen2ForCausalLM:
    return transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


def leave_torchrun() -> None:
    """End a torchrun test script's rank once its work is written: train.shutdown(), then exit without
    interpreter teardown, where gloo's threads can still abort a rank after the group is destroyed
    (a fresh-clone CI run: "terminate called without an active exception", exit -6)."""
    import os
    import sys

    import train

    train.shutdown()
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(0)


def pytest_sessionfinish(session, exitstatus):
    # Tests that call train.init() leave a one-process gloo group in this process; destroy it
    # before interpreter teardown, which it can otherwise abort (see train.shutdown).
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
