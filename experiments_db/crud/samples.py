"""Training samples."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, update
from sqlmodel import Session, select

from experiments_db.models import SampleRow


def insert_samples(session: Session, *, samples: Sequence[SampleRow]) -> None:
    session.add_all(samples)


def list_samples(
    session: Session,
    *,
    run_id: str | None = None,
    episode_id: str | None = None,
    status: str | None = None,
) -> list[SampleRow]:
    query = select(SampleRow)
    if run_id is not None:
        query = query.where(SampleRow.run == run_id)
    if episode_id is not None:
        query = query.where(SampleRow.episode_id == episode_id)
    if status is not None:
        query = query.where(SampleRow.status == status)
    return list(session.exec(query.order_by(SampleRow.id)).all())


def mark_samples(
    session: Session, *, sample_ids: Sequence[int], status: str, step: int, reason: str | None
) -> None:
    """Move buffered samples to `trained` or `dropped` (with `reason`) at training `step`."""
    if sample_ids:
        session.exec(
            update(SampleRow)
            .where(SampleRow.id.in_(list(sample_ids)))
            .values(status=status, step_trained=step, drop_reason=reason)
        )


def rebuffer_samples_after(session: Session, *, run_id: str, step: int) -> dict[str, int]:
    """Put back to "buffered" every sample of the run that a step after `step` trained or
    dropped (a restart from the checkpoint at `step` lost that step's effect); returns how
    many were "trained" and "dropped"."""
    query = select(SampleRow.status, func.count()).where(
        SampleRow.run == run_id,
        SampleRow.status != "buffered",
        SampleRow.step_trained > step,
    )
    counts = {status: int(n) for status, n in session.exec(query.group_by(SampleRow.status))}
    session.exec(
        update(SampleRow)
        .where(
            SampleRow.run == run_id,
            SampleRow.status != "buffered",
            SampleRow.step_trained > step,
        )
        .values(status="buffered", step_trained=None, drop_reason=None)
    )
    return counts
