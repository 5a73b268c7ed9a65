"""`StepResult.outcomes`: the trainer says what became of every sample it was handed —
trained, or dropped with the reason — for each drop reason, both merge paths and the
batch-wide `reinforce` baseline; the counts are derived from the outcomes, and the
record survives pickling (how it crosses a Ray actor boundary); a step's advantages follow
its run's `scale_rewards`."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from tests.unit.trainer.policy_helpers import (
    contrast_group,
    make_policy,
    prompt_ids,
    sample,
    train_settings,
)
from trainer.context.timelines import merge_timelines
from trainer.types import EpisodeSamples, Group, Sample, SampleOutcome, StepResult

GOOD = [1000, 2000, 3000, 4000]
BAD = [5000, 6000, 7000, 8000]


@pytest.fixture(scope="module")
def policy():
    p = make_policy()
    yield p
    p.trainer.close()


def outcomes_by_key(result: StepResult) -> dict[tuple[str, int], str | None]:
    """(episode, call index) → drop reason (None: trained); one outcome per sample."""
    keys = [outcome.key for outcome in result.outcomes]
    assert len(set(keys)) == len(keys), keys
    assert {policy for _, policy, _ in keys} <= {"p"}
    return {(o.key[0], o.key[2]): o.dropped for o in result.outcomes}


def empty_sample(policy, episode: str, prompt: list[int]) -> Sample:
    return Sample(episode, "p", prompt, [], [], policy.trainer.version)


def test_counts_are_derived_from_the_outcomes():
    result = StepResult(
        version=3,
        metrics={},
        outcomes=[
            SampleOutcome(("e1", "p", 0)),
            SampleOutcome(("e1", "p", 1), "stale"),
            SampleOutcome(("e2", "p", 0), "stale"),
            SampleOutcome(("e3", "p", 0), "too_long"),
        ],
    )
    assert result.samples_trained == 1
    assert result.samples_dropped == {"stale": 2, "too_long": 1}
    assert StepResult(version=0, metrics={}).samples_dropped == {}
    copy = pickle.loads(pickle.dumps(result))  # what Ray does to an actor's return value
    assert copy == result and copy.samples_dropped == result.samples_dropped


@pytest.mark.parametrize("merge", ["none", "timeline", "tree"])
def test_every_sample_has_its_outcome_for_every_drop_reason(policy, merge):
    prompt = prompt_ids(policy)
    live = contrast_group(policy, prompt, GOOD, BAD)
    good, bad = live.episodes
    good.samples.append(sample(policy, "good", prompt, GOOD, version=-2))  # stale
    no_mask = sample(policy, "good", prompt, BAD, loss_mask=[0] * len(BAD))
    broken = sample(policy, "bad", prompt, BAD)
    broken.behaviour_logprobs = broken.behaviour_logprobs[:-1]
    long = sample(policy, "good", prompt + GOOD * 8, GOOD)
    good.samples += [no_mask, long]
    bad.samples += [broken, empty_sample(policy, "bad", prompt)]
    merged = merge != "none"  # only merging checks the window and the vocabulary
    if merged:
        outside = sample(policy, "bad", prompt, GOOD)
        outside.completion_token_ids = [10**6] * len(GOOD)
        bad.samples.append(outside)
    for episode in live.episodes:
        for index, s in enumerate(episode.samples):
            s.call_index = index
    flat = Group(
        "flat",
        [EpisodeSamples(f"f{i}", 1.0, [sample(policy, f"f{i}", prompt, GOOD)]) for i in range(2)],
    )
    window = len(prompt) + len(GOOD) + 4

    result = asyncio.run(
        policy.trainer.train_step(
            [live, flat], train_settings(max_staleness=1, merge=merge, max_sequence_tokens=window)
        )
    )

    expected = {
        ("good", 0): None,
        ("good", 1): "stale",
        ("good", 2): "no_trained_tokens",
        ("good", 3): "too_long" if merged else None,
        ("bad", 0): None,
        ("bad", 1): "malformed",  # a logprob count that is not the completion's length
        ("bad", 2): "malformed",  # an empty completion: the first check's word for it
        ("f0", 0): "zero_variance",
        ("f1", 0): "zero_variance",
    }
    if merged:
        expected[("bad", 3)] = "malformed"  # ids outside the vocabulary
    assert outcomes_by_key(result) == expected
    assert result.samples_trained == sum(o.trained for o in result.outcomes)


def test_reinforce_judges_zero_variance_over_the_whole_batch(policy):
    prompt = prompt_ids(policy)

    def batch(rewards: list[list[float]]) -> list[Group]:
        return [
            Group(
                f"g{g}",
                [
                    EpisodeSamples(f"e{g}{i}", r, [sample(policy, f"e{g}{i}", prompt, GOOD)])
                    for i, r in enumerate(group)
                ],
            )
            for g, group in enumerate(rewards)
        ]

    reinforce = train_settings(algorithm="reinforce", max_staleness=100)
    # each group is flat, the batch is not: reinforce trains every sample, grpo none
    steps = [
        asyncio.run(policy.trainer.train_step(batch([[1.0, 1.0], [0.0, 0.0]]), settings))
        for settings in (reinforce, train_settings(max_staleness=100))
    ]
    assert [outcomes_by_key(r) for r in steps] == [
        dict.fromkeys([("e00", 0), ("e01", 0), ("e10", 0), ("e11", 0)], reason)
        for reason in (None, "zero_variance")
    ]
    flat = asyncio.run(policy.trainer.train_step(batch([[0.5], [0.5]]), reinforce))
    assert set(outcomes_by_key(flat).values()) == {"zero_variance"}
    assert flat.samples_dropped == {"zero_variance": 2}


def test_merging_names_the_calls_it_leaves_out(policy):
    prompt = prompt_ids(policy)
    fits = sample(policy, "e", prompt, GOOD)
    empty = empty_sample(policy, "e", prompt)
    long = sample(policy, "e", prompt + BAD, GOOD)
    for index, s in enumerate([fits, empty, long]):
        s.call_index = index

    result = merge_timelines([long, empty, fits], max_tokens=len(prompt) + len(GOOD))

    assert [(s.call_index, why) for s, why in result.left_out] == [(1, "empty"), (2, "too_long")]
    assert result.left_out[1][0] is long  # the very objects handed in
    assert (result.counts["empty"], result.counts["too_long"]) == (1, 1)


@pytest.mark.slow
def test_scale_rewards_of_the_settings_reaches_the_steps_advantages(policy):
    """rewards 0, 1, 1, 1 (sample std 0.5): "none" trains on r - 0.75, "group" on twice that."""
    prompt = prompt_ids(policy)

    def group() -> Group:
        episodes = [
            EpisodeSamples(f"e{i}", r, [sample(policy, f"e{i}", prompt, GOOD)])
            for i, r in enumerate([0.0, 1.0, 1.0, 1.0])
        ]
        return Group("g", episodes)

    spread = {
        scaling: asyncio.run(
            policy.trainer.train_step(
                [group()], train_settings(scale_rewards=scaling, max_staleness=100)
            )
        ).metrics["advantage/std"]
        for scaling in ("none", "group")
    }
    assert spread["none"] > 0
    assert spread["group"] == pytest.approx(2 * spread["none"], rel=1e-5)
