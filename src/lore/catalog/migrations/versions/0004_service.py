"""The HTTP service: api_keys, chat_sessions, chat_messages, feedback and traces.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import Float64, LongText, timestamp_type

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _at(name: str, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, timestamp_type(), nullable=nullable)


def upgrade() -> None:
    """Create the service tables."""
    ddl.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("datasets", sa.Text(), nullable=True),
        sa.Column("roles", sa.Text(), nullable=False),
        _at("created_at"),
        _at("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
    )
    ddl.create_index("ux_api_keys_key_hash", "api_keys", ["key_hash"], unique=True)
    ddl.create_table(
        "chat_sessions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        _at("created_at"),
        _at("updated_at"),
        sa.PrimaryKeyConstraint("id", name="pk_chat_sessions"),
    )
    ddl.create_index("ix_chat_sessions_tenant_id", "chat_sessions", ["tenant_id"])
    ddl.create_table(
        "chat_messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(32), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", LongText, nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("trace_id", sa.String(32), nullable=True),
        _at("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_chat_messages"),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["chat_sessions.id"],
            name="fk_chat_messages_session_id_chat_sessions",
            ondelete="CASCADE",
        ),
        sa.CheckConstraint("role IN ('user', 'assistant')", name="ck_chat_messages_role"),
    )
    ddl.create_index("ix_chat_messages_session_id", "chat_messages", ["session_id"])
    ddl.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("rating", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("question", LongText, nullable=False),
        sa.Column("answer", LongText, nullable=False),
        sa.Column("citations", LongText, nullable=False),
        _at("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_feedback"),
        sa.CheckConstraint("rating IN (-1, 1)", name="ck_feedback_rating"),
    )
    ddl.create_index("ix_feedback_tenant_id", "feedback", ["tenant_id"])
    ddl.create_table(
        "traces",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("session_id", sa.String(32), nullable=True),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("kb_version", sa.Integer(), nullable=True),
        sa.Column("transport", sa.String(16), nullable=False),
        sa.Column("question", LongText, nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("route", sa.String(32), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("first_token_ms", Float64, nullable=True),
        sa.Column("total_ms", Float64, nullable=False),
        sa.Column("data", LongText, nullable=False),
        _at("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_traces"),
    )
    ddl.create_index("ix_traces_tenant_id_created_at", "traces", ["tenant_id", "created_at"])


def downgrade() -> None:
    """Drop the service tables."""
    op.drop_table("traces")
    op.drop_table("feedback")
    op.drop_table("chat_messages")
    op.drop_table("chat_sessions")
    op.drop_table("api_keys")
