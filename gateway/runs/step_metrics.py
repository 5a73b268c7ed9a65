"""The record of a training batch in numbers: the metrics of a step, and the count of a
batch that trained nothing.

Owns: `step_metrics` (what one step records per policy and run-wide, with the breakdowns by
task family and by client code version), `drop_non_finite` (NaN/inf left out, counted),
and `dropped_batch_reason` (the one reason a batch that trained nothing is counted by).
Pure functions over buffered groups and the trainer's `StepResult`s; knows nothing about
HTTP, torch or the database.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from gateway.runs.buffer import BufferedGroup, FinishedEpisode
from trainer.types import StepResult

UNVERSIONED = "unversioned"  # the code version of episodes whose client gave none
NO_SAMPLES = "no_samples"  # why a batch trained nothing when it held no sample to train


def dropped_batch_reason(results: dict[str, StepResult]) -> tuple[str, dict[str, int]]:
    """(the reason a batch no policy trained from is counted by: the one that dropped most
    of its samples over all policies, ties by name, `no_samples` when it held none; the
    dropped samples by reason)."""
    dropped: dict[str, int] = {}
    for result in results.values():
        for reason, count in result.samples_dropped.items():
            if count:
                dropped[reason] = dropped.get(reason, 0) + count
    if not dropped:
        return NO_SAMPLES, dropped
    return min(dropped, key=lambda r: (-dropped[r], r)), dropped


def step_metrics(
    batch: Sequence[BufferedGroup], results: dict[str, StepResult]
) -> dict[tuple[str | None, str], float]:
    """(policy, name) → value: the trainer's metrics, reward mean/std when it gave none,
    sample counts, run-wide means of the episodes' own metrics, and run-wide sums of the
    episodes' token-drift repairs and unrepaired drifts."""
    episodes = [episode for group in batch for episode in group.episodes]
    values: dict[tuple[str | None, str], float] = {}
    for policy, result in results.items():
        rewards = [episode.rewards[policy] for episode in episodes]
        values.update({(policy, name): float(v) for name, v in result.metrics.items()})
        values.setdefault((policy, "reward/mean"), statistics.fmean(rewards))
        values.setdefault((policy, "reward/std"), statistics.pstdev(rewards))
        values[(policy, "samples/trained")] = float(result.samples_trained)
        for reason, count in result.samples_dropped.items():
            values[(policy, f"samples/dropped/{reason}")] = float(count)
    values[(None, "episodes")] = float(len(episodes))
    values[(None, "groups")] = float(len(batch))
    values[(None, "groups/partial")] = float(sum(group.partial for group in batch))
    for status in ("repaired", "unrepaired"):
        values[(None, f"drift/{status}")] = float(sum(e.drift.get(status, 0) for e in episodes))
    reported: dict[str, list[float]] = {}
    for episode in episodes:
        for name, value in episode.metrics.items():
            reported.setdefault(name, []).append(value)
    for name, series in reported.items():
        values[(None, f"episode/{name}")] = statistics.fmean(series)
    values.update(breakdown_metrics(batch))
    return values


NON_FINITE_METRIC = "metrics/non_finite"


def drop_non_finite(
    values: dict[tuple[str | None, str], float],
) -> tuple[dict[tuple[str | None, str], float], list[str]]:
    """(the finite values plus `metrics/non_finite`, the names of the ones left out)."""
    kept = {key: value for key, value in values.items() if math.isfinite(value)}
    left_out = [f"{p or 'run'}/{n}={v}" for (p, n), v in values.items() if (p, n) not in kept]
    kept[(None, NON_FINITE_METRIC)] = float(len(left_out))
    return kept, left_out


def _episode_reward(episode: FinishedEpisode) -> float:
    """One number per episode for run-wide breakdowns: the mean over its policies."""
    return statistics.fmean(episode.rewards.values()) if episode.rewards else 0.0


def breakdown_metrics(batch: Sequence[BufferedGroup]) -> dict[tuple[str | None, str], float]:
    """Run-wide `family/<name>/reward/mean` and `family/<name>/groups` (when any episode
    names a task family), and `code/<version>/reward/mean` and `code/<version>/episodes`
    (episodes whose client gave no code version count as "unversioned"); an episode's
    reward is the mean of its policies' rewards."""
    values: dict[tuple[str | None, str], float] = {}
    episodes = [episode for group in batch for episode in group.episodes]
    if any(episode.task_family is not None for episode in episodes):
        by_family: dict[str, list[BufferedGroup]] = {}
        for group in batch:
            by_family.setdefault(group.family, []).append(group)
        for family, groups in by_family.items():
            rewards = [_episode_reward(e) for g in groups for e in g.episodes]
            values[(None, f"family/{family}/reward/mean")] = statistics.fmean(rewards)
            values[(None, f"family/{family}/groups")] = float(len(groups))
    by_code: dict[str, list[float]] = {}
    for episode in episodes:
        version = episode.code_version or UNVERSIONED
        by_code.setdefault(version, []).append(_episode_reward(episode))
    for version, rewards in by_code.items():
        values[(None, f"code/{version}/reward/mean")] = statistics.fmean(rewards)
        values[(None, f"code/{version}/episodes")] = float(len(rewards))
    return values
