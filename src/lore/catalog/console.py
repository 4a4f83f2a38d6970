"""What administrators change in the console, kept in the catalog so every replica sees it: chunk edits,
OCR page reviews and saved eval sets, each row scoped to its knowledge base (deleted with it)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any, ClassVar, cast

from sqlalchemy import Boolean, ForeignKey, Integer, String, delete, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from lore.catalog.models import Base
from lore.catalog.records import RowRecord
from lore.catalog.types import Digest, LongText, digest
from lore.catalog.versions import _lock_kb
from lore.schema import Chunk


def _kb_id() -> Mapped[str]:
    """The knowledge base a row belongs to (its rows go with it)."""
    return mapped_column(String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True)


class ChunkEditRow(Base):
    """One console edit of a chunk, keyed by KB, file (its path digest) and chunk position."""

    __tablename__ = "chunk_edits"

    kb_id: Mapped[str] = _kb_id()
    file_hash: Mapped[str] = mapped_column(Digest, primary_key=True)  # sha256 of file
    chunk_index: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    file: Mapped[str] = mapped_column(String(4096))
    original_sha: Mapped[str] = mapped_column(String(64))
    original: Mapped[str] = mapped_column(LongText)  # JSON: the chunk as stored before any edit
    text: Mapped[str | None] = mapped_column(LongText)
    off: Mapped[bool] = mapped_column(Boolean)
    by: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime]
    applied_in: Mapped[int | None] = mapped_column(Integer)


class PageReviewRow(Base):
    """A reviewer's mark on one OCR'd page of a file, keyed by KB, file (its path digest) and page."""

    __tablename__ = "ocr_page_reviews"

    kb_id: Mapped[str] = _kb_id()
    file_hash: Mapped[str] = mapped_column(Digest, primary_key=True)  # sha256 of file
    page: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    file: Mapped[str] = mapped_column(String(4096))
    sha256: Mapped[str] = mapped_column(String(64))  # the file content the mark was made on
    by: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime]


class EvalSetRow(Base):
    """An eval set saved from the console: its JSONL lines under a name within the KB."""

    __tablename__ = "eval_sets"

    kb_id: Mapped[str] = _kb_id()
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    body: Mapped[str] = mapped_column(LongText)
    questions: Mapped[int] = mapped_column(Integer)  # its non-blank lines
    saved_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


def stamp(value: datetime) -> str:
    """A row's time as the console shows it (ISO 8601 in UTC, to the second)."""
    return value.astimezone(UTC).isoformat(timespec="seconds")


def _parse_stamp(value: str) -> datetime:
    """An ISO time from a record (naive ones are UTC); now when empty."""
    if not value:
        return datetime.now(UTC)
    at = datetime.fromisoformat(value)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ChunkEdit(RowRecord):
    """One chunk's change: `off` (left out of the index) or `text` (replaces it); neither is a revert."""

    CONVERT: ClassVar = {"original": json.loads, "at": stamp}

    file: str
    chunk_index: int
    original_sha: str
    original: dict[str, Any]  # the chunk as stored before any edit (its text, location and access fields)
    text: str | None = None
    off: bool = False
    by: str = ""
    at: str = ""
    applied_in: int | None = None  # None: pending; 0: applied by an unversioned ingest; n: in version n

    @property
    def revert(self) -> bool:
        """Neither off nor re-texted: the chunk goes back to its original once applied."""
        return not self.off and self.text is None

    def chunk(self) -> Chunk:
        """The original chunk (for access checks and to show a switched-off chunk)."""
        return Chunk(**self.original)

    def to_json(self) -> dict[str, Any]:
        """The API's view: without the stored original, with its text and whether it is pending."""
        out = {k: v for k, v in asdict(self).items() if k != "original"}
        return {**out, "original_text": self.original["text"], "pending": self.applied_in is None}

    def row(self, kb_id: str) -> ChunkEditRow:
        """The row recording this edit in a knowledge base."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(original=json.dumps(self.original, ensure_ascii=False), at=_parse_stamp(self.at))
        return ChunkEditRow(kb_id=kb_id, file_hash=digest(self.file), **values)


@dataclass(frozen=True)
class PageReview(RowRecord):
    """Page `page` of `file` (at content `sha256`) was reviewed by `by` at `at`."""

    CONVERT: ClassVar = {"at": stamp}

    file: str
    page: int
    sha256: str
    by: str
    at: str

    def row(self, kb_id: str) -> PageReviewRow:
        """The row recording this mark in a knowledge base."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return PageReviewRow(
            kb_id=kb_id, file_hash=digest(self.file), **{**values, "at": _parse_stamp(self.at)}
        )


@dataclass(frozen=True, slots=True)
class EvalSet(RowRecord):
    """A saved eval set as the catalog lists it (its lines come from `eval_set_body`)."""

    name: str
    questions: int
    saved_by: str
    created_at: datetime
    updated_at: datetime


def _file_terms(row: type[ChunkEditRow] | type[PageReviewRow], kb_id: str, file: str) -> tuple[Any, ...]:
    return row.kb_id == kb_id, row.file_hash == digest(file), row.file == file


