"""Access as data: KB owner tenant, shares, file ownership by (KB, path, tenant), the audit log.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lore.catalog import ddl
from lore.catalog.types import timestamp_type

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the owner column, the shares, file-owner and audit tables (each step skipped when done, so a
    MariaDB migration cut half-way through finishes on the next run)."""
    ddl.add_columns(
        "knowledge_bases", sa.Column("owner_tenant", sa.String(128), nullable=False, server_default="default")
    )
    ddl.create_table(
        "kb_shares",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", "tenant_id", name="pk_kb_shares"),
        sa.ForeignKeyConstraint(
            ["kb_id"], ["knowledge_bases.id"], name="fk_kb_shares_kb_id_knowledge_bases", ondelete="CASCADE"
        ),
    )
    ddl.create_table(
        "kb_file_owners",
        sa.Column("kb_id", sa.String(32), nullable=False),
        sa.Column("path_digest", sa.String(64), nullable=False),  # sha256 of the path: a short indexed key
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("created_at", timestamp_type(), nullable=False),
        sa.Column("updated_at", timestamp_type(), nullable=False),
        sa.PrimaryKeyConstraint("kb_id", "path_digest", name="pk_kb_file_owners"),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name="fk_kb_file_owners_kb_id_knowledge_bases",
            ondelete="CASCADE",
        ),
    )
    ddl.create_index("ix_kb_file_owners_kb_id_tenant_id", "kb_file_owners", ["kb_id", "tenant_id"])
    ddl.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", timestamp_type(), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("kb", sa.String(64), nullable=True),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    ddl.create_index("ix_audit_log_tenant_id_at", "audit_log", ["tenant_id", "at"])


def downgrade() -> None:
    """Drop what `upgrade` added."""
    op.drop_index("ix_audit_log_tenant_id_at", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index("ix_kb_file_owners_kb_id_tenant_id", table_name="kb_file_owners")
    op.drop_table("kb_file_owners")
    op.drop_table("kb_shares")
    with op.batch_alter_table("knowledge_bases", recreate="never") as batch:  # DROP would cascade to files
        batch.drop_column("owner_tenant")
