"""The training loop writes what the trainers said of each sample, and nothing else: a row
id per sample key, and a trainer that leaves a sample out (or names one it was not given)
fails the step instead of leaving rows to guesswork."""

from __future__ import annotations

import pytest

from gateway.runs.buffer import BufferedGroup, BufferedSample, FinishedEpisode
from gateway.runs.training import outcome_counters, row_outcomes
from trainer.types import Sample, SampleOutcome, StepResult


def buffered(episode: str, policy: str, call: int, row_id: int) -> BufferedSample:
    return BufferedSample(Sample(episode, policy, [1], [2], [0.0], 0, call_index=call), row_id)


BATCH = [
    BufferedGroup(
        "g",
        [
            FinishedEpisode(
                "e1", "g", {"a": 1.0, "b": 0.0},
                samples={"a": [buffered("e1", "a", 0, 10), buffered("e1", "a", 2, 12)],
                         "b": [buffered("e1", "b", 1, 11)]},
            ),
            FinishedEpisode("e2", "g", {"a": 0.0, "b": 1.0}, samples={"a": [buffered("e2", "a", 0, 20)]}),
        ],
    )
]  # fmt: skip


def result(*outcomes: SampleOutcome) -> StepResult:
    return StepResult(version=1, metrics={}, outcomes=list(outcomes))


def test_each_row_gets_its_policys_outcome_and_the_counters_count_them():
    results = {
        "a": result(
            SampleOutcome(("e1", "a", 0)),
            SampleOutcome(("e1", "a", 2), "too_long"),
            SampleOutcome(("e2", "a", 0), "stale"),
        ),
        "b": result(SampleOutcome(("e1", "b", 1), "malformed")),
    }
    outcomes = row_outcomes(BATCH, results)
    assert outcomes == {10: None, 12: "too_long", 20: "stale", 11: "malformed"}
    assert outcome_counters(outcomes) == {
        "samples_buffered": -4,
        "samples_trained": 1,
        "samples_dropped": 3,
    }


@pytest.mark.parametrize(
    "b_outcomes",
    [
        [],  # a sample without an outcome
        [SampleOutcome(("e1", "b", 1)), SampleOutcome(("e9", "b", 0))],  # one never given
        [SampleOutcome(("e1", "b", 1)), SampleOutcome(("e1", "b", 1), "stale")],  # two for one
    ],
)
def test_a_trainer_that_does_not_account_for_each_sample_once_fails_the_step(b_outcomes):
    results = {
        "a": result(
            *(SampleOutcome(key) for key in [("e1", "a", 0), ("e1", "a", 2), ("e2", "a", 0)])
        ),
        "b": result(*b_outcomes),
    }
    with pytest.raises(RuntimeError, match="sample outcomes for 4 samples"):
        row_outcomes(BATCH, results)
