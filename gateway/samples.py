"""From an episode's recorded calls to training samples, and between samples and rows.

Owns: which calls train which policy — a call to the model `<run>/<policy>` of the
episode's own run is one `Sample` of that policy (prompt ids, completion ids, the
engine's behaviour logprobs, the weights version it started with, its call index, the
earlier call it continues).
Calls to base models or to other runs' policies train nothing. Knows nothing about HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence

from experiments_db.models import SampleRow
from gateway.buffer import BufferedSample
from gateway.recorder import CallRecord, EpisodeRecord
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
                behaviour_logprobs=list(call.logprobs),
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
