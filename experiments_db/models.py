"""SQLModel tables for everything swarmrl persists.

Owns: the table definitions — episodes and the model calls recorded into them, swarm
clients, training runs and their policies, training samples, metrics and checkpoints.
Knows nothing about HTTP or torch; wire types live in `swarm.protocol` and the gateway.
Token-level lists are stored as JSON columns so SQLite and PostgreSQL read them the same.

Everything needed to rebuild a run after a restart is here: its settings and status, its
policies' versions, its checkpoints, and the finished episodes (`EpisodeRow.step` is None
until a training step consumes them) with their samples (`SampleRow.status` "buffered").
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
    status: str = Field(default="open", index=True)  # open | finished | aborted
    created_at: float
    reward: float | dict[str, float] | None = Field(default=None, sa_column=Column(JSON))
    metrics: dict[str, float] | None = Field(default=None, sa_column=Column(JSON))
    finished_at: float | None = None  # when it was finished or aborted
    abort_reason: str | None = None
    step: int | None = None  # the training step that consumed it (None: not yet, or never)


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
    temperature: float | None = None  # None in rows written before it was recorded: 1.0
    tools: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    # chat calls bound to an episode: how the prompt was built (token-drift repair: fresh |
    # exact | repaired | unrepaired), the earlier call it continues, the forced tool-call
    # opening (part of the prompt); `prompt_text` then holds the rendered chat
    drift: str | None = None
    continues: int | None = None
    completion_prefix: str | None = None
    # constrained decoding (NULL without a grammar): per token, whether the grammar mask
    # moved its logprob, and its logprob without the mask (None: the engine cannot see it)
    constrained: list[bool] | None = Field(default=None, sa_column=Column(JSON))
    unconstrained_logprobs: list[float] | None = Field(default=None, sa_column=Column(JSON))


class ClientRow(SQLModel, table=True):
    """A registered swarm client. Heartbeats are kept in memory; status changes here."""

    __tablename__ = "client"

    id: str = Field(primary_key=True)
    name: str
    code_version: str | None = None
    labels: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="active", index=True)  # active | gone
    registered_at: float
    gone_at: float | None = None
    gone_reason: str | None = None


class RunRow(SQLModel, table=True):
    """A training run; `id` is its name. Counters are bumped in the transaction that
    changes what they count."""

    __tablename__ = "run"

    id: str = Field(primary_key=True)
    settings: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(index=True)
    step: int = 0
    error: str | None = None
    created_at: float
    updated_at: float
    resume_from: str | None = None
    episodes_finished: int = 0
    episodes_aborted: int = 0
    samples_buffered: int = 0
    samples_trained: int = 0
    samples_dropped: int = 0


class PolicyRow(SQLModel, table=True):
    """One policy of a run, served as `<run>/<name>`."""

    __tablename__ = "policy"
    __table_args__ = (UniqueConstraint("run", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(foreign_key="run.id", index=True)
    name: str
    base_model: str
    lora: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    version: int = 0


class SampleRow(SQLModel, table=True):
    """One training sample (today: one recorded call to `<run>/<policy>`), persisted when
    its episode finishes; `status` buffered → trained | dropped (with `drop_reason`)."""

    __tablename__ = "sample"
    __table_args__ = (UniqueConstraint("episode_id", "policy", "call_index"),)

    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(foreign_key="episode.id", index=True)
    run: str = Field(index=True)
    policy: str
    call_index: int
    prompt_token_ids: list[int] = Field(sa_column=Column(JSON, nullable=False))
    completion_token_ids: list[int] = Field(sa_column=Column(JSON, nullable=False))
    behaviour_logprobs: list[float] = Field(sa_column=Column(JSON, nullable=False))
    loss_mask: list[int] | None = Field(default=None, sa_column=Column(JSON))
    version: int
    temperature: float | None = None  # of the behaviour logprobs; None means 1.0
    continues: int | None = None  # the call of the same conversation this one continues
    reward: float
    group_id: str | None = None
    status: str = Field(default="buffered", index=True)  # buffered | trained | dropped
    step_trained: int | None = None
    drop_reason: str | None = None
    created_at: float


class MetricRow(SQLModel, table=True):
    """One scalar of one training step; `policy` is None for run-wide values."""

    __tablename__ = "metric"

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(index=True)
    step: int = Field(index=True)
    policy: str | None = None
    name: str
    value: float
    time: float


class CheckpointRow(SQLModel, table=True):
    """A saved checkpoint: `path` holds one sub-directory per policy."""

    __tablename__ = "checkpoint"
    __table_args__ = (UniqueConstraint("run", "step"),)

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(index=True)
    step: int
    path: str
    created_at: float


# The tables the gateway's Alembic history owns (`experiments_db.migrate.GATEWAY`).
GATEWAY_TABLES = ("episode", "call", "client", "run", "policy", "sample", "metric", "checkpoint")