def _insert_absent(s: Session, rows: Iterable[Base]) -> int:
    """Add each row whose primary key is not taken yet (rows already there win); how many were added."""
    added = 0
    for row in rows:
        mapper = row.__mapper__
        key = tuple(getattr(row, cast(str, c.key)) for c in mapper.primary_key)
        if s.get(type(row), key) is None:
            s.add(row)
            s.flush()
            added += 1
    return added


class ConsoleMixin:
    """Chunk edit, OCR review and eval set methods of the Catalog; each write is one transaction that
    first takes the KB row's write lock, so writers on any replica run one after another."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    # -- chunk edits -----------------------------------------------------------------------

    def list_chunk_edits(self, kb_id: str, file: str | None = None) -> list[ChunkEdit]:
        """A KB's chunk edits (or one file's) by file and chunk position."""
        query = select(ChunkEditRow).where(ChunkEditRow.kb_id == kb_id)
        if file is not None:
            query = query.where(*_file_terms(ChunkEditRow, kb_id, file))
        with self.transaction() as s:
            rows = s.scalars(query.order_by(ChunkEditRow.file, ChunkEditRow.chunk_index))
            return [ChunkEdit.from_row(r) for r in rows]

    def put_chunk_edit(self, kb_id: str, edit: ChunkEdit) -> ChunkEdit:
        """Record `edit`, replacing the one at the same file and position."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            s.execute(
                delete(ChunkEditRow).where(
                    *_file_terms(ChunkEditRow, kb_id, edit.file), ChunkEditRow.chunk_index == edit.chunk_index
                )
            )
            row = edit.row(kb_id)
            s.add(row)
            s.flush()
            return ChunkEdit.from_row(row)

    def mark_chunk_edits_applied(self, kb_id: str, file: str, seq: int) -> None:
        """The file was indexed with its pending edits (in version `seq`, 0: unversioned); reverts, once
        applied, are dropped."""
        pending = (*_file_terms(ChunkEditRow, kb_id, file), ChunkEditRow.applied_in.is_(None))
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            s.execute(
                delete(ChunkEditRow).where(*pending, ChunkEditRow.off.is_(False), ChunkEditRow.text.is_(None))
            )
            s.execute(update(ChunkEditRow).where(*pending).values(applied_in=seq))

    def import_chunk_edits(self, kb_id: str, edits: Iterable[ChunkEdit]) -> int:
        """Add edits recorded elsewhere (an old JSON file) unless their position has one; how many."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            return _insert_absent(s, [e.row(kb_id) for e in edits])

    # -- OCR page reviews ------------------------------------------------------------------

    def list_page_reviews(self, kb_id: str, file: str | None = None) -> list[PageReview]:
        """A KB's OCR page marks (or one file's) by file and page."""
        query = select(PageReviewRow).where(PageReviewRow.kb_id == kb_id)
        if file is not None:
            query = query.where(*_file_terms(PageReviewRow, kb_id, file))
        with self.transaction() as s:
            rows = s.scalars(query.order_by(PageReviewRow.file, PageReviewRow.page))
            return [PageReview.from_row(r) for r in rows]

    def set_page_review(
        self, kb_id: str, file: str, page: int, review: PageReview | None
    ) -> PageReview | None:
        """Record the mark on a page (replacing any; stamped now unless it has a time), or remove it (None);
        the mark as stored."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            s.execute(
                delete(PageReviewRow).where(
                    *_file_terms(PageReviewRow, kb_id, file), PageReviewRow.page == page
                )
            )
            if review is None:
                return None
            row = review.row(kb_id)
            s.add(row)
            s.flush()
            return PageReview.from_row(row)

    def import_page_reviews(self, kb_id: str, reviews: Iterable[PageReview]) -> int:
        """Add marks recorded elsewhere (an old JSON file) unless their page has one; how many."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            return _insert_absent(s, [r.row(kb_id) for r in reviews])

    # -- eval sets -------------------------------------------------------------------------

    def list_eval_sets(self, kb_id: str) -> list[EvalSet]:
        """A KB's saved eval sets by name (without their lines)."""
        cols = [getattr(EvalSetRow, f.name) for f in fields(EvalSet)]
        query = select(*cols).where(EvalSetRow.kb_id == kb_id).order_by(EvalSetRow.name)
        with self.transaction() as s:
            return [EvalSet.from_row(r) for r in s.execute(query)]

    def eval_set_body(self, kb_id: str, name: str) -> str | None:
        """The JSONL lines of a saved eval set, or None if the KB has none of that name."""
        with self.transaction() as s:
            return s.scalar(select(EvalSetRow.body).where(EvalSetRow.kb_id == kb_id, EvalSetRow.name == name))

    def save_eval_set(
        self, kb_id: str, name: str, body: str, *, by: str, replace: bool = True, at: datetime | None = None
    ) -> EvalSet | None:
        """Keep `body` under `name` (replacing a set of that name unless `replace` is False: then None)."""
        now = at or datetime.now(UTC)
        questions = sum(1 for line in body.splitlines() if line.strip())
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            row = s.get(EvalSetRow, (kb_id, name))
            if row is not None and not replace:
                return None
            if row is None:
                row = EvalSetRow(kb_id=kb_id, name=name, created_at=now)
                s.add(row)
            row.body, row.questions, row.saved_by, row.updated_at = body, questions, by, now
            s.flush()
            return EvalSet.from_row(row)
