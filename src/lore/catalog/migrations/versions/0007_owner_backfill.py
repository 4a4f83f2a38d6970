"""Knowledge bases from before 0005 lose the guessed owner 'default': their owner is backfilled from content.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

0005 gave every existing KB the owner 'default', which is nobody's choice: a KB whose content belongs to
tenant acme was hidden from acme and shown to tenant 'default'. A KB whose ownership was never recorded
(owner 'default', no shares, no file owners, not created through the audited API) gets the empty owner,
which no API key matches (only the local operator sees it). `lore.owners.backfill` (run by
`lore db upgrade` and at service start) then names as owner the tenant of the KB's first file and shares
it with the tenants of its other files, reading their chunks in the store; a KB without content stays
without owner until the operator gives it one (`lore kb owner`).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NO_OWNER = ""  # lore.catalog.models.NO_OWNER (a migration does not import the models it outlives)


def upgrade() -> None:
    """One UPDATE (a single statement: nothing to resume on MySQL)."""
    kbs = sa.table("knowledge_bases", sa.column("id"), sa.column("name"), sa.column("owner_tenant"))
    shares = sa.table("kb_shares", sa.column("kb_id"))
    owners = sa.table("kb_file_owners", sa.column("kb_id"))
    audit = sa.table("audit_log", sa.column("action"), sa.column("kb"))
    op.execute(
        sa.update(kbs)
        .where(
            kbs.c.owner_tenant == "default",
            ~sa.exists().where(shares.c.kb_id == kbs.c.id),
            ~sa.exists().where(owners.c.kb_id == kbs.c.id),
            ~sa.exists().where(audit.c.action == "create", audit.c.kb == kbs.c.name),
        )
        .values(owner_tenant=NO_OWNER)
    )


def downgrade() -> None:
    """Give KBs without owner the 0005 default back."""
    kbs = sa.table("knowledge_bases", sa.column("owner_tenant"))
    op.execute(sa.update(kbs).where(kbs.c.owner_tenant == NO_OWNER).values(owner_tenant="default"))
