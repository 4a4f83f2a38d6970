"""Knowledge-base versions: staged builds, the active pointer, rollback, activation log, cache epoch."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from lore.catalog.models import ACTOR_LENGTH, VERSION_COUNTS, ActivationRow, KnowledgeBaseRow, VersionRow
from lore.catalog.records import RowRecord, json_or_none
from lore.errors import LoreError, NotFoundError


class VersionStatus(StrEnum):
    """The life cycle of a version: STAGED -> ACTIVE <-> RETIRED, or STAGED -> FAILED."""

    STAGED = "staged"
    ACTIVE = "active"
    RETIRED = "retired"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Version(RowRecord):
    """One build of a knowledge base as the catalog reports it."""

    CONVERT: ClassVar = {"status": VersionStatus, "gate_report": json_or_none}

    kb_id: str
    seq: int
    status: VersionStatus
    description: str
    files_added: int
    files_changed: int
    files_removed: int
    files_reused: int
    chunks_embedded: int
    chunks_reused: int
    embedding_model: str
    chunk_schema: str
    base_seq: int | None
    gate_passed: bool | None
    gate_report: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None
    activated_at: datetime | None

    @property
    def counts(self) -> dict[str, int]:
        """The build counters by name (files_added ... chunks_reused)."""
        return {name: getattr(self, name) for name in VERSION_COUNTS}


@dataclass(frozen=True, slots=True)
class Activation(RowRecord):
    """One move of the active pointer, as the activation log reports it."""

    id: int
    kb_id: str
    from_seq: int | None
    to_seq: int
    actor: str
    reason: str
    at: datetime


def _now() -> datetime:
    return datetime.now(UTC)


def _lock_kb(s: Session, kb_id: str) -> KnowledgeBaseRow:
    """Take the write lock on a knowledge base row first (SQLite: the DB; others: the row), then load it."""
    locked = s.execute(
        update(KnowledgeBaseRow)
        .where(KnowledgeBaseRow.id == kb_id)
        .values(cache_epoch=KnowledgeBaseRow.cache_epoch)
        .execution_options(synchronize_session=False)
    )
    row = s.get(KnowledgeBaseRow, kb_id, populate_existing=True)
    if not locked.rowcount or row is None:  # type: ignore[attr-defined]
        raise NotFoundError(f"knowledge base id '{kb_id}' not found")
    return row


def _version_row(s: Session, kb_id: str, seq: int) -> VersionRow:
    row = s.get(VersionRow, (kb_id, seq), populate_existing=True)
    if row is None:
        if s.get(KnowledgeBaseRow, kb_id) is None:
            raise NotFoundError(f"knowledge base id '{kb_id}' not found")
        raise NotFoundError(f"knowledge base id '{kb_id}' has no version {seq}")
    return row


class VersionsMixin:
    """Version methods of the Catalog; they join its thread-local transaction like every catalog call."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    def create_version(
        self,
        kb_id: str,
        *,
        description: str = "",
        base_seq: int | None = None,
        embedding_model: str,
        chunk_schema: str,
    ) -> Version:
        """Start a STAGED version numbered one past the highest seq of the knowledge base.

        The KB row's write lock (taken first) serialises concurrent creators, so seqs never collide."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            if base_seq is not None:
                _version_row(s, kb_id, base_seq)
            top = s.scalar(select(func.max(VersionRow.seq)).where(VersionRow.kb_id == kb_id))
            row = VersionRow(
                kb_id=kb_id,
                seq=(top or 0) + 1,
                status=VersionStatus.STAGED.value,
                description=description,
                embedding_model=embedding_model,
                chunk_schema=chunk_schema,
                base_seq=base_seq,
                created_at=_now(),
                **dict.fromkeys(VERSION_COUNTS, 0),
            )
            s.add(row)
            s.flush()
            return Version.from_row(row)

    def get_version(self, kb_id: str, seq: int) -> Version:
        """One version; NotFoundError naming the knowledge base and seq if it does not exist."""
        with self.transaction() as s:
            return Version.from_row(_version_row(s, kb_id, seq))

    def list_versions(self, kb_id: str) -> list[Version]:
        """Every version of a knowledge base, oldest (lowest seq) first."""
        query = select(VersionRow).where(VersionRow.kb_id == kb_id).order_by(VersionRow.seq)
        with self.transaction() as s:
            return [Version.from_row(row) for row in s.scalars(query)]

    def has_versions(self, kb_id: str) -> bool:
        """Whether the knowledge base has any version (is versioned), without loading them."""
        with self.transaction() as s:
            return s.scalar(select(VersionRow.seq).where(VersionRow.kb_id == kb_id).limit(1)) is not None

    def active_version(self, kb_id: str) -> Version | None:
        """The version the knowledge base serves, or None before the first activation."""
        with self.transaction() as s:
            kb = s.get(KnowledgeBaseRow, kb_id, populate_existing=True)
            if kb is None:
                raise NotFoundError(f"knowledge base id '{kb_id}' not found")
            return None if kb.active_seq is None else Version.from_row(_version_row(s, kb_id, kb.active_seq))

    def finish_version(
        self,
        kb_id: str,
        seq: int,
        *,
        counts: Mapping[str, int],
        gate_passed: bool | None,
        gate_report: Mapping[str, Any] | None,
        failed: bool = False,
    ) -> Version:
        """Record a build's counts and gate outcome; FAILED if it failed or the gate said no, else STAGED."""
        unknown = sorted(set(counts) - set(VERSION_COUNTS))
        if unknown:
            raise ValueError(
                f"unknown version counts {unknown}; expected some of {', '.join(VERSION_COUNTS)}"
            )
        bad = {name: value for name, value in counts.items() if not isinstance(value, int) or value < 0}
        if bad:
            raise ValueError(f"version counts must be non-negative integers, got {bad}")
        report = None if gate_report is None else json.dumps(gate_report, sort_keys=True, ensure_ascii=False)
        with self.transaction() as s:
            row = _version_row(s, kb_id, seq)
            if row.status != VersionStatus.STAGED or row.finished_at is not None:
                raise LoreError(
                    f"version {seq} of knowledge base id '{kb_id}' is already finished ({row.status})"
                )
            for name, value in counts.items():
                setattr(row, name, value)
            row.gate_passed, row.gate_report, row.finished_at = gate_passed, report, _now()
            if failed or gate_passed is False:
                row.status = VersionStatus.FAILED.value
            s.flush()
            return Version.from_row(row)

    def activate(self, kb_id: str, seq: int, *, actor: str, reason: str = "") -> Version:
        """Serve a finished STAGED or a RETIRED version, retiring the current one, in one transaction;
        `actor` (who moved the pointer: `key:<id>@<tenant>`, `cli@<tenant>`) goes to the activation log."""
        with self.transaction() as s:
            kb = _lock_kb(s, kb_id)
            row = _version_row(s, kb_id, seq)
            where = f"version {seq} of knowledge base '{kb.name}'"
            if row.status == VersionStatus.FAILED:
                why = "failed its quality gate" if row.gate_passed is False else "failed to build"
                raise LoreError(f"cannot activate {where}: it {why}")
            if row.status == VersionStatus.ACTIVE:
                raise LoreError(f"cannot activate {where}: it is already active")
            if row.finished_at is None:
                raise LoreError(f"cannot activate {where}: its build has not finished")
            previous, now = kb.active_seq, _now()
            if previous is not None:
                _version_row(s, kb_id, previous).status = VersionStatus.RETIRED.value
            row.status, row.activated_at = VersionStatus.ACTIVE.value, now
            kb.active_seq, kb.updated_at = seq, now
            kb.cache_epoch = KnowledgeBaseRow.cache_epoch + 1
            s.flush()
            self._log_activation(s, kb_id, previous, seq, actor=actor, reason=reason, at=now)
            return Version.from_row(row)

    def rollback(self, kb_id: str, *, actor: str, reason: str = "") -> Version:
        """Reactivate the newest RETIRED version older than the active one."""
        with self.transaction() as s:
            kb = _lock_kb(s, kb_id)
            if kb.active_seq is None:
                raise LoreError(f"cannot roll back knowledge base '{kb.name}': no version is active")
            target = s.scalar(
                select(func.max(VersionRow.seq)).where(
                    VersionRow.kb_id == kb_id,
                    VersionRow.seq < kb.active_seq,
                    VersionRow.status == VersionStatus.RETIRED.value,
                )
            )
            if target is None:
                raise LoreError(
                    f"cannot roll back knowledge base '{kb.name}': no retired version older than "
                    f"the active version {kb.active_seq}"
                )
            return self.activate(kb_id, target, actor=actor, reason=reason)

    def activation_log(self, kb_id: str) -> list[Activation]:
        """Every move of the active pointer of a knowledge base, oldest first."""
        query = select(ActivationRow).where(ActivationRow.kb_id == kb_id).order_by(ActivationRow.id)
        with self.transaction() as s:
            return [Activation.from_row(row) for row in s.scalars(query)]

    def cache_epoch(self, kb_id: str) -> int:
        """The knowledge base's cache epoch, bumped by every activation and every unversioned ingest."""
        with self.transaction() as s:
            epoch = s.scalar(select(KnowledgeBaseRow.cache_epoch).where(KnowledgeBaseRow.id == kb_id))
            if epoch is None:
                raise NotFoundError(f"knowledge base id '{kb_id}' not found")
            return epoch

    def bump_cache_epoch(self, kb_id: str) -> int:
        """Retire every cached result of the knowledge base on every replica (an unversioned KB changed)."""
        with self.transaction() as s:
            _lock_kb(s, kb_id).cache_epoch = KnowledgeBaseRow.cache_epoch + 1
        return self.cache_epoch(kb_id)

    @staticmethod
    def _log_activation(
        s: Session, kb_id: str, from_seq: int | None, to_seq: int, *, actor: str, reason: str, at: datetime
    ) -> None:
        """Append one row to the activation log (the actor cut to the column's length)."""
        actor = actor[:ACTOR_LENGTH]
        s.execute(
            insert(ActivationRow).values(
                kb_id=kb_id, from_seq=from_seq, to_seq=to_seq, actor=actor, reason=reason, at=at
            )
        )
