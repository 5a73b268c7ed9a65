"""Persistence of runs: their rows, policies, training steps, metrics and checkpoints.

Owns: the transactions of the run lifecycle (`experiments_db` underneath). Methods are
synchronous; the async callers run them in a worker thread. Knows nothing about HTTP.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.models import CheckpointRow, EpisodeRow, MetricRow, PolicyRow, RunRow, SampleRow
from gateway.errors import Conflict

BEST_METRIC = "reward/mean"  # the metric checkpoint retention keeps the best of
# run-wide metrics of a batch that trained nothing, recorded at the run's step then:
# `batches/dropped` (the run's total so far) and `batches/dropped/<reason>` (its reason's)
DROPPED_BATCHES = "batches/dropped"


class RunStore:
    def __init__(self, db: Engine):
        self._db = db

    def create(self, run: RunRow, policies: Sequence[PolicyRow]) -> None:
        try:
            with session_scope(self._db) as session:
                crud.insert_run(session, run=run, policies=policies)
        except IntegrityError as e:
            raise Conflict(
                f"A run named {run.id!r} exists already in this gateway's database; "
                "choose another name.",
                param="name",
                code="run_exists",
            ) from e

    def update(self, run_id: str, **values: Any) -> None:
        with session_scope(self._db) as session:
            crud.update_run(session, run_id=run_id, updated_at=time.time(), **values)

    def set_policy_versions(self, run_id: str, versions: Mapping[str, int]) -> None:
        with session_scope(self._db) as session:
            crud.set_policy_versions(session, run_id=run_id, versions=dict(versions))

    def row(self, run_id: str) -> RunRow | None:
        with session_scope(self._db) as session:
            return crud.get_run(session, run_id=run_id)

    def rows(self) -> list[RunRow]:
        with session_scope(self._db) as session:
            return crud.list_runs(session)

    def record_step(
        self,
        run_id: str,
        *,
        step: int,
        versions: Mapping[str, int],
        metrics: Sequence[MetricRow],
        sample_outcomes: Mapping[int, str | None],  # row id -> drop reason (None: trained)
        episode_ids: Sequence[str],
        counters: Mapping[str, int],
    ) -> None:
        """Everything one training step changed, in one transaction."""
        by_reason: dict[str | None, list[int]] = {}
        for row_id, reason in sample_outcomes.items():
            by_reason.setdefault(reason, []).append(row_id)
        with session_scope(self._db) as session:
            for reason, row_ids in by_reason.items():
                status = "trained" if reason is None else "dropped"
                crud.mark_samples(
                    session, sample_ids=row_ids, status=status, step=step, reason=reason
                )
            crud.mark_episodes_consumed(session, episode_ids=episode_ids, step=step)
            crud.insert_metrics(session, metrics=metrics)
            crud.set_policy_versions(session, run_id=run_id, versions=dict(versions))
            crud.bump_run_counters(session, run_id=run_id, **counters)
            crud.update_run(session, run_id=run_id, step=step, updated_at=time.time())

    def metrics(
        self, run_id: str, *, since_step: int | None, name: str | None = None
    ) -> list[MetricRow]:
        with session_scope(self._db) as session:
            return crud.list_metrics(session, run_id=run_id, since_step=since_step, name=name)

    def dropped_batches(self, run_id: str, step: int) -> tuple[dict[str, int], dict[str, int]]:
        """(batches that trained nothing by reason, those of them recorded at `step`: the
        streak since the step that made the run's step `step`), read back from their
        metrics (a restart's rewind removed those of the steps it undid)."""
        with session_scope(self._db) as session:
            rows = crud.list_metrics(session, run_id=run_id, name_prefix=DROPPED_BATCHES + "/")
        totals: dict[str, int] = {}
        in_a_row: dict[str, int] = {}
        for row in rows:
            reason = row.name.removeprefix(DROPPED_BATCHES + "/")
            totals[reason] = max(totals.get(reason, 0), int(row.value))
            if row.step == step:
                in_a_row[reason] = in_a_row.get(reason, 0) + 1
        return totals, in_a_row

    def checkpoint(self, run_id: str, step: int) -> CheckpointRow | None:
        with session_scope(self._db) as session:
            return crud.get_checkpoint(session, run_id=run_id, step=step)

    def add_checkpoint(self, run_id: str, step: int, path: str) -> CheckpointRow:
        row = CheckpointRow(run=run_id, step=step, path=path, created_at=time.time())
        with session_scope(self._db) as session:
            return crud.insert_checkpoint(session, checkpoint=row)

    def checkpoints(self, run_id: str) -> list[CheckpointRow]:
        with session_scope(self._db) as session:
            return crud.list_checkpoints(session, run_id=run_id)

    def add_metrics(self, run_id: str, step: int, values: Mapping[str, float]) -> None:
        now = time.time()
        rows = [
            MetricRow(run=run_id, step=step, name=k, value=float(v), time=now)
            for k, v in values.items()
        ]
        with session_scope(self._db) as session:
            crud.insert_metrics(session, metrics=rows)

    def delete_checkpoints(self, run_id: str, steps: Sequence[int]) -> None:
        with session_scope(self._db) as session:
            crud.delete_checkpoints(session, run_id=run_id, steps=steps)

    def step_scores(self, run_id: str, steps: Sequence[int]) -> dict[int, float]:
        """The mean `reward/mean` over the run's policies at each of `steps` that has one
        (what checkpoint retention calls "best")."""
        with session_scope(self._db) as session:
            rows = crud.list_metrics(session, run_id=run_id, since_step=None, name=BEST_METRIC)
        wanted = set(steps)
        by_step: dict[int, list[float]] = {}
        for row in rows:
            if row.step in wanted and math.isfinite(row.value):
                by_step.setdefault(row.step, []).append(row.value)
        return {step: sum(values) / len(values) for step, values in by_step.items()}

    # -- restarts --------------------------------------------------------------------------

    def policies(self, run_id: str) -> list[PolicyRow]:
        with session_scope(self._db) as session:
            return crud.list_policies(session, run_id=run_id)

    def rewind(self, run_id: str, step: int) -> dict[str, int]:
        """Undo, in one transaction, what the steps after `step` recorded (a restart from
        the checkpoint at `step` lost their effect): their samples go back to "buffered",
        their episodes to unconsumed, their metrics go, the counters and the run's step
        follow. Returns the counter deltas applied."""
        with session_scope(self._db) as session:
            counts = crud.rebuffer_samples_after(session, run_id=run_id, step=step)
            crud.unconsume_episodes_after(session, run_id=run_id, step=step)
            crud.delete_metrics_after(session, run_id=run_id, step=step)
            deltas = {
                "samples_trained": -counts.get("trained", 0),
                "samples_dropped": -counts.get("dropped", 0),
                "samples_buffered": sum(counts.values()),
            }
            crud.bump_run_counters(session, run_id=run_id, **deltas)
            crud.update_run(session, run_id=run_id, step=step, updated_at=time.time())
        return deltas

    def unconsumed(self, run_id: str) -> list[tuple[EpisodeRow, list[SampleRow], str | None]]:
        """The run's finished episodes no step consumed, in finishing order, each with its
        buffered samples and its client's code version (what the group buffer held)."""
        with session_scope(self._db) as session:
            episodes = crud.list_unconsumed_episodes(session, run_id=run_id)
            samples = crud.list_samples(session, run_id=run_id, status="buffered")
            code_versions: dict[str, str | None] = {}
            for client_id in {e.client_id for e in episodes if e.client_id is not None}:
                client = crud.get_client(session, client_id=client_id)
                code_versions[client_id] = client.code_version if client else None
        by_episode: dict[str, list[SampleRow]] = {}
        for row in samples:
            by_episode.setdefault(row.episode_id, []).append(row)
        return [
            (
                episode,
                by_episode.get(episode.id, []),
                code_versions.get(episode.client_id) if episode.client_id else None,
            )
            for episode in episodes
        ]
