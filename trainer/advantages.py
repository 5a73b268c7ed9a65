"""Advantage estimators: one scalar per episode, from the rewards of its group or batch.

- `grpo` (default): (r - mean of the group) / (std of the group + 1e-6). The std is the
  sample std (n - 1 in the denominator), as TRL's GRPOTrainer and verl compute it. With
  `scale_rewards="none"` only the centring is kept: r - mean of the group (Dr. GRPO's
  advantage, Liu et al. 2025; TRL's `scale_rewards="none"`).
- `rloo`: r_i - mean of the *other* episodes of its group (leave-one-out baseline).
- `reinforce`: r - mean over every episode of the batch (groups are ignored).

A *zero-variance* group (all rewards equal, or a single episode) carries no learning signal
for the group estimators: with `drop` its episodes are left out (the caller counts their
samples as `zero_variance`), with `keep` they get advantage 0. For `reinforce` the check
applies to the whole batch, which is its baseline's "group".

Overflow-safe for any finite rewards: statistics are computed on the rewards divided by
their largest magnitude (so nothing squared or summed can leave the float range), and the
`rloo`/`reinforce` differences, which can truly exceed it (1e308 - -1e308), are clamped to
±`sys.float_info.max`. The gateway bounds rewards far below that (docs/api.md).

Pure functions on plain lists; this module knows nothing of torch, tokens or engines.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from trainer.types import EpisodeSamples, Group

Algorithm = Literal["grpo", "rloo", "reinforce"]
ZeroVariancePolicy = Literal["drop", "keep"]
RewardScaling = Literal["group", "none"]  # grpo only: divide by the group's std, or not
STD_EPS = 1e-6


FLOAT_MAX = sys.float_info.max


def _scaled(values: Sequence[float]) -> tuple[float, list[float]]:
    """(scale, values / scale) with every scaled value in [-1, 1]; scale 1 for all zeros."""
    scale = max((abs(v) for v in values), default=0.0) or 1.0
    return scale, [v / scale for v in values]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _clamp(value: float) -> float:
    return min(max(value, -FLOAT_MAX), FLOAT_MAX)


def _scaled_std(scaled: Sequence[float]) -> float:
    m = _mean(scaled)
    return math.sqrt(sum((v - m) ** 2 for v in scaled) / (len(scaled) - 1))


def sample_std(values: Sequence[float]) -> float:
    """Std with Bessel's correction; 0 for fewer than two values (inf only when the true
    std exceeds the float range)."""
    if len(values) < 2:
        return 0.0
    scale, scaled = _scaled(values)
    return scale * _scaled_std(scaled)


def has_zero_variance(rewards: Sequence[float]) -> bool:
    return len(rewards) < 2 or max(rewards) == min(rewards)


def grpo_advantages(rewards: Sequence[float]) -> list[float]:
    if len(rewards) < 2:
        return [0.0] * len(rewards)
    # (r - m) / (std + eps) == (x - m_x) / (std_x + eps / scale) with x = r / scale
    scale, scaled = _scaled(rewards)
    m, s = _mean(scaled), _scaled_std(scaled)
    return [(x - m) / (s + STD_EPS / scale) for x in scaled]


def centred_advantages(rewards: Sequence[float]) -> list[float]:
    """r - mean of the group: `grpo` without the division by the std (Dr. GRPO)."""
    if len(rewards) < 2:
        return [0.0] * len(rewards)
    total = sum(rewards)
    if math.isfinite(total):
        m = total / len(rewards)
    else:  # the sum left the float range: the mean of the scaled rewards cannot
        scale, scaled = _scaled(rewards)
        m = scale * _mean(scaled)
    m = min(max(m, min(rewards)), max(rewards))  # rounding never flips an episode's sign
    return [_clamp(r - m) for r in rewards]


def rloo_advantages(rewards: Sequence[float]) -> list[float]:
    n = len(rewards)
    if n < 2:
        return [0.0] * n
    scale, scaled = _scaled(rewards)
    total = sum(scaled)
    return [_clamp(scale * (x - (total - x) / (n - 1))) for x in scaled]


def reinforce_advantages(rewards: Sequence[float]) -> list[float]:
    scale, scaled = _scaled(rewards)
    m = _mean(scaled)
    return [_clamp(scale * (x - m)) for x in scaled]


@dataclass
class ScoredEpisode:
    episode: EpisodeSamples
    advantage: float


@dataclass
class EpisodeAdvantages:
    """Episodes that take part in the update, and those left out for zero variance."""

    scored: list[ScoredEpisode] = field(default_factory=list)
    zero_variance: list[EpisodeSamples] = field(default_factory=list)


def compute_advantages(
    groups: Sequence[Group],
    algorithm: Algorithm = "grpo",
    zero_variance: ZeroVariancePolicy = "drop",
    scale_rewards: RewardScaling = "group",
) -> EpisodeAdvantages:
    """Score every episode of `groups` with `algorithm`, handling zero-variance groups.
    `scale_rewards` applies to `grpo` only ("none": no division by the group's std)."""
    out = EpisodeAdvantages()
    if algorithm == "reinforce":
        buckets = [[e for g in groups for e in g.episodes]]
        estimator = reinforce_advantages
    else:
        buckets = [list(g.episodes) for g in groups]
        estimator = rloo_advantages
        if algorithm == "grpo":
            estimator = centred_advantages if scale_rewards == "none" else grpo_advantages
    for episodes in buckets:
        if not episodes:
            continue
        rewards = [e.reward for e in episodes]
        if has_zero_variance(rewards):
            if zero_variance == "drop":
                out.zero_variance.extend(episodes)
            else:
                out.scored.extend(ScoredEpisode(e, 0.0) for e in episodes)
            continue
        for e, a in zip(episodes, estimator(rewards), strict=True):
            out.scored.append(ScoredEpisode(e, a))
    return out
