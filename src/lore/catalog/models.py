"""Catalog tables (SQLAlchemy 2 declarative) and the plain records the catalog hands out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal, get_args

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from lore.catalog.records import RowRecord
from lore.catalog.types import Digest, Float64, UTCDateTime

FileStatus = Literal["ingested", "failed", "skipped", "unsupported", "empty"]
FILE_STATUSES: tuple[str, ...] = get_args(FileStatus)

# Named constraints let later migrations alter them, also through SQLite batch mode.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

NO_OWNER = ""  # knowledge_bases.owner_tenant of a KB without owner (a tenant is never empty)


class Base(DeclarativeBase):
    """Declarative base holding the catalog metadata."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime()}


class KnowledgeBaseRow(Base):
    """A knowledge base and the embedding/chunking/store settings it was built with."""

    __tablename__ = "knowledge_bases"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    embedding_provider: Mapped[str] = mapped_column(String(64))
    embedding_model: Mapped[str] = mapped_column(String(255))
    embedding_dim: Mapped[int] = mapped_column(Integer)
    chunk_schema: Mapped[str] = mapped_column(String(64))
    store_backend: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    # The serving version (no FK: kb_versions already points here; activate() keeps it consistent).
    active_seq: Mapped[int | None] = mapped_column(Integer)
    # Bumped on every activation so answer/retrieval caches keyed by it go stale at once.
    cache_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The tenant that owns the KB (also while it is empty); other tenants see it only when it is shared.
    # NO_OWNER: ownership never recorded (from before 0005, without content): only the operator sees it.
    owner_tenant: Mapped[str] = mapped_column(String(128), default="default", server_default="default")


class FileRow(Base):
    """One source file of a knowledge base and the outcome of its last ingest."""

    __tablename__ = "files"
    __table_args__ = (Index("ux_files_kb_id_path_hash", "kb_id", "path_hash", unique=True),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kb_id: Mapped[str] = mapped_column(String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(String(4096))
    # sha256 of path, the unique key (a 4096-character key is too long for MySQL); always set.
    path_hash: Mapped[str | None] = mapped_column(Digest)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    mtime: Mapped[float] = mapped_column(Float64)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    ocr_pages: Mapped[int] = mapped_column(Integer, default=0)
    encoding: Mapped[str | None] = mapped_column(String(64))
    chunk_schema: Mapped[str | None] = mapped_column(String(64))
    embedding_model: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ChunkRow(Base):
    """One chunk id produced from a file, kept so a rebuild can drop exactly that file's chunks."""

    __tablename__ = "chunks"
    __table_args__ = (
        Index("ix_chunks_kb_id_chunk_id", "kb_id", "chunk_id"),
        Index("ix_chunks_file_id", "file_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kb_id: Mapped[str] = mapped_column(String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    file_id: Mapped[str] = mapped_column(String(32), ForeignKey("files.id", ondelete="CASCADE"))
    chunk_id: Mapped[str] = mapped_column(String(128))
    chunk_index: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[str | None] = mapped_column(String(128))
    document_id: Mapped[str | None] = mapped_column(String(255))


class VersionRow(Base):
    """One build of a knowledge base, numbered by seq within the knowledge base."""

    __tablename__ = "kb_versions"
    __table_args__ = (CheckConstraint("status IN ('staged', 'active', 'retired', 'failed')", name="status"),)

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    status: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")
    files_added: Mapped[int] = mapped_column(Integer, default=0)
    files_changed: Mapped[int] = mapped_column(Integer, default=0)
    files_removed: Mapped[int] = mapped_column(Integer, default=0)
    files_reused: Mapped[int] = mapped_column(Integer, default=0)
    chunks_embedded: Mapped[int] = mapped_column(Integer, default=0)
    chunks_reused: Mapped[int] = mapped_column(Integer, default=0)
    embedding_model: Mapped[str] = mapped_column(String(255))
    chunk_schema: Mapped[str] = mapped_column(String(64))
    base_seq: Mapped[int | None] = mapped_column(Integer)
    gate_passed: Mapped[bool | None] = mapped_column(Boolean)
    gate_report: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    activated_at: Mapped[datetime | None]


# A version's file and chunk counts: its `files_*` and `chunks_*` columns, in table order.
ACTOR_LENGTH = 64  # who moved a KB's active version (`key:<id>@<tenant>`), cut to this
VERSION_COUNTS = tuple(
    c.name for c in VersionRow.__table__.columns if c.name.startswith(("files_", "chunks_"))
)


class ActivationRow(Base):
    """One move of a knowledge base's active pointer: who, why, when, from which seq to which."""

    __tablename__ = "kb_activations"
    __table_args__ = (Index("ix_kb_activations_kb_id", "kb_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kb_id: Mapped[str] = mapped_column(String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    from_seq: Mapped[int | None] = mapped_column(Integer)
    to_seq: Mapped[int] = mapped_column(Integer)
    actor: Mapped[str] = mapped_column(String(ACTOR_LENGTH))
    reason: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime]


class VersionFileRow(Base):
    """One file of a version's manifest: what was indexed, and whether it was added, changed or reused."""

    __tablename__ = "kb_version_files"

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    path: Mapped[str] = mapped_column(String(4096))
    path_hash: Mapped[str] = mapped_column(Digest, primary_key=True)  # sha256 of path
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    mtime: Mapped[float] = mapped_column(Float64)
    chunk_count: Mapped[int] = mapped_column(Integer)
    change: Mapped[str] = mapped_column(String(16))  # added | changed | reused
    chunk_schema: Mapped[str] = mapped_column(String(64))
    embedding_model: Mapped[str] = mapped_column(String(255))


class BuildLockRow(Base):
    """The build running on a knowledge base: one row per KB, so a second builder anywhere is refused."""

    __tablename__ = "kb_build_locks"

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    acquired_at: Mapped[datetime]
    token: Mapped[str | None] = mapped_column(String(32))  # the holder's; NULL for locks taken before 0006
    # The holder renews it while it builds; once past, another builder takes the lock over.
    lease_expires_at: Mapped[datetime | None]


@dataclass(frozen=True, slots=True)
class KnowledgeBase(RowRecord):
    """A knowledge base as the catalog reports it."""

    CONVERT: ClassVar = {"owner_tenant": lambda v: v or None}

    id: str
    name: str
    description: str
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    chunk_schema: str
    store_backend: str
    created_at: datetime
    updated_at: datetime
    owner_tenant: str | None = "default"  # None: no owner (only the local operator sees the KB)


@dataclass(frozen=True, slots=True)
class FileRecord(RowRecord):
    """A source file of a knowledge base as the catalog reports it."""

    id: str
    kb_id: str
    path: str
    sha256: str
    size: int
    mtime: float
    status: FileStatus
    error: str | None
    chunk_count: int
    document_count: int
    ocr_pages: int
    encoding: str | None
    created_at: datetime
    updated_at: datetime
    chunk_schema: str | None = None
    embedding_model: str | None = None
