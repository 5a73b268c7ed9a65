"""Episodes and the calls recorded into them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, update
from sqlmodel import Session, select

from experiments_db.models import CallRow, EpisodeRow


def insert_episode(session: Session, *, episode: EpisodeRow) -> EpisodeRow:
    session.add(episode)
    return episode


def get_episode(session: Session, *, episode_id: str) -> EpisodeRow | None:
    return session.get(EpisodeRow, episode_id)


def find_episode_by_key_hash(session: Session, *, api_key_sha256: str) -> EpisodeRow | None:
    query = select(EpisodeRow).where(EpisodeRow.api_key_sha256 == api_key_sha256)
    return session.exec(query).first()


def list_open_episode_ids(
    session: Session, *, run: str | None = None, client_id: str | None = None
) -> list[str]:
    """Ids of the open episodes of a run and/or a client, oldest first."""
    query = select(EpisodeRow.id).where(EpisodeRow.status == "open")
    if run is not None:
        query = query.where(EpisodeRow.run == run)
    if client_id is not None:
        query = query.where(EpisodeRow.client_id == client_id)
    return list(session.exec(query.order_by(EpisodeRow.created_at)).all())


def list_episodes(
    session: Session,
    *,
    run: str,
    status: str | None = None,
    group_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[EpisodeRow]:
    """A page of the run's episodes (all, or those of one status and/or group), newest first."""
    query = select(EpisodeRow).where(EpisodeRow.run == run)
    if status is not None:
        query = query.where(EpisodeRow.status == status)
    if group_id is not None:
        query = query.where(EpisodeRow.group_id == group_id)
    query = query.order_by(EpisodeRow.created_at.desc(), EpisodeRow.id.desc())
    return list(session.exec(query.offset(offset).limit(limit)).all())


def count_open_episodes_by_client(session: Session) -> dict[str, int]:
    query = (
        select(EpisodeRow.client_id, func.count())
        .where(EpisodeRow.status == "open", EpisodeRow.client_id.is_not(None))
        .group_by(EpisodeRow.client_id)
    )
    return {client_id: int(count) for client_id, count in session.exec(query).all()}


def mark_episodes_consumed(session: Session, *, episode_ids: Sequence[str], step: int) -> None:
    """Record that training step `step` used these (finished) episodes."""
    if episode_ids:
        session.exec(
            update(EpisodeRow).where(EpisodeRow.id.in_(list(episode_ids))).values(step=step)
        )


def insert_calls(session: Session, *, calls: Sequence[CallRow]) -> None:
    session.add_all(calls)


def list_calls(session: Session, *, episode_id: str) -> list[CallRow]:
    query = select(CallRow).where(CallRow.episode_id == episode_id).order_by(CallRow.index)
    return list(session.exec(query).all())


def count_calls(session: Session, *, episode_id: str) -> int:
    query = select(func.count()).select_from(CallRow).where(CallRow.episode_id == episode_id)
    return int(session.exec(query).one())


def unconsume_episodes_after(session: Session, *, run_id: str, step: int) -> None:
    """Forget that steps after `step` consumed the run's episodes (a restart rewinds)."""
    session.exec(
        update(EpisodeRow).where(EpisodeRow.run == run_id, EpisodeRow.step > step).values(step=None)
    )


def list_unconsumed_episodes(session: Session, *, run_id: str) -> list[EpisodeRow]:
    """The run's finished episodes that no training step consumed, in finishing order."""
    query = select(EpisodeRow).where(
        EpisodeRow.run == run_id, EpisodeRow.status == "finished", EpisodeRow.step.is_(None)
    )
    return list(session.exec(query.order_by(EpisodeRow.finished_at, EpisodeRow.id)).all())
