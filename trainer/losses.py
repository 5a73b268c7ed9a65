"""Token-level policy-gradient losses: PPO-clip with importance ratios, plus an optional
k3 KL penalty to a reference policy.

Inputs are flat over the *trained* tokens (the caller has already applied the loss mask):
`logprobs_N` (current policy, with grad), `behaviour_logprobs_N` (from the engine that
sampled the tokens), `advantages_N` (each token carries its episode's advantage), and
optionally `reference_logprobs_N`.

    ratio      = exp(logp - behaviour_logp)
    pg_loss    = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)
    kl (k3)    = exp(ref_logp - logp) - (ref_logp - logp) - 1        (>= 0, unbiased)
    token_loss = pg_loss + kl_coef * kl

Aggregation is the **token mean** over all trained tokens of the whole batch (DAPO /
verl's `token-mean`): every token weighs the same, so long completions are not
down-weighted as with a per-sequence mean, and the loss of a batch split into micro-batches
is the sum of `sum(token_loss) / batch_tokens` over them — the caller passes the batch's
token count as `normalizer` so accumulated gradients equal the full-batch gradient.

Knows nothing of models, samples or engines: plain tensors in, a loss and diagnostics out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PPOLoss:
    """`loss` carries the gradient; the rest are detached means over the given tokens."""

    loss: torch.Tensor
    tokens: int
    clip_fraction: float  # share of tokens whose clipped term was chosen (no gradient)
    ratio_mean: float
    kl: float  # mean k3 estimate (0 when no reference was given)


def k3_kl(logprobs_N: torch.Tensor, reference_logprobs_N: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(policy || reference) (Schulman's approximation)."""
    log_ratio_N = reference_logprobs_N - logprobs_N
    return torch.exp(log_ratio_N) - log_ratio_N - 1.0


def ppo_clip_loss(
    logprobs_N: torch.Tensor,
    behaviour_logprobs_N: torch.Tensor,
    advantages_N: torch.Tensor,
    clip_eps: float,
    reference_logprobs_N: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    normalizer: float | None = None,
) -> PPOLoss:
    """PPO-clip loss summed over the tokens and divided by `normalizer` (default: their
    count). Logprobs are computed in float32 whatever the model's dtype."""
    logprobs_N = logprobs_N.float()
    behaviour_logprobs_N = behaviour_logprobs_N.float().detach()
    advantages_N = advantages_N.float().detach()
    tokens = logprobs_N.numel()
    denominator = float(normalizer if normalizer is not None else max(tokens, 1))

    ratio_N = torch.exp(logprobs_N - behaviour_logprobs_N)
    clipped_N = torch.clamp(ratio_N, 1.0 - clip_eps, 1.0 + clip_eps)
    token_loss_N = -torch.minimum(ratio_N * advantages_N, clipped_N * advantages_N)

    kl_mean = 0.0
    if reference_logprobs_N is not None:
        kl_N = k3_kl(logprobs_N, reference_logprobs_N.float().detach())
        if kl_coef > 0:
            token_loss_N = token_loss_N + kl_coef * kl_N
        kl_mean = float(kl_N.detach().mean()) if tokens else 0.0

    with torch.no_grad():
        ratio = ratio_N.detach()
        clipped = ((ratio > 1.0 + clip_eps) & (advantages_N > 0)) | (
            (ratio < 1.0 - clip_eps) & (advantages_N < 0)
        )
        clip_fraction = float(clipped.float().mean()) if tokens else 0.0
        ratio_mean = float(ratio.mean()) if tokens else 1.0

    return PPOLoss(
        loss=token_loss_N.sum() / denominator,
        tokens=tokens,
        clip_fraction=clip_fraction,
        ratio_mean=ratio_mean,
        kl=kl_mean,
    )
