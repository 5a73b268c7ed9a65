"""Persistence of runs: their rows, policies, training steps, metrics and checkpoints.

Owns: the transactions of the run lifecycle (`experiments_db` underneath). Methods are
synchronous; the async callers run them in a worker thread. Knows nothing about HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.models import CheckpointRow, MetricRow, PolicyRow, RunRow
from gateway.errors import Conflict


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
