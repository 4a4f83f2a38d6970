"""Knowledge-base versions: the kb_versions and kb_activations tables, the active pointer and cache epoch.

Revision ID: 0002
Revises: 0001
Create Date: 2025-02-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import timestamp_type

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COUNTS = (
    "files_added",
    "files_changed",
    "files_removed",
    "files_reused",
    "chunks_embedded",
    "chunks_reused",
)


def upgrade() -> None:
    """Add active_seq/cache_epoch to knowledge_bases and create the version and activation tables."""
    # Plain ALTER TABLE ... ADD COLUMN keeps every existing row in place.
    ddl.add_columns(
        "knowledge_bases",
        sa.Column("active_seq", sa.Integer(), nullable=True),
        sa.Column("cache_epoch", sa.Integer(), nullable=False, server_default="0"),
    )
    ddl.create_table(
        "kb_versions",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        *[sa.Column(name, sa.Integer(), nullable=False) for name in _COUNTS],
        sa.Column("embedding_model", sa.String(255), nullable=False),
        sa.Column("chunk_schema", sa.String(64), nullable=False),
        sa.Column("base_seq", sa.Integer(), nullable=True),
        sa.Column("gate_passed", sa.Boolean(), nullable=True),
        sa.Column("gate_report", sa.Text(), nullable=True),
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.Column("finished_at", timestamp_type(), nullable=True),
        sa.Column("activated_at", timestamp_type(), nullable=True),
        sa.PrimaryKeyConstraint("kb_id", "seq", name="pk_kb_versions"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_kb_versions_kb_id_knowledge_bases", ondelete="CASCADE"
        ),
        sa.CheckConstraint(
            "status IN ('staged', 'active', 'retired', 'failed')", name="ck_kb_versions_status"
        ),
    )
    ddl.create_table(
        "kb_activations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("from_seq", sa.Integer(), nullable=True),
        sa.Column("to_seq", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_kb_activations"),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_activations_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )
    ddl.create_index("ix_kb_activations_kb_id", "kb_activations", ["kb_id"])


def downgrade() -> None:
    """Drop the version tables and the two knowledge_bases columns, keeping every 0001 row."""
    op.drop_table("kb_activations")
    op.drop_table("kb_versions")
    # recreate="never": native DROP COLUMN (SQLite >= 3.35). Recreating knowledge_bases instead would
    # DROP the parent table, which cascades to files and chunks when foreign_keys=ON.
    with op.batch_alter_table("knowledge_bases", recreate="never") as batch:
        batch.drop_column("cache_epoch")
        batch.drop_column("active_seq")
