"""Keyword-only create/read functions over the swarmrl tables.

Owns: the queries. Callers own the session (and so the transaction); nothing here knows
who is calling or why.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func
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


def insert_calls(session: Session, *, calls: Sequence[CallRow]) -> None:
    session.add_all(calls)


def list_calls(session: Session, *, episode_id: str) -> list[CallRow]:
    query = select(CallRow).where(CallRow.episode_id == episode_id).order_by(CallRow.index)
    return list(session.exec(query).all())


def count_calls(session: Session, *, episode_id: str) -> int:
    query = select(func.count()).select_from(CallRow).where(CallRow.episode_id == episode_id)
    return int(session.exec(query).one())
