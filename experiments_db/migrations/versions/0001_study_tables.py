"""The study tables: study, hypothesis, experiment, client_process, metric_snapshot,
intervention, event, report (see experiments_db.studies); the first revision of the study
history.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = ("study",)  # the study history (alembic_version)
depends_on: str | Sequence[str] | None = None


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), nullable=False)


def _study_id() -> sa.Column:
    return sa.Column("study_id", sa.String(), sa.ForeignKey("study.id"), nullable=False)


def _experiment_id() -> sa.Column:
    return sa.Column("experiment_id", sa.String(), sa.ForeignKey("experiment.id"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "study",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("question", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("phase", sa.String(), nullable=False),
        sa.Column("planner", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("gateway_url", sa.String(), nullable=True),
        sa.Column("budget_s", sa.Float(), nullable=False),
        sa.Column("budget_used_s", sa.Float(), nullable=False),
        sa.Column("seeds", sa.Integer(), nullable=False),
        sa.Column("ask", sa.Boolean(), nullable=False),
        sa.Column("directory", sa.String(), nullable=False),
        sa.Column("latest_finding", sa.String(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_study_status", "study", ["status"])

    op.create_table(
        "hypothesis",
        _id(),
        _study_id(),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("statement", sa.String(), nullable=False),
        sa.Column("prediction", sa.String(), nullable=False),
        sa.Column("refuted_if", sa.String(), nullable=False),
        sa.Column("parent", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("evidence", sa.String(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "key"),
    )
    op.create_index("ix_hypothesis_study_id", "hypothesis", ["study_id"])

    op.create_table(
        "experiment",
        sa.Column("id", sa.String(), nullable=False),
        _study_id(),
        sa.Column("hypothesis_key", sa.String(), nullable=False),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("run_name", sa.String(), nullable=True),
        sa.Column("workflow_path", sa.String(), nullable=True),
        sa.Column("code_version", sa.String(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_experiment_study_id", "experiment", ["study_id"])
    op.create_index("ix_experiment_status", "experiment", ["status"])

    op.create_table(
        "client_process",
        _id(),
        _experiment_id(),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("launcher", sa.String(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("host", sa.String(), nullable=False),
        sa.Column("job_id", sa.String(), nullable=True),
        sa.Column("command", sa.JSON(), nullable=False),
        sa.Column("code_version", sa.String(), nullable=True),
        sa.Column("log_path", sa.String(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("exited_at", sa.Float(), nullable=True),
        sa.Column("exit_status", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("experiment_id", "attempt"),
    )
    op.create_index("ix_client_process_experiment_id", "client_process", ["experiment_id"])

    op.create_table(
        "metric_snapshot",
        _id(),
        _experiment_id(),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("experiment_id", "step", "name"),
    )
    op.create_index("ix_metric_snapshot_experiment_id", "metric_snapshot", ["experiment_id"])

    op.create_table(
        "intervention",
        _id(),
        _study_id(),
        sa.Column("experiment_id", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("applied_at", sa.Float(), nullable=True),
        sa.Column("result", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_intervention_study_id", "intervention", ["study_id"])

    op.create_table(
        "event",
        _id(),
        _study_id(),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("phase", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_event_study_id", "event", ["study_id"])

    op.create_table(
        "report",
        _id(),
        _study_id(),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("markdown_path", sa.String(), nullable=False),
        sa.Column("html_path", sa.String(), nullable=False),
        sa.Column("conclusion", sa.String(), nullable=False),
        sa.Column("planner", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_report_study_id", "report", ["study_id"])


def downgrade() -> None:
    for table in (
        "report",
        "event",
        "intervention",
        "metric_snapshot",
        "client_process",
        "experiment",
        "hypothesis",
        "study",
    ):
        op.drop_table(table)  # drops the table's indexes with it
