"""Per-knowledge-base chunking settings: the sizes and strategy an administrator chose for one KB, used by its
next build instead of the configured `[chunk]` section (a KB without a row follows the configuration)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import ForeignKey, Integer, String, delete
from sqlalchemy.orm import Mapped, Session, mapped_column

from lore.catalog.models import Base
from lore.catalog.records import RowRecord
from lore.catalog.versions import _lock_kb
from lore.config import ChunkStrategy


class KbChunkSettingsRow(Base):
    """One KB's chunk sizes (text units) and strategy ("structure" or "semantic"), who set them and when."""

    __tablename__ = "kb_chunk_settings"

    kb_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"), primary_key=True
    )
    child_size: Mapped[int] = mapped_column(Integer)
    child_overlap: Mapped[int] = mapped_column(Integer)
    parent_size: Mapped[int] = mapped_column(Integer)
    strategy: Mapped[str] = mapped_column(String(16), default="structure", server_default="structure")
    updated_by: Mapped[str] = mapped_column(String(255))
    updated_at: Mapped[datetime]


@dataclass(frozen=True, slots=True)
class KbChunkSettings(RowRecord):
    """A KB's own chunk sizes and strategy."""

    child_size: int
    child_overlap: int
    parent_size: int
    strategy: ChunkStrategy
    updated_by: str
    updated_at: datetime

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(child_size, child_overlap, parent_size)."""
        return self.child_size, self.child_overlap, self.parent_size


class KbSettingsMixin:
    """Per-KB chunking settings of the Catalog; a write takes the KB row's lock first."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    def get_chunk_settings(self, kb_id: str) -> KbChunkSettings | None:
        """The KB's own chunk sizes and strategy, or None when it follows the configuration."""
        with self.transaction() as s:
            row = s.get(KbChunkSettingsRow, kb_id)
            return None if row is None else KbChunkSettings.from_row(row)

    def set_chunk_settings(
        self,
        kb_id: str,
        sizes: tuple[int, int, int] | None,
        *,
        by: str,
        strategy: ChunkStrategy = "structure",
    ) -> KbChunkSettings | None:
        """Keep (child_size, child_overlap, parent_size) and `strategy` for the KB, or drop them (None: the
        configured ones)."""
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            if sizes is None:
                s.execute(delete(KbChunkSettingsRow).where(KbChunkSettingsRow.kb_id == kb_id))
                return None
            row = s.get(KbChunkSettingsRow, kb_id)
            if row is None:
                row = KbChunkSettingsRow(kb_id=kb_id)
                s.add(row)
            row.child_size, row.child_overlap, row.parent_size = sizes
            row.strategy = strategy
            row.updated_by, row.updated_at = by[:255], datetime.now(UTC)
            s.flush()
            return KbChunkSettings.from_row(row)
