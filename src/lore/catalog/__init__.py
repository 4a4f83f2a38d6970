"""The catalog: knowledge bases, their files and chunk ids, in SQL with Alembic migrations."""

from lore.catalog.catalog import MIGRATIONS_DIR, Catalog, ChunkRef, alembic_config, mask_url
from lore.catalog.models import FILE_STATUSES, FileRecord, FileStatus, KnowledgeBase

__all__ = [
    "FILE_STATUSES",
    "MIGRATIONS_DIR",
    "Catalog",
    "ChunkRef",
    "FileRecord",
    "FileStatus",
    "KnowledgeBase",
    "alembic_config",
    "mask_url",
]
