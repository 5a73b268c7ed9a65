"""The nullable columns the gateway tables grew before Alembic managed them, added where an
older database lacks them (what `db.add_missing_columns` did at every start up to cf4dd29):
an episode's outcome (f1c18e6), the sampling temperature of calls and samples (8adc49d), and
the token-drift record of chat calls (401149b). A database made by gateway_0001 has them all.

Revision ID: gateway_0002
Revises: gateway_0001
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "gateway_0002"
down_revision: str | None = "gateway_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _columns() -> dict[str, list[sa.Column]]:
    return {
        "episode": [
            sa.Column("reward", sa.JSON(), nullable=True),
            sa.Column("metrics", sa.JSON(), nullable=True),
            sa.Column("finished_at", sa.Float(), nullable=True),
            sa.Column("abort_reason", sa.String(), nullable=True),
            sa.Column("step", sa.Integer(), nullable=True),
        ],
        "call": [
            sa.Column("temperature", sa.Float(), nullable=True),
            sa.Column("drift", sa.String(), nullable=True),
            sa.Column("continues", sa.Integer(), nullable=True),
            sa.Column("completion_prefix", sa.String(), nullable=True),
        ],
        "sample": [
            sa.Column("temperature", sa.Float(), nullable=True),
            sa.Column("continues", sa.Integer(), nullable=True),
        ],
    }


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in _columns().items():
        present = {column["name"] for column in inspector.get_columns(table)}
        for column in columns:
            if column.name not in present:
                op.add_column(table, column)


def downgrade() -> None:
    pass  # gateway_0001 makes these columns itself: nothing to take back
