"""Access data in the catalog: KB shares, file owners keyed by (KB, path, tenant), and the audit log."""

from __future__ import annotations

import hashlib
import json
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, ForeignKey, Index, Integer, String, Text, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from lore.catalog.models import Base, KnowledgeBaseRow
from lore.errors import ConflictError, NotFoundError


class KbShareRow(Base):
    """A tenant (other than the owner) that may read a knowledge base and add its own files."""

    __tablename__ = "kb_shares"

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    created_at: Mapped[datetime]


class FileOwnerRow(Base):
    """The tenant that owns one file (upload or indexed) of a knowledge base."""

    __tablename__ = "kb_file_owners"
    __table_args__ = (Index("ix_kb_file_owners_kb_id_tenant_id", "kb_id", "tenant_id"),)

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    path_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    tenant_id: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


def _now() -> datetime:
    return datetime.now(UTC)


class AuditRow(Base):
    """One change of access or serving state: who (key id, tenant), what, on which KB, when."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_tenant_id_at", "tenant_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(default=_now)
    key_id: Mapped[str | None] = mapped_column(String(32))
    tenant_id: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    kb: Mapped[str | None] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[str] = mapped_column(Text, default="{}")


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit-log line."""

    id: int
    at: datetime
    key_id: str | None
    tenant_id: str
    action: str
    kb: str | None
    target: str
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "key_id": self.key_id,
            "tenant": self.tenant_id,
            "action": self.action,
            "kb": self.kb,
            "target": self.target,
            "detail": self.detail,
        }


