"""Advantage estimators on hand-computed rewards."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from trainer.advantages import (
    centred_advantages,
    compute_advantages,
    grpo_advantages,
    reinforce_advantages,
    rloo_advantages,
    sample_std,
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


# -- scale_rewards: grpo with ("group") or without ("none") the division by the std ---------


def test_grpo_without_std_scaling_is_exactly_the_reward_minus_the_group_mean():
    groups = [group("a", 0.0, 1.0, 1.0, 0.0, 1.0), group("b", 0.3, 0.7, 0.1)]
    scored = compute_advantages(groups, "grpo", scale_rewards="none")
    expected = [r - sum(g) / len(g) for g in ([0.0, 1.0, 1.0, 0.0, 1.0], [0.3, 0.7, 0.1])
                for r in g]  # fmt: skip
    assert [s.advantage for s in scored.scored] == expected
    assert centred_advantages([3.0, 1.0]) == [1.0, -1.0]


def test_grpo_with_group_scaling_is_the_default_and_unchanged():
    groups = [group("a", 0.0, 1.0, 1.0), group("b", 0.3, 0.7, 0.1, 0.9)]
    default = [s.advantage for s in compute_advantages(groups, "grpo").scored]
    scaled = [s.advantage for s in compute_advantages(groups, "grpo", scale_rewards="group").scored]
    assert (
        scaled
        == default
        == grpo_advantages([0.0, 1.0, 1.0]) + grpo_advantages([0.3, 0.7, 0.1, 0.9])
    )
    unscaled = compute_advantages(groups, "grpo", scale_rewards="none").scored
    assert [s.advantage for s in unscaled] != default


@pytest.mark.parametrize("algorithm", ["rloo", "reinforce"])
def test_scale_rewards_has_no_effect_on_rloo_and_reinforce(algorithm):
    groups = [group("a", 0.0, 1.0, 1.0), group("b", 0.3, 0.7, 0.1, 0.9)]
    runs = [
        compute_advantages(groups, algorithm, scale_rewards=s).scored for s in ("group", "none")
    ]
    assert [s.advantage for s in runs[0]] == [s.advantage for s in runs[1]]


@pytest.mark.parametrize("scale_rewards", ["group", "none"])
def test_zero_variance_groups_are_handled_alike_with_or_without_std_scaling(scale_rewards):
    groups = [group("flat", 1.0, 1.0, 1.0), group("single", 0.5), group("live", 0.0, 1.0)]
    dropped = compute_advantages(groups, "grpo", "drop", scale_rewards)
    assert [e.episode_id for e in dropped.zero_variance] == [
        "flat-0",
        "flat-1",
        "flat-2",
        "single-0",
    ]
    assert [s.episode.episode_id for s in dropped.scored] == ["live-0", "live-1"]
    kept = compute_advantages(groups, "grpo", "keep", scale_rewards)
    assert not kept.zero_variance
    assert [s.advantage for s in kept.scored][:4] == [0.0, 0.0, 0.0, 0.0]
    live = [s.advantage for s in kept.scored][4:]
    assert live == ([-0.5, 0.5] if scale_rewards == "none" else grpo_advantages([0.0, 1.0]))


# -- overflow safety (issue 14, F3) ---------------------------------------------------------

FINITE_REWARDS = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([1e308, -1e308, 1.7e308, -1.7e308, 1e160, 0.0, 5e-324]),
    ),
    min_size=2,
    max_size=16,
)


def test_a_group_of_rewards_1e160_and_0_gets_finite_advantages_of_opposite_signs():
    for algorithm, scaling in (("grpo", "group"), ("grpo", "none"), ("rloo", "group"),
                               ("reinforce", "group")):  # fmt: skip
        scored = compute_advantages([group("g", 1e160, 0.0)], algorithm, scale_rewards=scaling)
        high, low = (s.advantage for s in scored.scored)
        assert math.isfinite(high) and math.isfinite(low)
        assert high > 0 > low, algorithm
    assert grpo_advantages([1e160, 0.0]) == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2)])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    rewards=FINITE_REWARDS,
    algorithm=st.sampled_from(["grpo", "rloo", "reinforce"]),
    scale_rewards=st.sampled_from(["group", "none"]),
)
def test_advantages_of_any_finite_rewards_are_finite_and_keep_the_rewards_order(
    rewards, algorithm, scale_rewards
):
    scored = compute_advantages([group("g", *rewards)], algorithm, "keep", scale_rewards).scored
    advantages = [s.advantage for s in scored]
    assert all(math.isfinite(a) for a in advantages)
    ranked = sorted(zip(rewards, advantages, strict=True))
    assert all(a1 <= a2 for (_, a1), (_, a2) in zip(ranked, ranked[1:], strict=False))
    if max(rewards) > min(rewards):
        assert advantages[rewards.index(max(rewards))] >= 0
        assert advantages[rewards.index(min(rewards))] <= 0


@pytest.mark.slow
@given(rewards=FINITE_REWARDS)
def test_sample_std_never_overflows_below_the_float_range(rewards):
    assume(max(abs(r) for r in rewards) <= 1e300)
    assert math.isfinite(sample_std(rewards))
