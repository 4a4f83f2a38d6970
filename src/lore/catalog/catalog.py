"""The catalog: knowledge bases, files, chunk ids and versions in a SQL database migrated by Alembic."""

from __future__ import annotations

import functools
import inspect
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FunctionType, TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from alembic.util import CommandError
from sqlalchemy import Engine, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from lore.catalog.access import AccessMixin, FileOwnerRow, KbShareRow
from lore.catalog.console import ChunkEditRow, ConsoleMixin, EvalSetRow, PageReviewRow
from lore.catalog.job_records import JobEventRow, JobRow
from lore.catalog.jobs import JobsMixin
from lore.catalog.kb_settings import KbChunkSettingsRow, KbSettingsMixin
from lore.catalog.manifests import ManifestsMixin
from lore.catalog.migrate import check_schema, upgrade
from lore.catalog.models import (
    FILE_STATUSES,
    ActivationRow,
    BuildLockRow,
    ChunkRow,
    FileRecord,
    FileRow,
    FileStatus,
    KnowledgeBase,
    KnowledgeBaseRow,
    VersionFileRow,
    VersionRow,
)
from lore.catalog.service import ServiceMixin
from lore.catalog.types import digest
from lore.catalog.versions import VersionsMixin
from lore.config import CatalogSettings
from lore.errors import ConflictError, LoreError, MissingDependencyError, NotFoundError
from lore.sqlite_wal import switch_to_wal

log = logging.getLogger("lore.catalog")
_KB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# (chunk_id, chunk_index, parent_id, document_id)
ChunkRef = tuple[str, int, str | None, str | None]
P = ParamSpec("P")
R = TypeVar("R")


def mask_url(url: str) -> str:
    """The URL with any password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparseable URL is still worth showing, masked by hand
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def check_kb_name(name: str) -> str:
    """`name` if it is a valid knowledge base name (1-64 letters, digits, '_' or '-'); LoreError otherwise."""
    if not _KB_NAME.fullmatch(name):
        raise LoreError(f"invalid knowledge base name {name!r}: use 1-64 letters, digits, '_' or '-'")
    return name


def _file_key(kb_id: str, path: str) -> tuple[Any, ...]:
    """The WHERE terms of one file: its KB and path digest (the unique key), and the path itself."""
    return FileRow.kb_id == kb_id, FileRow.path_hash == digest(path), FileRow.path == path


def _now() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        switch_to_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def open_engine(url: str, pool: CatalogSettings) -> Engine:
    """An engine for the catalog URL with the configured pool (SQLite: WAL, foreign keys; its folder made)."""
    parsed = make_url(url)
    options: dict[str, Any] = {"pool_pre_ping": pool.pool_pre_ping, "pool_recycle": pool.pool_recycle_s}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
    else:
        options.update(
            pool_size=pool.pool_size, max_overflow=pool.max_overflow, pool_timeout=pool.pool_timeout_s
        )
    try:
        engine = create_engine(parsed, **options)
    except ImportError as exc:
        extra = {"psycopg": "lore-kb[postgres]", "psycopg2": "lore-kb[postgres]", "pymysql": "lore-kb[mysql]"}
        hint = extra.get(exc.name or "", exc.name or "the database driver")
        raise MissingDependencyError(
            f"cannot open catalog {mask_url(url)}: database driver missing ({exc}); "
            f"install it with: pip install '{hint}'"
        ) from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def retry_once(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """Run a catalog call again, once, when its connection was dropped (database restart, idle cut-off);
    a call joining an outer transaction is left to that transaction's owner."""

    @functools.wraps(method)
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if getattr(self._local, "session", None) is not None:
            return method(self, *args, **kwargs)
        try:
            return method(self, *args, **kwargs)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            log.warning("catalog connection lost (%s); retrying once", type(exc.orig).__name__)
            return method(self, *args, **kwargs)

    return call


