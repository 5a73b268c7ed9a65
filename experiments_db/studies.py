"""SQLModel tables for the researcher's side of swarmrl: studies and what they are made of.

Owns: the table definitions — a study (one research question under a budget), its
hypotheses, its experiments (one arm × seed, each linked to a gateway run by name), the
client processes launched for them, metric snapshots copied from the gateway, human and
researcher interventions, the event timeline (every decision and why), and reports.
Knows nothing about LangGraph, HTTP or the gateway; the researcher drives these rows.

These tables live in the researcher's database, which is created and upgraded by Alembic
(`experiments_db.migrate.upgrade`); `STUDY_TABLES` names the tables the migrations own.
Times are unix seconds (float).
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

STUDY_STATUSES = ("running", "paused", "stopping", "stopped", "finished", "failed")
HYPOTHESIS_STATUSES = ("open", "testing", "supported", "refuted", "inconclusive", "not_testable")
EXPERIMENT_STATUSES = (
    "planned",
    "validated",
    "launching",
    "running",
    "finished",
    "failed",
    "stopped",
    "rejected",
)
INTERVENTION_STATUSES = ("pending", "applied", "rejected", "failed")
LAUNCHERS = ("local", "ray")


def new_study_id() -> str:
    """A fresh study id such as ``st-1a2b3c4d``."""
    return f"st-{secrets.token_hex(4)}"


class StudyRow(SQLModel, table=True):
    """One research question pursued under a time budget; `phase` is the graph node."""

    __tablename__ = "study"

    id: str = Field(primary_key=True)
    question: str
    status: str = Field(index=True)  # STUDY_STATUSES
    phase: str
    planner: str
    model: str | None = None
    gateway_url: str | None = None
    budget_s: float
    budget_used_s: float = 0.0
    seeds: int
    ask: bool = False
    directory: str
    latest_finding: str | None = None
    error: str | None = None
    pid: int | None = None  # the researcher process driving the study
    created_at: float
    updated_at: float
    finished_at: float | None = None


class HypothesisRow(SQLModel, table=True):
    """A falsifiable claim of a study, named by `key` (e.g. "h1"); `parent` is the key of
    the hypothesis it refines."""

    __tablename__ = "hypothesis"
    __table_args__ = (UniqueConstraint("study_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    key: str
    statement: str
    prediction: str
    refuted_if: str
    parent: str | None = None
    status: str = "open"  # HYPOTHESIS_STATUSES
    evidence: str | None = None
    created_at: float


class ExperimentRow(SQLModel, table=True):
    """One arm × seed of a study; `run_name` is the gateway run that trains it. The caller
    forms the id, e.g. ``f"{study_id}-{arm}-s{seed}"``, so re-planning is idempotent."""

    __tablename__ = "experiment"

    id: str = Field(primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    hypothesis_key: str
    arm: str
    role: str  # e.g. "treatment" | "control"
    seed: int
    attempt: int = 0
    config: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(index=True)  # EXPERIMENT_STATUSES
    run_name: str | None = None
    workflow_path: str | None = None
    code_version: str | None = None
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    error: str | None = None
    created_at: float
    updated_at: float


class ClientProcessRow(SQLModel, table=True):
    """One launch of the swarm client for an experiment; launches are idempotent by
    (experiment, attempt)."""

    __tablename__ = "client_process"
    __table_args__ = (UniqueConstraint("experiment_id", "attempt"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: str = Field(foreign_key="experiment.id", index=True)
    attempt: int
    launcher: str  # LAUNCHERS
    pid: int | None = None
    host: str
    job_id: str | None = None  # launcher "ray": the job's submission id (pid is None then)
    command: list[str] = Field(sa_column=Column(JSON, nullable=False))
    code_version: str | None = None
    log_path: str
    started_at: float
    exited_at: float | None = None
    exit_status: int | None = None


class MetricSnapshotRow(SQLModel, table=True):
    """One scalar of one training step of an experiment's run, as the researcher saw it."""

    __tablename__ = "metric_snapshot"
    __table_args__ = (UniqueConstraint("experiment_id", "step", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: str = Field(foreign_key="experiment.id", index=True)
    step: int
    name: str
    value: float
    at: float


class InterventionRow(SQLModel, table=True):
    """A request to change a study's course (pause, stop_run, patch_run, note, ...), from a
    human or the researcher itself; `status` pending → applied | rejected | failed."""

    __tablename__ = "intervention"

    id: int | None = Field(default=None, primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    experiment_id: str | None = None
    kind: str
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    actor: str  # "human:ui" | "human:cli" | "researcher"
    reason: str | None = None
    status: str = "pending"  # INTERVENTION_STATUSES
    created_at: float
    applied_at: float | None = None
    result: str | None = None


class EventRow(SQLModel, table=True):
    """One entry of a study's timeline: what happened, in which phase, and why."""

    __tablename__ = "event"

    id: int | None = Field(default=None, primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    at: float
    phase: str
    kind: str
    message: str
    reason: str | None = None
    data: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class ReportRow(SQLModel, table=True):
    """A written report of a study (a study may be reported more than once)."""

    __tablename__ = "report"

    id: int | None = Field(default=None, primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    created_at: float
    markdown_path: str
    html_path: str
    conclusion: str
    planner: str


STUDY_TABLES = (
    "study",
    "hypothesis",
    "experiment",
    "client_process",
    "metric_snapshot",
    "intervention",
    "event",
    "report",
)
