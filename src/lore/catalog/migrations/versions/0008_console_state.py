"""Chunk edits, OCR page reviews and saved eval sets as catalog rows (they were JSON files on one disk).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

Before this revision the console kept them under `<storage dir>/chunk_edits/<kb>.json`,
`ocr_reviews/<kb>.json` and `eval_sets/<kb>/<name>.jsonl`, which another replica's disk does not have.
The files are imported into these tables by `lore db upgrade` (and on first use), then renamed
`*.imported`. Keys hold a path's digest, never the path (MariaDB's 3,072-byte key limit). Every step is
guarded, so on MySQL/MariaDB (DDL commits per statement) a stopped upgrade resumes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import Digest, LongText, timestamp_type

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _kb_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["kb_id"], ["knowledge_bases.id"], name=f"fk_{table}_kb_id_knowledge_bases", ondelete="CASCADE"
    )


def upgrade() -> None:
    """The chunk_edits, ocr_page_reviews and eval_sets tables."""
    ddl.create_table(
        "chunk_edits",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("file_hash", Digest, nullable=False),
        sa.Column("chunk_index", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("file", sa.String(4096), nullable=False),
        sa.Column("original_sha", sa.String(64), nullable=False),
        sa.Column("original", LongText, nullable=False),
        sa.Column("text", LongText, nullable=True),
        sa.Column("off", sa.Boolean(), nullable=False),
        sa.Column("by", sa.String(255), nullable=False),
        sa.Column("at", timestamp_type(), nullable=False),
        sa.Column("applied_in", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("kb_id", "file_hash", "chunk_index", name="pk_chunk_edits"),
        _kb_fk("chunk_edits"),
    )
    ddl.create_table(
        "ocr_page_reviews",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("file_hash", Digest, nullable=False),
        sa.Column("page", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("file", sa.String(4096), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("by", sa.String(255), nullable=False),
        sa.Column("at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", "file_hash", "page", name="pk_ocr_page_reviews"),
        _kb_fk("ocr_page_reviews"),
    )
    ddl.create_table(
        "eval_sets",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("body", LongText, nullable=False),
        sa.Column("questions", sa.Integer(), nullable=False),
        sa.Column("saved_by", sa.String(255), nullable=False),
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.Column("updated_at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", "name", name="pk_eval_sets"),
        _kb_fk("eval_sets"),
    )


def downgrade() -> None:
    """Drop the three tables (their rows are not written back to files)."""
    for table in ("eval_sets", "ocr_page_reviews", "chunk_edits"):
        op.drop_table(table)
