"""Portable keys (path digests), a lease on the build lock, build jobs and their progress events.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

Every step is guarded, so on MySQL/MariaDB (DDL commits per statement) a stopped upgrade resumes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import Digest, LongText, digest, timestamp_type

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JOB_STATUSES = "status IN ('queued', 'running', 'succeeded', 'failed')"


def _fill_digests(table: str) -> None:
    """path_hash = sha256(path) for every row that lacks it."""
    t = sa.table(table, sa.column("kb_id"), sa.column("path"), sa.column("path_hash"))
    conn = op.get_bind()
    rows = conn.execute(sa.select(t.c.path).where(t.c.path_hash.is_(None)).distinct()).scalars().all()
    for path in rows:
        conn.execute(
            sa.update(t).where(t.c.path == path, t.c.path_hash.is_(None)).values(path_hash=digest(path))
        )


def _files() -> None:
    ddl.add_columns("files", sa.Column("path_hash", Digest, nullable=True))  # always set by the catalog
    _fill_digests("files")
    ddl.create_index("ux_files_kb_id_path_hash", "files", ["kb_id", "path_hash"], unique=True)
    # MySQL 8 refuses this one, MariaDB silently hashes it; dropped after its successor exists, which
    # also serves the foreign key on kb_id.
    ddl.drop_index("ux_files_kb_id_path", "files")


def _version_files() -> None:
    if ddl.has_column("kb_version_files", "path_hash"):
        return  # MySQL: created so by 0003
    ddl.add_columns("kb_version_files", sa.Column("path_hash", Digest, nullable=True))
    _fill_digests("kb_version_files")
    # SQLite rebuilds the table (no ALTER of a primary key); kb_version_files has no child table.
    with op.batch_alter_table("kb_version_files", recreate="auto") as batch:
        batch.alter_column("path_hash", existing_type=Digest, nullable=False)
        batch.alter_column(
            "path", existing_type=sa.String(1024), type_=sa.String(4096), existing_nullable=False
        )
        batch.drop_constraint("pk_kb_version_files", type_="primary")
        batch.create_primary_key("pk_kb_version_files", ["kb_id", "seq", "path_hash"])


def _mysql_collation() -> None:
    """utf8mb4 with binary collation for tables made before this revision with the database default."""
    conn = op.get_bind()
    rows = (
        conn.execute(
            sa.text(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME <> 'alembic_version' AND TABLE_COLLATION <> 'utf8mb4_bin'"
            )
        )
        .scalars()
        .all()
    )
    for name in rows:
        op.execute(f"ALTER TABLE `{name}` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")


def upgrade() -> None:
    """Digest keys for paths, lease columns on kb_build_locks, the jobs and job_events tables."""
    _files()
    _version_files()
    ddl.add_columns(
        "kb_build_locks",
        sa.Column("token", sa.String(32), nullable=True),
        sa.Column("lease_expires_at", timestamp_type(), nullable=True),
    )
    ddl.create_table(
        "jobs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("payload", LongText, nullable=False),
        sa.Column("result", LongText, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_status", sa.Integer(), nullable=True),
        sa.Column("worker", sa.String(255), nullable=True),
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.Column("started_at", timestamp_type(), nullable=True),
        sa.Column("heartbeat_at", timestamp_type(), nullable=True),
        sa.Column("finished_at", timestamp_type(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_jobs_kb_id_knowledge_bases", ondelete="CASCADE"
        ),
        sa.CheckConstraint(JOB_STATUSES, name="ck_jobs_status"),
    )
    ddl.create_index("ix_jobs_status_created_at", "jobs", ["status", "created_at"])
    ddl.create_index("ix_jobs_kb_id", "jobs", ["kb_id"])
    ddl.create_table(
        "job_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("data", LongText, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_events"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_job_events_job_id_jobs", ondelete="CASCADE"
        ),
    )
    ddl.create_index("ix_job_events_job_id_id", "job_events", ["job_id", "id"])
    if ddl.dialect() == "mysql":
        _mysql_collation()


def downgrade() -> None:
    """Drop the job tables and lease columns; paths keep their digests (harmless to 0004)."""
    op.drop_table("job_events")
    op.drop_table("jobs")
    with op.batch_alter_table("kb_build_locks", recreate="never") as batch:
        batch.drop_column("lease_expires_at")
        batch.drop_column("token")
