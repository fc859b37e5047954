"""The PPO-clip policy loss of every algorithm here, on per-token advantages (didpo.compute_advantages).

    python -m pytest -q tests/test_didpo.py -k "policy_loss or kl_and_entropy or micro"   # by-hand values

policy_loss: PPO-clip with clip-higher (DAPO), an optional dual clip, the k3 KL to a frozen reference and an
entropy bonus, aggregated as a token mean over the global batch (or a mean of sequence token means), so that
micro-batches and ranks add up to the unsplit loss (train.learn).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LossConfig:
    clip_low: float = 0.2              # ε_low: ratio floor 1 − ε_low
    clip_high: float = 0.28            # ε_high: ratio ceiling 1 + ε_high (clip-higher, DAPO)
    dual_clip: float | None = 3.0      # c > 1 bounds the loss of A < 0 tokens at c·|A|; None turns it off
    kl_coef: float = 0.0               # β for the k3 KL to the reference; 0 needs no ref_logp
    entropy_coef: float = 0.0          # α: loss −= α·entropy
    agg: str = "token-mean"            # token-mean (global token count) | seq-mean-token-mean

    def __post_init__(self):
        if self.agg not in ("token-mean", "seq-mean-token-mean"):
            raise ValueError(f"LossConfig.agg={self.agg!r}; use token-mean or seq-mean-token-mean")
        if self.clip_low < 0 or self.clip_high < 0 or self.dual_clip is not None and self.dual_clip <= 1:
            raise ValueError("LossConfig needs clip_low, clip_high >= 0 and dual_clip > 1 or None")


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                cfg: LossConfig, ref_logp: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
                global_tokens: float | None = None, global_seqs: float | None = None
                ) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss on [B, T] tensors and its metrics; per response token, with ratio ρ = exp(logp − old_logp):
        ℓ = max(−Â·ρ, −Â·clip(ρ, 1 − ε_low, 1 + ε_high))        PPO-clip with clip-higher (DAPO)
        ℓ = min(ℓ, −c·Â) where Â < 0                             dual clip (optional)
          + β·(e^d − d − 1), d = ref_logp − logp                 k3 KL to a frozen reference (optional)
          − α·entropy                                            entropy bonus (optional)
    token-mean: Σ mask·ℓ / global_tokens (the response tokens of the whole global batch; default this call's), so
    micro-batches and ranks add up to the unsplit loss. seq-mean-token-mean: each sequence's token mean, summed,
    / global_seqs (default: this call's non-empty sequences). Values under mask == 0 never matter.
    """
    if cfg.kl_coef and ref_logp is None:
        raise ValueError("policy_loss: kl_coef > 0 needs ref_logp (log-probs of the reference model)")
    m = mask.bool()                                                              # [B, T]
    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    a = torch.where(m, adv.to(logp.dtype), zero)                                 # [B, T]
    log_ratio = torch.where(m, logp - old_logp, zero)                            # [B, T]
    ratio = torch.exp(log_ratio)                                                 # [B, T]
    pg, clip_hit, dual_hit = _clipped(a, ratio, m, cfg)                          # [B, T] each
    loss_tok, kl, ent = pg, None, None
    if ref_logp is not None:
        d = torch.where(m, ref_logp - logp, zero)                               # log(p_ref / p)
        kl = torch.exp(d) - d - 1.0                                              # k3, >= 0, unbiased
        if cfg.kl_coef:
            loss_tok = loss_tok + cfg.kl_coef * kl
    if entropy is not None:
        ent = torch.where(m, entropy, zero)
        if cfg.entropy_coef:
            loss_tok = loss_tok - cfg.entropy_coef * ent
    loss = _aggregate(torch.where(m, loss_tok, zero), m, cfg.agg, global_tokens, global_seqs)
    with torch.no_grad():
        n_local = float(m.to(logp.dtype).sum())
        n = max(n_local, 1.0)
        r = ratio[m] if m.any() else ratio.new_ones(1)
        metrics = {"loss": float(loss.detach()), "pg_loss": float(torch.where(m, pg, zero).sum() / n),
                   "clip_frac": float(clip_hit.sum() / n), "dual_clip_frac": float(dual_hit.sum() / n),
                   "ratio_mean": float(r.mean()), "ratio_min": float(r.min()), "ratio_max": float(r.max()),
                   "approx_kl_old": float(((ratio - 1) - log_ratio)[m].sum() / n),  # k3 of old vs new
                   "adv_mean": float(a.sum() / n), "tokens": n_local}
        if kl is not None:
            metrics["kl"] = float(kl[m].sum() / n)
        if ent is not None:
            metrics["entropy"] = float(ent.sum() / n)
    return loss, metrics


def _clipped(a: torch.Tensor, ratio: torch.Tensor, m: torch.Tensor, cfg: LossConfig):
    """ℓ = max(−Â·ρ, −Â·clip(ρ)), then min(ℓ, −c·Â) where Â < 0; with where each clip was hit."""
    pg1, pg2 = -a * ratio, -a * ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    pg = torch.maximum(pg1, pg2)                                                 # [B, T]
    clip_hit = (pg2 > pg1) & m
    dual_hit = torch.zeros_like(m)
    if cfg.dual_clip is not None:
        cap = -a * cfg.dual_clip
        dual_hit = (a < 0) & (pg > cap) & m
        pg = torch.where(a < 0, torch.minimum(pg, cap), pg)
    return pg, clip_hit, dual_hit


def _aggregate(loss_tok: torch.Tensor, m: torch.Tensor, agg: str, global_tokens: float | None,
               global_seqs: float | None) -> torch.Tensor:
    """token-mean or seq-mean-token-mean of the masked per-token loss (policy_loss's docstring)."""
    mf = m.to(loss_tok.dtype)
    if agg == "token-mean":
        denom = global_tokens if global_tokens is not None else mf.sum().clamp(min=1.0)
        return loss_tok.sum() / denom
    per_seq = mf.sum(-1)                                                         # [B]
    seq_loss = loss_tok.sum(-1) / per_seq.clamp(min=1.0)                         # [B]
    denom = global_seqs if global_seqs is not None else (per_seq > 0).sum().clamp(min=1)
    return seq_loss.sum() / denom
