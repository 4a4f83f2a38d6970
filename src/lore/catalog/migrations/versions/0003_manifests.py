"""Per-version file manifests, the chunk schema and embedding model of each file, and the build lock.

Revision ID: 0003
Revises: 0002
Create Date: 2025-03-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import Digest, Float64, timestamp_type

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add files.chunk_schema/embedding_model and create kb_version_files and kb_build_locks."""
    ddl.add_columns(
        "files",
        sa.Column("chunk_schema", sa.String(64), nullable=True),
        sa.Column("embedding_model", sa.String(255), nullable=True),
    )
    # Files indexed before this revision were indexed with their knowledge base's settings.
    op.execute(
        "UPDATE files SET "
        "chunk_schema = (SELECT k.chunk_schema FROM knowledge_bases k WHERE k.id = files.kb_id), "
        "embedding_model = (SELECT k.embedding_model FROM knowledge_bases k WHERE k.id = files.kb_id) "
        "WHERE status = 'ingested'"
    )
    # MySQL refuses a key over 3,072 bytes (kb_id, seq and a 1024-character utf8mb4 path): there the
    # key holds the path's digest from the start; 0006 moves the other databases to the same key.
    mysql = ddl.dialect() == "mysql"
    key = ["kb_id", "seq", "path_hash" if mysql else "path"]
    ddl.create_table(
        "kb_version_files",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("path", sa.String(4096 if mysql else 1024), nullable=False),
        *([sa.Column("path_hash", Digest, nullable=False)] if mysql else []),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime", Float64, nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("change", sa.String(16), nullable=False),
        sa.Column("chunk_schema", sa.String(64), nullable=False),
        sa.Column("embedding_model", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint(*key, name="pk_kb_version_files"),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_version_files_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )
    ddl.create_table(
        "kb_build_locks",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("acquired_at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", name="pk_kb_build_locks"),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_build_locks_kb_id_knowledge_bases",
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
