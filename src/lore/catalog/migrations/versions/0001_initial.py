"""Initial catalog: knowledge bases, their files and the chunk ids of each file.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import Float64, timestamp_type

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.Column("updated_at", timestamp_type(), nullable=False),
    ]


def upgrade() -> None:
    """Create the knowledge_bases, files and chunks tables (each step skipped if already done)."""
    ddl.create_table(
        "knowledge_bases",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("embedding_provider", sa.String(64), nullable=False),
        sa.Column("embedding_model", sa.String(255), nullable=False),
        sa.Column("embedding_dim", sa.Integer(), nullable=False),
        sa.Column("chunk_schema", sa.String(64), nullable=False),
        sa.Column("store_backend", sa.String(64), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_knowledge_bases"),
        sa.UniqueConstraint("name", name="uq_knowledge_bases_name"),
    )
    ddl.create_table(
        "files",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("path", sa.String(4096), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime", Float64, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("document_count", sa.Integer(), nullable=False),
        sa.Column("ocr_pages", sa.Integer(), nullable=False),
        sa.Column("encoding", sa.String(64), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_files"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_files_kb_id_knowledge_bases", ondelete="CASCADE"
        ),
    )
    if ddl.dialect() != "mysql":  # too long a key for MySQL; 0006 keys files by a digest of the path
        ddl.create_index("ux_files_kb_id_path", "files", ["kb_id", "path"], unique=True)
    ddl.create_table(
        "chunks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("file_id", sa.String(32), nullable=False),
        sa.Column("chunk_id", sa.String(128), nullable=False),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.String(128), nullable=True),
        sa.Column("document_id", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_chunks"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_chunks_kb_id_knowledge_bases", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["file_id"], ["files.id"], name="fk_chunks_file_id_files", ondelete="CASCADE"
        ),
    )
    ddl.create_index("ix_chunks_kb_id_chunk_id", "chunks", ["kb_id", "chunk_id"])
    ddl.create_index("ix_chunks_file_id", "chunks", ["file_id"])


def downgrade() -> None:
    """Drop everything upgrade() created, children first."""
    op.drop_table("chunks")
    op.drop_table("files")
    op.drop_table("knowledge_bases")
