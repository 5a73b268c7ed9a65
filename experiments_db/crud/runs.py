"""Runs, their policies, checkpoints and metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, update
from sqlmodel import Session, select

from experiments_db.models import CheckpointRow, MetricRow, PolicyRow, RunRow

RUN_COUNTERS = (
    "episodes_finished",
    "episodes_aborted",
    "samples_buffered",
    "samples_trained",
    "samples_dropped",
)


def insert_run(session: Session, *, run: RunRow, policies: Sequence[PolicyRow]) -> RunRow:
    session.add(run)
    session.flush()  # the run row first: policies reference it
    session.add_all(policies)
    return run


def get_run(session: Session, *, run_id: str) -> RunRow | None:
    return session.get(RunRow, run_id)


def list_runs(session: Session) -> list[RunRow]:
    return list(session.exec(select(RunRow).order_by(RunRow.created_at)).all())


def update_run(session: Session, *, run_id: str, **values: Any) -> None:
    """Set columns of a run (status, step, error, settings, updated_at, ...)."""
    session.exec(update(RunRow).where(RunRow.id == run_id).values(**values))


def bump_run_counters(session: Session, *, run_id: str, **deltas: int) -> None:
    """Add `deltas` to the run's counters atomically; a run that does not exist is skipped."""
    unknown = set(deltas) - set(RUN_COUNTERS)
    assert not unknown, f"not run counters: {unknown}"
    values = {name: getattr(RunRow, name) + delta for name, delta in deltas.items() if delta}
    if values:
        session.exec(update(RunRow).where(RunRow.id == run_id).values(**values))


def list_policies(session: Session, *, run_id: str) -> list[PolicyRow]:
    query = select(PolicyRow).where(PolicyRow.run == run_id).order_by(PolicyRow.id)
    return list(session.exec(query).all())


def set_policy_versions(session: Session, *, run_id: str, versions: dict[str, int]) -> None:
    for name, version in versions.items():
        session.exec(
            update(PolicyRow)
            .where(PolicyRow.run == run_id, PolicyRow.name == name)
            .values(version=version)
        )


def insert_metrics(session: Session, *, metrics: Sequence[MetricRow]) -> None:
    session.add_all(metrics)


def list_metrics(
    session: Session,
    *,
    run_id: str,
    since_step: int | None = None,
    name: str | None = None,
    name_prefix: str | None = None,
) -> list[MetricRow]:
    """Metrics of a run with `step > since_step` (all when None), by step then insertion;
    only those called `name`, or whose name starts with `name_prefix`, when given."""
    query = select(MetricRow).where(MetricRow.run == run_id)
    if since_step is not None:
        query = query.where(MetricRow.step > since_step)
    if name is not None:
        query = query.where(MetricRow.name == name)
    if name_prefix is not None:
        query = query.where(MetricRow.name.startswith(name_prefix, autoescape=True))
    return list(session.exec(query.order_by(MetricRow.step, MetricRow.id)).all())


def delete_metrics_after(session: Session, *, run_id: str, step: int) -> None:
    """Remove the metrics of the run's steps after `step` (a restart redoes those steps)."""
    session.exec(delete(MetricRow).where(MetricRow.run == run_id, MetricRow.step > step))


def insert_checkpoint(session: Session, *, checkpoint: CheckpointRow) -> CheckpointRow:
    session.add(checkpoint)
    return checkpoint


def get_checkpoint(session: Session, *, run_id: str, step: int) -> CheckpointRow | None:
    query = select(CheckpointRow).where(CheckpointRow.run == run_id, CheckpointRow.step == step)
    return session.exec(query).first()


def delete_checkpoints(session: Session, *, run_id: str, steps: Sequence[int]) -> None:
    """Remove the rows of the run's checkpoints at `steps` (their directories are gone)."""
    session.exec(
        delete(CheckpointRow).where(CheckpointRow.run == run_id, CheckpointRow.step.in_(steps))
    )


def list_checkpoints(session: Session, *, run_id: str) -> list[CheckpointRow]:
    query = select(CheckpointRow).where(CheckpointRow.run == run_id).order_by(CheckpointRow.step)
    return list(session.exec(query).all())
