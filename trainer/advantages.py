"""Advantage estimators: one scalar per episode, from the rewards of its group or batch.

- `grpo` (default): (r - mean of the group) / (std of the group + 1e-6). The std is the
  sample std (n - 1 in the denominator), as TRL's GRPOTrainer and verl compute it.
- `rloo`: r_i - mean of the *other* episodes of its group (leave-one-out baseline).
- `reinforce`: r - mean over every episode of the batch (groups are ignored).

A *zero-variance* group (all rewards equal, or a single episode) carries no learning signal
for the group estimators: with `drop` its episodes are left out (the caller counts their
samples as `zero_variance`), with `keep` they get advantage 0. For `reinforce` the check
applies to the whole batch, which is its baseline's "group".

Pure functions on plain lists; this module knows nothing of torch, tokens or engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from trainer.types import EpisodeSamples, Group

Algorithm = Literal["grpo", "rloo", "reinforce"]
ZeroVariancePolicy = Literal["drop", "keep"]
STD_EPS = 1e-6


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def sample_std(values: Sequence[float]) -> float:
    """Std with Bessel's correction; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    m = _mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def has_zero_variance(rewards: Sequence[float]) -> bool:
    return len(rewards) < 2 or max(rewards) == min(rewards)


def grpo_advantages(rewards: Sequence[float]) -> list[float]:
    m, s = _mean(rewards), sample_std(rewards)
    return [(r - m) / (s + STD_EPS) for r in rewards]


def rloo_advantages(rewards: Sequence[float]) -> list[float]:
    n = len(rewards)
    if n < 2:
        return [0.0] * n
    total = sum(rewards)
    return [r - (total - r) / (n - 1) for r in rewards]


def reinforce_advantages(rewards: Sequence[float]) -> list[float]:
    m = _mean(rewards)
    return [r - m for r in rewards]


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
) -> EpisodeAdvantages:
    """Score every episode of `groups` with `algorithm`, handling zero-variance groups."""
    out = EpisodeAdvantages()
    if algorithm == "reinforce":
        buckets = [[e for g in groups for e in g.episodes]]
        estimator = reinforce_advantages
    else:
        buckets = [list(g.episodes) for g in groups]
        estimator = grpo_advantages if algorithm == "grpo" else rloo_advantages
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