def path_digest(path: str) -> str:
    """The indexed key of a file path (paths can be longer than an index may hold)."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


class AccessMixin:
    """Shares, file owners and the audit log; joins the Catalog's thread-local transaction."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    def _kb_id(self, s: Session, kb_id: str) -> KnowledgeBaseRow:
        row = s.get(KnowledgeBaseRow, kb_id)
        if row is None:
            raise NotFoundError(f"knowledge base id '{kb_id}' not found")
        return row

    # -- sharing -------------------------------------------------------------------------------

    def kb_tenants(self, kb_id: str) -> tuple[str | None, frozenset[str]]:
        """(owner tenant or None for a KB without owner, tenants it is shared with)."""
        with self.transaction() as s:
            owner = self._kb_id(s, kb_id).owner_tenant
            shared = s.scalars(select(KbShareRow.tenant_id).where(KbShareRow.kb_id == kb_id))
            return owner or None, frozenset(shared)

    def set_kb_owner(self, kb_id: str, tenant: str) -> str | None:
        """Make `tenant` the KB's owner (no longer a share); a previous owner keeps reading it as a share.
        Returns the previous owner (None: the KB had none)."""
        tenant = tenant.strip()
        if not tenant:
            raise ConflictError("owner: tenant must not be empty")
        with self.transaction() as s:
            row = self._kb_id(s, kb_id)
            before = row.owner_tenant or None
            s.execute(delete(KbShareRow).where(KbShareRow.kb_id == kb_id, KbShareRow.tenant_id == tenant))
            if before is not None and before != tenant:
                s.add(KbShareRow(kb_id=kb_id, tenant_id=before, created_at=_now()))
            row.owner_tenant = tenant
            s.flush()
            return before

    def share_kb(self, kb_id: str, tenant: str) -> bool:
        """Let `tenant` read the KB and add its own files; False if it already could."""
        tenant = tenant.strip()
        if not tenant:
            raise ConflictError("share: tenant must not be empty")
        with self.transaction() as s:
            owner = self._kb_id(s, kb_id).owner_tenant
            if not owner:
                raise ConflictError(
                    "share: the knowledge base has no owner; give it one first (lore kb owner)"
                )
            if owner == tenant or s.get(KbShareRow, (kb_id, tenant)) is not None:
                return False
            s.add(KbShareRow(kb_id=kb_id, tenant_id=tenant, created_at=_now()))
            return True

    def unshare_kb(self, kb_id: str, tenant: str) -> bool:
        """Take a share back (`Lore.unshare_kb` also removes the tenant's files); False if there was none."""
        with self.transaction() as s:
            done = cast(
                "CursorResult[Any]",
                s.execute(
                    delete(KbShareRow).where(KbShareRow.kb_id == kb_id, KbShareRow.tenant_id == tenant)
                ),
            )
            return bool(done.rowcount)

    # -- file owners ---------------------------------------------------------------------------

    def claim_files(self, kb_id: str, paths: list[str], tenant: str) -> None:
        """Record `tenant` as the owner of these files in one transaction (a path has one owner)."""
        now = _now()
        with self.transaction() as s:
            for path in dict.fromkeys(paths):
                row = s.get(FileOwnerRow, (kb_id, path_digest(path)))
                if row is None:
                    s.add(
                        FileOwnerRow(
                            kb_id=kb_id,
                            path_digest=path_digest(path),
                            path=path,
                            tenant_id=tenant,
                            created_at=now,
                            updated_at=now,
                        )
                    )
                elif row.tenant_id != tenant:
                    row.tenant_id, row.updated_at = tenant, now
            s.flush()

    def file_owner(self, kb_id: str, path: str) -> str | None:
        """The tenant that owns a file of the KB, or None if none is recorded."""
        with self.transaction() as s:
            row = s.get(FileOwnerRow, (kb_id, path_digest(path)))
            return None if row is None else row.tenant_id

    def claim_unowned_files(self, kb_id: str, owners: dict[str, str]) -> None:
        """Record each file's owner unless one is recorded (the backfill of KBs from before 0005)."""
        recorded = self.file_owners(kb_id)
        by_tenant: dict[str, list[str]] = {}
        for path, tenant in owners.items():
            if path not in recorded:
                by_tenant.setdefault(tenant, []).append(path)
        with self.transaction():
            for tenant, paths in sorted(by_tenant.items()):
                self.claim_files(kb_id, paths, tenant)

    def file_owners(self, kb_id: str) -> dict[str, str]:
        """Every recorded file of the KB and its owner tenant."""
        with self.transaction() as s:
            rows = s.execute(
                select(FileOwnerRow.path, FileOwnerRow.tenant_id).where(FileOwnerRow.kb_id == kb_id)
            )
            return {path: tenant for path, tenant in rows}

    def tenant_files(self, kb_id: str, tenant: str) -> list[str]:
        """The paths of the KB's files (uploads or indexed) that `tenant` owns, sorted."""
        with self.transaction() as s:
            query = select(FileOwnerRow.path).where(
                FileOwnerRow.kb_id == kb_id, FileOwnerRow.tenant_id == tenant
            )
            return sorted(s.scalars(query))

    def forget_file_owner(self, kb_id: str, path: str) -> None:
        """Drop the owner row of a file that is gone (neither uploaded nor indexed any more)."""
        with self.transaction() as s:
            s.execute(
                delete(FileOwnerRow).where(
                    FileOwnerRow.kb_id == kb_id, FileOwnerRow.path_digest == path_digest(path)
                )
            )

    def content_tenants(self, kb_id: str) -> frozenset[str]:
        """The tenants whose files the KB holds."""
        with self.transaction() as s:
            return frozenset(
                s.scalars(select(FileOwnerRow.tenant_id).where(FileOwnerRow.kb_id == kb_id).distinct())
            )

    # -- audit ---------------------------------------------------------------------------------

    def audit(
        self,
        action: str,
        *,
        tenant: str,
        key_id: str | None,
        kb: str | None = None,
        target: str = "",
        **detail: Any,
    ) -> None:
        """Append one line to the audit log (stamped with the time it is written)."""
        text = json.dumps(detail, ensure_ascii=False, default=str)
        with self.transaction() as s:
            s.add(AuditRow(key_id=key_id, tenant_id=tenant, action=action, kb=kb, target=target, detail=text))

    def audit_log(
        self, tenant: str | None = None, kb: str | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The newest audit lines first (of one tenant and/or KB)."""
        query = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit)
        if tenant is not None:
            query = query.where(AuditRow.tenant_id == tenant)
        if kb is not None:
            query = query.where(AuditRow.kb == kb)
        with self.transaction() as s:
            return [
                AuditEntry(r.id, r.at, r.key_id, r.tenant_id, r.action, r.kb, r.target, json.loads(r.detail))
                for r in s.scalars(query)
            ]
