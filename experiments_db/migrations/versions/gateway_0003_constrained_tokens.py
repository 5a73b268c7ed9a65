"""Constrained decoding on recorded calls: per completion token, whether a grammar mask
moved its logprob (`constrained`), and its logprob without the mask
(`unconstrained_logprobs`, what training compares against; docs/training.md). Both are
NULL for calls made without a grammar, and in every row written before.

Revision ID: gateway_0003
Revises: gateway_0002
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "gateway_0003"
down_revision: str | None = "gateway_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _columns() -> list[sa.Column]:
    return [
        sa.Column("constrained", sa.JSON(), nullable=True),
        sa.Column("unconstrained_logprobs", sa.JSON(), nullable=True),
    ]


def upgrade() -> None:
    present = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("call")}
    for column in _columns():
        if column.name not in present:
            op.add_column("call", column)


def downgrade() -> None:
    op.drop_column("call", "unconstrained_logprobs")
    op.drop_column("call", "constrained")
