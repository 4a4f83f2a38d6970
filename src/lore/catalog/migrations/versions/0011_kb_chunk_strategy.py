"""A knowledge base's own chunking strategy.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-08

`kb_chunk_settings.strategy` ("structure" or "semantic") is how the KB's next build cuts prose, beside its
own sizes; rows set before it keep "structure" (the server default), the only strategy there was. The step
is guarded, so on MySQL/MariaDB (DDL commits per statement) a stopped upgrade resumes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the column (rows stay in place and get "structure")."""
    ddl.add_columns(
        "kb_chunk_settings",
        sa.Column("strategy", sa.String(16), nullable=False, server_default="structure"),
    )


def downgrade() -> None:
    """Drop it again."""
    if ddl.has_column("kb_chunk_settings", "strategy"):
        with op.batch_alter_table("kb_chunk_settings") as batch:
            batch.drop_column("strategy")
