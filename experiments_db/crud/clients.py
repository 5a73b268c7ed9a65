"""Swarm clients."""

from __future__ import annotations

from sqlmodel import Session

from experiments_db.models import ClientRow


def insert_client(session: Session, *, client: ClientRow) -> ClientRow:
    session.add(client)
    return client


def get_client(session: Session, *, client_id: str) -> ClientRow | None:
    return session.get(ClientRow, client_id)


def mark_client_gone(session: Session, *, client_id: str, at: float, reason: str) -> None:
    row = session.get(ClientRow, client_id)
    if row is not None:
        row.status, row.gone_at, row.gone_reason = "gone", at, reason
        session.add(row)
