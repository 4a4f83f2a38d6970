"""Cancelling a job, and API keys that expire and record their last use.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

`jobs.cancelled_by` names who asked a job to stop (a running build stops at its next file);
`api_keys.expires_at` (NULL: never) and `last_used_at` (written at most once a minute per key). Every
step is guarded, so on MySQL/MariaDB (DDL commits per statement) a stopped upgrade resumes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import timestamp_type

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the three nullable columns (rows stay in place)."""
    ddl.add_columns("jobs", sa.Column("cancelled_by", sa.String(255), nullable=True))
    ddl.add_columns(
        "api_keys",
        sa.Column("expires_at", timestamp_type(), nullable=True),
        sa.Column("last_used_at", timestamp_type(), nullable=True),
    )


def downgrade() -> None:
    """Drop them again."""
    for table, columns in (("api_keys", ("last_used_at", "expires_at")), ("jobs", ("cancelled_by",))):
        with op.batch_alter_table(table) as batch:
            for column in columns:
                if ddl.has_column(table, column):
                    batch.drop_column(column)
