"""Per-version file manifests (what each version indexed) and the catalog-wide build lock."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lore.catalog.models import BuildLockRow, VersionFileRow
from lore.catalog.records import RowRecord
from lore.catalog.types import digest
from lore.errors import ConflictError

DEFAULT_LEASE_S = 60.0


class BuildLockedError(ConflictError):
    """Another build of the knowledge base holds its build lock (HTTP 409)."""


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One file as a version indexed it."""

    path: str
    sha256: str
    size: int
    mtime: float
    chunk_count: int
    change: str  # added | changed | reused
    chunk_schema: str
    embedding_model: str


@dataclass(frozen=True, slots=True)
class BuildLock(RowRecord):
    """Who holds a knowledge base's build lock."""

    kb_id: str
    host: str
    pid: int
    acquired_at: datetime
    token: str | None = None
    lease_expires_at: datetime | None = None

    def lease_expired(self, now: datetime | None = None) -> bool:
        """True when the holder stopped renewing its lease (a lock from before leases never expires)."""
        return self.lease_expires_at is not None and self.lease_expires_at <= (now or datetime.now(UTC))

    def held_by_dead_local_process(self) -> bool:
        """True when the holder ran on this host and its process is gone (killed or crashed), also
        when its pid now belongs to a process that started after the lock was taken (a restart)."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        started = _process_start(self.pid)
        return started is not None and started > self.acquired_at.timestamp() + 1.0


def _process_start(pid: int) -> float | None:
    """When a process started (Unix time), from /proc on Linux; None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


class ManifestsMixin:
    """Manifest and build-lock methods of the Catalog."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    def record_manifest(self, kb_id: str, seq: int, entries: Iterable[ManifestEntry]) -> None:
        """Store the manifest of version `seq` (replacing any earlier attempt of the same seq)."""
        rows = [{"kb_id": kb_id, "seq": seq, "path_hash": digest(e.path), **asdict(e)} for e in entries]
        with self.transaction() as s:
            s.execute(delete(VersionFileRow).where(VersionFileRow.kb_id == kb_id, VersionFileRow.seq == seq))
            if rows:
                s.execute(insert(VersionFileRow), rows)

    def versions_by_path(self, kb_id: str) -> dict[str, list[int]]:
        """For each path, the versions whose manifest lists it, oldest first (one query)."""
        query = (
            select(VersionFileRow.path, VersionFileRow.seq)
            .where(VersionFileRow.kb_id == kb_id)
            .order_by(VersionFileRow.seq)
        )
        out: dict[str, list[int]] = {}
        with self.transaction() as s:
            for path, seq in s.execute(query):
                out.setdefault(path, []).append(seq)
        return out

    def version_manifest(self, kb_id: str, seq: int) -> dict[str, ManifestEntry]:
        """The files version `seq` indexed, by path (empty for versions built before manifests)."""
        query = select(VersionFileRow).where(VersionFileRow.kb_id == kb_id, VersionFileRow.seq == seq)
        with self.transaction() as s:
            return {
                r.path: ManifestEntry(
                    r.path,
                    r.sha256,
                    r.size,
                    r.mtime,
                    r.chunk_count,
                    r.change,
                    r.chunk_schema,
                    r.embedding_model,
                )
                for r in s.scalars(query)
            }

    def acquire_build_lock(self, kb_id: str, kb_name: str, lease_s: float = DEFAULT_LEASE_S) -> BuildLock:
        """Take the KB's build lock for `lease_s` seconds (renew it with `renew_build_lock`), or raise
        `BuildLockedError` naming the holder. A lock whose lease ran out, or left by a dead local
        process, is taken over."""
        for _ in range(3):
            now = datetime.now(UTC)
            me = BuildLock(
                kb_id,
                socket.gethostname(),
                os.getpid(),
                now,
                uuid.uuid4().hex,
                now + timedelta(seconds=lease_s),
            )
            try:
                with self.transaction() as s:
                    s.execute(insert(BuildLockRow).values(asdict(me)))
                return me
            except IntegrityError:
                holder = self.build_lock_holder(kb_id)
                if holder is None:
                    continue  # released between our insert and our look
                if not (holder.lease_expired() or holder.held_by_dead_local_process()):
                    until = (
                        f", lease until {holder.lease_expires_at:%H:%M:%S} UTC"
                        if holder.lease_expires_at
                        else "; if that build is gone, release it with: lore unlock --kb " + kb_name
                    )
                    raise BuildLockedError(
                        f"another build of knowledge base {kb_name!r} is running (host {holder.host}, "
                        f"pid {holder.pid}, since {holder.acquired_at:%Y-%m-%d %H:%M:%S} UTC{until})"
                    ) from None
                self.release_build_lock(kb_id, holder)  # only that holder's row: two takers cannot both win
        raise BuildLockedError(f"could not take the build lock of knowledge base {kb_name!r}; try again")

    def renew_build_lock(self, lock: BuildLock, lease_s: float = DEFAULT_LEASE_S) -> bool:
        """Extend the lease of a lock we hold; False if it is no longer ours (taken over after expiry)."""
        with self.transaction() as s:
            result = s.execute(
                update(BuildLockRow)
                .where(
                    BuildLockRow.kb_id == lock.kb_id,
                    BuildLockRow.token == lock.token,
                )
                .values(lease_expires_at=datetime.now(UTC) + timedelta(seconds=lease_s))
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def build_lock_holder(self, kb_id: str) -> BuildLock | None:
        """The current build lock of a knowledge base, if any."""
        with self.transaction() as s:
            row = s.get(BuildLockRow, kb_id, populate_existing=True)
            return None if row is None else BuildLock.from_row(row)

    def release_build_lock(self, kb_id: str, lock: BuildLock | None = None) -> bool:
        """Release the lock (only if still held by `lock`'s holder when given); True if a row was removed."""
        query = delete(BuildLockRow).where(BuildLockRow.kb_id == kb_id)
        if lock is not None and lock.token is not None:
            query = query.where(BuildLockRow.token == lock.token)
        elif lock is not None:
            query = query.where(
                BuildLockRow.host == lock.host, BuildLockRow.pid == lock.pid, BuildLockRow.token.is_(None)
            )
        with self.transaction() as s:
            return bool(s.execute(query).rowcount)  # type: ignore[attr-defined]
