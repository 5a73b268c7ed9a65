"""SQLModel tables for everything swarmrl persists.

Owns: the table definitions (episodes and the model calls recorded into them so far).
Knows nothing about HTTP or torch; wire types live in `swarm.protocol` and the gateway.
Token-level lists are stored as JSON columns so SQLite and PostgreSQL read them the same.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel


class EpisodeRow(SQLModel, table=True):
    """One episode: a rollout of one task by one client, bound to a secret API key."""

    __tablename__ = "episode"

    id: str = Field(primary_key=True)
    api_key_sha256: str = Field(index=True, unique=True)
    run: str = Field(default="default", index=True)
    task_id: str
    task_family: str | None = None
    group_id: str | None = Field(default=None, index=True)
    client_id: str | None = Field(default=None, index=True)
    status: str = Field(default="open", index=True)
    created_at: float


class CallRow(SQLModel, table=True):
    """One completion recorded into an episode (a call with `n` choices gives `n` rows)."""

    __tablename__ = "call"
    __table_args__ = (UniqueConstraint("episode_id", "index"),)

    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(foreign_key="episode.id", index=True)
    index: int
    request_id: str
    choice_index: int = 0
    kind: str  # "chat" | "completions"
    model: str
    prompt_token_ids: list[int] = Field(sa_column=Column(JSON, nullable=False))
    completion_token_ids: list[int] = Field(sa_column=Column(JSON, nullable=False))
    logprobs: list[float] = Field(sa_column=Column(JSON, nullable=False))
    top_logprobs: list[list[list[float]]] | None = Field(default=None, sa_column=Column(JSON))
    versions: list[int] = Field(sa_column=Column(JSON, nullable=False))
    version: int
    token_texts: list[str] = Field(sa_column=Column(JSON, nullable=False))
    completion_text: str
    prompt_text: str | None = None
    finish_reason: str
    started_at: float
    first_token_at: float
    finished_at: float
    messages: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    tools: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
