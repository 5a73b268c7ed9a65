"""Advantage estimators on hand-computed rewards."""

from __future__ import annotations

import math

import pytest

from trainer.advantages import (
    compute_advantages,
    grpo_advantages,
    reinforce_advantages,
    rloo_advantages,
)
from trainer.types import EpisodeSamples, Group


def group(gid: str, *rewards: float) -> Group:
    return Group(gid, [EpisodeSamples(f"{gid}-{i}", r) for i, r in enumerate(rewards)])


def test_grpo_normalises_by_the_groups_mean_and_sample_std():
    std = math.sqrt(((0 - 0.5) ** 2 + (1 - 0.5) ** 2) / 1)
    assert grpo_advantages([0.0, 1.0]) == pytest.approx([-0.5 / std, 0.5 / std], rel=1e-5)


def test_rloo_subtracts_the_mean_of_the_other_episodes():
    assert rloo_advantages([1.0, 0.0, 0.0]) == pytest.approx([1.0, -0.5, -0.5])


def test_reinforce_subtracts_the_batch_mean_across_groups():
    scored = compute_advantages([group("a", 1.0, 1.0), group("b", 0.0, 2.0)], "reinforce")
    assert [s.advantage for s in scored.scored] == pytest.approx([0.0, 0.0, -1.0, 1.0])
    assert reinforce_advantages([3.0, 1.0]) == [1.0, -1.0]


def test_zero_variance_groups_are_dropped_or_kept_with_advantage_zero():
    groups = [group("flat", 1.0, 1.0, 1.0), group("single", 0.5), group("live", 0.0, 1.0)]
    dropped = compute_advantages(groups, "grpo", "drop")
    assert [e.episode_id for e in dropped.zero_variance] == [
        "flat-0",
        "flat-1",
        "flat-2",
        "single-0",
    ]
    assert [s.episode.episode_id for s in dropped.scored] == ["live-0", "live-1"]

    kept = compute_advantages(groups, "rloo", "keep")
    assert not kept.zero_variance
    assert [s.advantage for s in kept.scored] == pytest.approx([0, 0, 0, 0, -1.0, 1.0])
