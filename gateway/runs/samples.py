"""From an episode's recorded calls to training samples, and between samples and rows.

Owns: which calls train which policy — a call to the model `<run>/<policy>` of the
episode's own run is one `Sample` of that policy (prompt ids, completion ids, the
engine's behaviour logprobs, the weights version it started with, its call index, the
earlier call it continues).
Calls to base models or to other runs' policies train nothing. Also what a reward means
(`rewards_per_policy`) and `finished_episode`: the one place a `FinishedEpisode` (what the
run's buffer holds) is built, from a live finish and from the database on restart alike.
Knows nothing about HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence

from experiments_db.models import SampleRow
from gateway.errors import Unprocessable
from gateway.recording.drift import drift_counts
from gateway.recording.recorder import CallRecord, EpisodeRecord
from gateway.runs.buffer import BufferedSample, FinishedEpisode
from trainer.types import Sample


def served_name(run: str, policy: str) -> str:
    """The OpenAI `model` name of a run's policy."""
    return f"{run}/{policy}"


def policy_of_call(call: CallRecord, run: str, policies: Collection[str]) -> str | None:
    prefix = run + "/"
    if not call.model.startswith(prefix):
        return None
    name = call.model[len(prefix) :]
    return name if name in policies else None


def sample_rows(
    episode: EpisodeRecord, calls: Sequence[CallRecord], rewards: Mapping[str, float]
) -> list[SampleRow]:
    """One row per call of `episode` to one of its run's policies (the keys of `rewards`)."""
    now = time.time()
    rows = []
    for call in calls:
        policy = policy_of_call(call, episode.run, rewards)
        if policy is None:
            continue
        rows.append(
            SampleRow(
                episode_id=episode.episode_id,
                run=episode.run,
                policy=policy,
                call_index=call.index,
                prompt_token_ids=list(call.prompt_token_ids),
                completion_token_ids=list(call.completion_token_ids),
                behaviour_logprobs=call.behaviour_logprobs,
                version=call.version,
                temperature=call.temperature,
                continues=call.continues,
                reward=rewards[policy],
                group_id=episode.group_id,
                created_at=now,
            )
        )
    return rows


def sample_of_row(row: SampleRow) -> Sample:
    return Sample(
        episode_id=row.episode_id,
        policy=row.policy,
        prompt_token_ids=list(row.prompt_token_ids),
        completion_token_ids=list(row.completion_token_ids),
        behaviour_logprobs=list(row.behaviour_logprobs),
        version=row.version,
        loss_mask=list(row.loss_mask) if row.loss_mask is not None else None,
        call_index=row.call_index,
        temperature=row.temperature or 1.0,
        continues=row.continues,
    )


def buffered_by_policy(rows: Sequence[SampleRow]) -> dict[str, list[BufferedSample]]:
    """Persisted sample rows as the run buffer holds them: per policy, each with its row id."""
    by_policy: dict[str, list[BufferedSample]] = {}
    for row in rows:
        assert row.id is not None
        by_policy.setdefault(row.policy, []).append(BufferedSample(sample_of_row(row), row.id))
    return by_policy


def rewards_per_policy(
    reward: float | dict[str, float], policies: Sequence[str]
) -> dict[str, float]:
    """A float applies to every policy; a dict must name each policy, and only those."""
    if not isinstance(reward, dict):
        return {policy: float(reward) for policy in policies}
    known = ", ".join(policies)
    unknown = sorted(set(reward) - set(policies))
    if unknown:
        raise Unprocessable(
            f"reward: unknown polic{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}; "
            f"this run's policies are: {known}.",
            param="reward",
        )
    missing = [policy for policy in policies if policy not in reward]
    if missing:
        raise Unprocessable(
            f"reward: no reward for {', '.join(missing)}; give every policy of the run "
            f"({known}) a reward, or one float for all.",
            param="reward",
        )
    return {policy: float(reward[policy]) for policy in policies}


def finished_episode(
    episode: EpisodeRecord,
    rows: Sequence[SampleRow],
    calls: Sequence[CallRecord],
    *,
    policies: Sequence[str],
    code_version: str | None,
) -> FinishedEpisode:
    """A finished episode as its run's buffer holds it: its reward per policy (as the
    client sent it, read by `rewards_per_policy`), its persisted sample rows, its metrics,
    its chat calls' drift counts, task family and its client's code version."""
    reward = episode.reward if episode.reward is not None else 0.0
    return FinishedEpisode(
        episode_id=episode.episode_id,
        group_id=episode.group_id,
        rewards=rewards_per_policy(reward, policies),
        samples=buffered_by_policy(rows),
        metrics=dict(episode.metrics or {}),
        drift=drift_counts(calls),
        task_family=episode.task_family,
        code_version=code_version,
    )
