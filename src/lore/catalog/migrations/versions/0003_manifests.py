"""Per-version file manifests, the chunk schema and embedding model of each file, and the build lock.

Revision ID: 0003
Revises: 0002
Create Date: 2025-03-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add files.chunk_schema/embedding_model and create kb_version_files and kb_build_locks."""
    with op.batch_alter_table("files", recreate="never") as batch:
        batch.add_column(sa.Column("chunk_schema", sa.String(64), nullable=True))
        batch.add_column(sa.Column("embedding_model", sa.String(255), nullable=True))
    # Files indexed before this revision were indexed with their knowledge base's settings.
    op.execute("UPDATE files SET "
               "chunk_schema = (SELECT k.chunk_schema FROM knowledge_bases k WHERE k.id = files.kb_id), "
               "embedding_model = (SELECT k.embedding_model FROM knowledge_bases k WHERE k.id = files.kb_id) "
               "WHERE status = 'ingested'")
    op.create_table(
        "kb_version_files",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime", sa.Float(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("change", sa.String(16), nullable=False),
        sa.Column("chunk_schema", sa.String(64), nullable=False),
        sa.Column("embedding_model", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", "seq", "path", name="pk_kb_version_files"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_kb_version_files_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "kb_build_locks",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_build_locks"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_kb_build_locks_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    """Drop the manifest and lock tables and the two files columns."""
    op.drop_table("kb_build_locks")
    op.drop_table("kb_version_files")
    with op.batch_alter_table("files", recreate="never") as batch:
        batch.drop_column("embedding_model")
        batch.drop_column("chunk_schema")
