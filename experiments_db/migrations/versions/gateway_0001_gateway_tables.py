"""The gateway tables as commit cf4dd29's `create_all` made them: episode, call, client, run,
policy, sample, metric, checkpoint (see experiments_db.models); the first revision of the
gateway history.

A database written before Alembic managed these tables has some or all of them and no
gateway revision: a table that exists is left as it is (revision gateway_0002 adds the
columns an older one may lack), a missing one is created.

Revision ID: gateway_0001
Revises:
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "gateway_0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = ("gateway",)  # the gateway history
depends_on: str | Sequence[str] | None = None


def _serial_id() -> sa.Column:
    return sa.Column("id", sa.Integer(), nullable=False)


def _name_id() -> sa.Column:
    return sa.Column("id", sa.String(), nullable=False)


def _json(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, sa.JSON(), nullable=nullable)


Index = tuple[str, list[str], bool]  # name, columns, unique


def _tables() -> dict[str, tuple[list, list[Index]]]:
    """Each table's columns and constraints, and its indexes, in foreign-key order (fresh
    objects each call: a column belongs to the one table it was created into)."""
    return {
        "episode": (
            [
                _name_id(),
                sa.Column("api_key_sha256", sa.String(), nullable=False),
                sa.Column("run", sa.String(), nullable=False),
                sa.Column("task_id", sa.String(), nullable=False),
                sa.Column("task_family", sa.String(), nullable=True),
                sa.Column("group_id", sa.String(), nullable=True),
                sa.Column("client_id", sa.String(), nullable=True),
                sa.Column("status", sa.String(), nullable=False),
                sa.Column("created_at", sa.Float(), nullable=False),
                _json("reward", True),
                _json("metrics", True),
                sa.Column("finished_at", sa.Float(), nullable=True),
                sa.Column("abort_reason", sa.String(), nullable=True),
                sa.Column("step", sa.Integer(), nullable=True),
                sa.PrimaryKeyConstraint("id"),
            ],
            [
                ("ix_episode_api_key_sha256", ["api_key_sha256"], True),
                ("ix_episode_run", ["run"], False),
                ("ix_episode_group_id", ["group_id"], False),
                ("ix_episode_client_id", ["client_id"], False),
                ("ix_episode_status", ["status"], False),
            ],
        ),
        "call": (
            [
                _serial_id(),
                sa.Column("episode_id", sa.String(), sa.ForeignKey("episode.id"), nullable=False),
                sa.Column("index", sa.Integer(), nullable=False),
                sa.Column("request_id", sa.String(), nullable=False),
                sa.Column("choice_index", sa.Integer(), nullable=False),
                sa.Column("kind", sa.String(), nullable=False),
                sa.Column("model", sa.String(), nullable=False),
                _json("prompt_token_ids", False),
                _json("completion_token_ids", False),
                _json("logprobs", False),
                _json("top_logprobs", True),
                _json("versions", False),
                sa.Column("version", sa.Integer(), nullable=False),
                _json("token_texts", False),
                sa.Column("completion_text", sa.String(), nullable=False),
                sa.Column("prompt_text", sa.String(), nullable=True),
                sa.Column("finish_reason", sa.String(), nullable=False),
                sa.Column("started_at", sa.Float(), nullable=False),
                sa.Column("first_token_at", sa.Float(), nullable=False),
                sa.Column("finished_at", sa.Float(), nullable=False),
                _json("messages", True),
                sa.Column("temperature", sa.Float(), nullable=True),
                _json("tools", True),
                sa.Column("drift", sa.String(), nullable=True),
                sa.Column("continues", sa.Integer(), nullable=True),
                sa.Column("completion_prefix", sa.String(), nullable=True),
                sa.PrimaryKeyConstraint("id"),
                sa.UniqueConstraint("episode_id", "index"),
            ],
            [("ix_call_episode_id", ["episode_id"], False)],
        ),
        "client": (
            [
                _name_id(),
                sa.Column("name", sa.String(), nullable=False),
                sa.Column("code_version", sa.String(), nullable=True),
                _json("labels", False),
                sa.Column("status", sa.String(), nullable=False),
                sa.Column("registered_at", sa.Float(), nullable=False),
                sa.Column("gone_at", sa.Float(), nullable=True),
                sa.Column("gone_reason", sa.String(), nullable=True),
                sa.PrimaryKeyConstraint("id"),
            ],
            [("ix_client_status", ["status"], False)],
        ),
        "run": (
            [
                _name_id(),
                _json("settings", False),
                sa.Column("status", sa.String(), nullable=False),
                sa.Column("step", sa.Integer(), nullable=False),
                sa.Column("error", sa.String(), nullable=True),
                sa.Column("created_at", sa.Float(), nullable=False),
                sa.Column("updated_at", sa.Float(), nullable=False),
                sa.Column("resume_from", sa.String(), nullable=True),
                *(
                    sa.Column(counter, sa.Integer(), nullable=False)
                    for counter in (
                        "episodes_finished",
                        "episodes_aborted",
                        "samples_buffered",
                        "samples_trained",
                        "samples_dropped",
                    )
                ),
                sa.PrimaryKeyConstraint("id"),
            ],
            [("ix_run_status", ["status"], False)],
        ),
        "policy": (
            [
                _serial_id(),
                sa.Column("run", sa.String(), sa.ForeignKey("run.id"), nullable=False),
                sa.Column("name", sa.String(), nullable=False),
                sa.Column("base_model", sa.String(), nullable=False),
                _json("lora", True),
                sa.Column("version", sa.Integer(), nullable=False),
                sa.PrimaryKeyConstraint("id"),
                sa.UniqueConstraint("run", "name"),
            ],
            [("ix_policy_run", ["run"], False)],
        ),
        "sample": (
            [
                _serial_id(),
                sa.Column("episode_id", sa.String(), sa.ForeignKey("episode.id"), nullable=False),
                sa.Column("run", sa.String(), nullable=False),
                sa.Column("policy", sa.String(), nullable=False),
                sa.Column("call_index", sa.Integer(), nullable=False),
                _json("prompt_token_ids", False),
                _json("completion_token_ids", False),
                _json("behaviour_logprobs", False),
                _json("loss_mask", True),
                sa.Column("version", sa.Integer(), nullable=False),
                sa.Column("temperature", sa.Float(), nullable=True),
                sa.Column("continues", sa.Integer(), nullable=True),
                sa.Column("reward", sa.Float(), nullable=False),
                sa.Column("group_id", sa.String(), nullable=True),
                sa.Column("status", sa.String(), nullable=False),
                sa.Column("step_trained", sa.Integer(), nullable=True),
                sa.Column("drop_reason", sa.String(), nullable=True),
                sa.Column("created_at", sa.Float(), nullable=False),
                sa.PrimaryKeyConstraint("id"),
                sa.UniqueConstraint("episode_id", "policy", "call_index"),
            ],
            [
                ("ix_sample_episode_id", ["episode_id"], False),
                ("ix_sample_run", ["run"], False),
                ("ix_sample_status", ["status"], False),
            ],
        ),
        "metric": (
            [
                _serial_id(),
                sa.Column("run", sa.String(), nullable=False),
                sa.Column("step", sa.Integer(), nullable=False),
                sa.Column("policy", sa.String(), nullable=True),
                sa.Column("name", sa.String(), nullable=False),
                sa.Column("value", sa.Float(), nullable=False),
                sa.Column("time", sa.Float(), nullable=False),
                sa.PrimaryKeyConstraint("id"),
            ],
            [("ix_metric_run", ["run"], False), ("ix_metric_step", ["step"], False)],
        ),
        "checkpoint": (
            [
                _serial_id(),
                sa.Column("run", sa.String(), nullable=False),
                sa.Column("step", sa.Integer(), nullable=False),
                sa.Column("path", sa.String(), nullable=False),
                sa.Column("created_at", sa.Float(), nullable=False),
                sa.PrimaryKeyConstraint("id"),
                sa.UniqueConstraint("run", "step"),
            ],
            [("ix_checkpoint_run", ["run"], False)],
        ),
    }


def upgrade() -> None:
    present = set(sa.inspect(op.get_bind()).get_table_names())
    for table, (columns, indexes) in _tables().items():
        if table in present:
            continue
        op.create_table(table, *columns)
        for name, indexed, unique in indexes:
            op.create_index(name, table, indexed, unique=unique)


def downgrade() -> None:
    for table in reversed(list(_tables())):
        op.drop_table(table)  # drops the table's indexes with it