def _with_retries(cls: type[R]) -> type[R]:
    """Wrap every public method of the catalog (its mixins' included) in `retry_once`."""
    for name in dir(cls):
        value = inspect.getattr_static(cls, name)
        if (
            not name.startswith("_")
            and name not in ("transaction", "close")
            and isinstance(value, FunctionType)
        ):
            setattr(cls, name, retry_once(value))
    return cls


@_with_retries
class Catalog(
    VersionsMixin, ManifestsMixin, ServiceMixin, JobsMixin, AccessMixin, ConsoleMixin, KbSettingsMixin
):
    """Knowledge bases, files, chunk ids, versions and jobs in a database at this code's schema revision.

    Opening it checks the revision; an embedded SQLite catalog is migrated on open (`auto_upgrade`),
    a server database must be migrated first with `lore db upgrade` (or `Catalog.upgrade`)."""

    def __init__(self, url: str, settings: CatalogSettings | None = None) -> None:
        self.url = url
        settings = settings or CatalogSettings()
        try:
            self.engine = open_engine(url, settings)
        except (SQLAlchemyError, OSError) as exc:
            raise LoreError(f"cannot open catalog {mask_url(url)}: {exc}") from exc
        auto = settings.auto_upgrade == "always" or (
            settings.auto_upgrade == "sqlite" and self.engine.dialect.name == "sqlite"
        )
        try:
            if auto:
                upgrade(self.engine)
            else:
                check_schema(self.engine, mask_url(url))
        except LoreError:
            self.engine.dispose()
            raise
        except (SQLAlchemyError, OSError, CommandError) as exc:
            self.engine.dispose()
            reason = getattr(exc, "orig", None) or exc
            raise LoreError(f"cannot open catalog {mask_url(url)}: {reason}") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._local = threading.local()

    def close(self) -> None:
        """Release every pooled connection."""
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction; catalog calls made inside it (same thread) join it and commit together."""
        current: Session | None = getattr(self._local, "session", None)
        if current is not None:
            yield current
            return
        with self._sessions.begin() as session:
            self._local.session = session
            try:
                yield session
            finally:
                self._local.session = None

    # -- knowledge bases -------------------------------------------------------------------

    def create_kb(
        self,
        name: str,
        *,
        embedding_provider: str,
        embedding_model: str,
        embedding_dim: int,
        chunk_schema: str,
        store_backend: str,
        description: str = "",
        owner_tenant: str = "default",
    ) -> KnowledgeBase:
        """Register a new knowledge base; the name must be unused and 1-64 letters, digits, '_' or '-'.

        Names are global and unique whatever their case (SQLite, PostgreSQL and MariaDB agree): a taken name
        is refused with one message whoever holds it (409)."""
        check_kb_name(name)
        if embedding_dim <= 0:
            raise LoreError(
                f"knowledge base '{name}': embedding dimension must be positive, got {embedding_dim}"
            )
        duplicate = ConflictError(f"knowledge base name '{name}' is not available; choose another name")
        now = _now()
        with self.transaction() as s:
            if self.kb_name_taken(name):
                raise duplicate
            row = KnowledgeBaseRow(
                id=_new_id(),
                name=name,
                description=description,
                embedding_provider=embedding_provider,
                embedding_model=embedding_model,
                embedding_dim=embedding_dim,
                chunk_schema=chunk_schema,
                store_backend=store_backend,
                created_at=now,
                updated_at=now,
                owner_tenant=owner_tenant.strip() or "default",
            )
            s.add(row)
            try:
                s.flush()
            except IntegrityError as exc:  # created concurrently by another process
                raise duplicate from exc
            return KnowledgeBase.from_row(row)

    def kb_name_taken(self, name: str) -> bool:
        """Whether a KB has this name in any case (KB names are ASCII: `lower` agrees on every database)."""
        with self.transaction() as s:
            query = select(KnowledgeBaseRow.id).where(func.lower(KnowledgeBaseRow.name) == name.lower())
            return s.scalar(query.limit(1)) is not None

    def get_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base with this name; NotFoundError if there is none."""
        with self.transaction() as s:
            return KnowledgeBase.from_row(self._kb_row(s, name))

    def list_kbs(self) -> list[KnowledgeBase]:
        """Every knowledge base, by name."""
        with self.transaction() as s:
            rows = s.scalars(select(KnowledgeBaseRow).order_by(KnowledgeBaseRow.name))
            return [KnowledgeBase.from_row(row) for row in rows]

    def delete_kb(self, name: str) -> None:
        """Remove a knowledge base with every row it owns (files, chunks, versions, shares, file owners,
        jobs, chunk edits, OCR reviews, eval sets, chunk settings); NotFoundError if there is none."""
        with self.transaction() as s:
            kb_id = self._kb_row(s, name).id
            jobs = select(JobRow.id).where(JobRow.kb_id == kb_id).scalar_subquery()
            s.execute(delete(JobEventRow).where(JobEventRow.job_id.in_(jobs)))
            s.execute(delete(JobRow).where(JobRow.kb_id == kb_id))
            for table in (ChunkEditRow, PageReviewRow, EvalSetRow, KbChunkSettingsRow):
                s.execute(delete(table).where(table.kb_id == kb_id))
            s.execute(delete(ActivationRow).where(ActivationRow.kb_id == kb_id))
            s.execute(delete(KbShareRow).where(KbShareRow.kb_id == kb_id))
            s.execute(delete(FileOwnerRow).where(FileOwnerRow.kb_id == kb_id))
            s.execute(delete(VersionFileRow).where(VersionFileRow.kb_id == kb_id))
            s.execute(delete(BuildLockRow).where(BuildLockRow.kb_id == kb_id))
            s.execute(delete(VersionRow).where(VersionRow.kb_id == kb_id))
            s.execute(delete(ChunkRow).where(ChunkRow.kb_id == kb_id))
            s.execute(delete(FileRow).where(FileRow.kb_id == kb_id))
            s.execute(delete(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb_id))

    @staticmethod
    def _kb_row(s: Session, name: str) -> KnowledgeBaseRow:
        row = s.scalar(select(KnowledgeBaseRow).where(KnowledgeBaseRow.name == name))
        if row is None or row.name != name:  # exactly: MariaDB's collation ignores trailing spaces
            raise NotFoundError(f"knowledge base '{name}' not found; create it with: lore kb create {name}")
        return row

    # -- files -----------------------------------------------------------------------------

    def upsert_file(
        self,
        kb_id: str,
        path: str,
        *,
        sha256: str,
        size: int,
        mtime: float,
        status: FileStatus,
        error: str | None = None,
        chunk_count: int = 0,
        document_count: int = 0,
        ocr_pages: int = 0,
        encoding: str | None = None,
        chunk_schema: str | None = None,
        embedding_model: str | None = None,
    ) -> FileRecord:
        """Insert or update the record of one file, keyed by (kb_id, path)."""
        if status not in FILE_STATUSES:
            raise ValueError(f"unknown file status {status!r}; expected one of {', '.join(FILE_STATUSES)}")
        now = _now()
        with self.transaction() as s:
            if s.get(KnowledgeBaseRow, kb_id) is None:
                raise NotFoundError(f"knowledge base id '{kb_id}' not found")
            row = s.scalar(select(FileRow).where(*_file_key(kb_id, path)))
            if row is None:
                row = FileRow(id=_new_id(), kb_id=kb_id, path=path, path_hash=digest(path), created_at=now)
                s.add(row)
            row.sha256, row.size, row.mtime, row.status, row.error = sha256, size, mtime, status, error
            row.chunk_count, row.document_count = chunk_count, document_count
            row.ocr_pages, row.encoding, row.updated_at = ocr_pages, encoding, now
            row.chunk_schema, row.embedding_model = chunk_schema, embedding_model
            s.execute(update(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb_id).values(updated_at=now))
            s.flush()
            return FileRecord.from_row(row)

    def get_file(self, kb_id: str, path: str) -> FileRecord | None:
        """The record of one file, or None if it was never seen."""
        with self.transaction() as s:
            row = s.scalar(select(FileRow).where(*_file_key(kb_id, path)))
            return None if row is None else FileRecord.from_row(row)

    def list_files(self, kb_id: str, status: FileStatus | None = None) -> list[FileRecord]:
        """The files of a knowledge base by path, optionally only those with one status."""
        query = select(FileRow).where(FileRow.kb_id == kb_id).order_by(FileRow.path)
        if status is not None:
            query = query.where(FileRow.status == status)
        with self.transaction() as s:
            return [FileRecord.from_row(row) for row in s.scalars(query)]

    def delete_file(self, kb_id: str, path: str) -> bool:
        """Remove a file record and its chunk rows; False if there was none."""
        with self.transaction() as s:
            file_id = s.scalar(select(FileRow.id).where(*_file_key(kb_id, path)))
            if file_id is None:
                return False
            s.execute(delete(ChunkRow).where(ChunkRow.file_id == file_id))
            s.execute(delete(FileRow).where(FileRow.id == file_id))
            s.execute(update(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb_id).values(updated_at=_now()))
            return True

    # -- chunks ----------------------------------------------------------------------------

    def set_file_chunks(self, file_id: str, chunk_rows: Sequence[ChunkRef]) -> None:
        """Replace the chunk rows of a file with (chunk_id, chunk_index, parent_id, document_id) rows."""
        with self.transaction() as s:
            kb_id = s.scalar(select(FileRow.kb_id).where(FileRow.id == file_id))
            if kb_id is None:
                raise NotFoundError(f"file id '{file_id}' not found")
            s.execute(delete(ChunkRow).where(ChunkRow.file_id == file_id))
            if chunk_rows:
                s.execute(
                    insert(ChunkRow),
                    [
                        {
                            "kb_id": kb_id,
                            "file_id": file_id,
                            "chunk_id": chunk_id,
                            "chunk_index": index,
                            "parent_id": parent_id,
                            "document_id": document_id,
                        }
                        for chunk_id, index, parent_id, document_id in chunk_rows
                    ],
                )

    def recorded_chunk_ids(self, kb_id: str, chunk_ids: Sequence[str]) -> set[str]:
        """Which of `chunk_ids` the catalog records for a knowledge base (batched IN queries)."""
        found: set[str] = set()
        with self.transaction() as s:
            for i in range(0, len(chunk_ids), 500):
                batch = list(chunk_ids[i : i + 500])
                found.update(
                    s.scalars(
                        select(ChunkRow.chunk_id).where(ChunkRow.kb_id == kb_id, ChunkRow.chunk_id.in_(batch))
                    )
                )
        return found

    def kb_chunk_ids(self, kb_id: str) -> dict[str, list[str]]:
        """Every file's chunk ids in chunk order, by file id (one query for the whole KB)."""
        query = (
            select(ChunkRow.file_id, ChunkRow.chunk_id)
            .where(ChunkRow.kb_id == kb_id)
            .order_by(ChunkRow.file_id, ChunkRow.chunk_index, ChunkRow.id)
        )
        out: dict[str, list[str]] = {}
        with self.transaction() as s:
            for file_id, chunk_id in s.execute(query):
                out.setdefault(file_id, []).append(chunk_id)
        return out

    def file_chunk_ids(self, file_id: str) -> list[str]:
        """The chunk ids of a file in chunk order."""
        query = select(ChunkRow.chunk_id).where(ChunkRow.file_id == file_id)
        with self.transaction() as s:
            return list(s.scalars(query.order_by(ChunkRow.chunk_index, ChunkRow.id)))

    def count_chunks(self, kb_id: str) -> int:
        """How many chunk rows a knowledge base has."""
        with self.transaction() as s:
            return s.scalar(select(func.count()).select_from(ChunkRow).where(ChunkRow.kb_id == kb_id)) or 0
