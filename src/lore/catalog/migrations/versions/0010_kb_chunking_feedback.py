"""Per-knowledge-base chunking settings, and feedback an administrator has handled.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

`kb_chunk_settings` holds a KB's own chunk sizes (its next build uses them instead of `[chunk]`);
`feedback.handled_at`/`handled_by`/`handled_as` (NULL: not handled) record who turned a rating into a FAQ
row and which. Every step is guarded, so on MySQL/MariaDB (DDL commits per statement) a stopped upgrade
resumes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import timestamp_type

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """The kb_chunk_settings table and three nullable feedback columns (rows stay in place)."""
    ddl.create_table(
        "kb_chunk_settings",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("child_size", sa.Integer(), nullable=False),
        sa.Column("child_overlap", sa.Integer(), nullable=False),
        sa.Column("parent_size", sa.Integer(), nullable=False),
        sa.Column("updated_by", sa.String(255), nullable=False),
        sa.Column("updated_at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_chunk_settings"),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_chunk_settings_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )
    ddl.add_columns(
        "feedback",
        sa.Column("handled_at", timestamp_type(), nullable=True),
        sa.Column("handled_by", sa.String(255), nullable=True),
        sa.Column("handled_as", sa.String(255), nullable=True),
    )


def downgrade() -> None:
    """Drop them again."""
    with op.batch_alter_table("feedback") as batch:
        for column in ("handled_as", "handled_by", "handled_at"):
            if ddl.has_column("feedback", column):
                batch.drop_column(column)
    if ddl.has_table("kb_chunk_settings"):
        op.drop_table("kb_chunk_settings")
