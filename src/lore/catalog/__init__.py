"""The catalog: knowledge bases, their files, chunk ids and versions, in SQL with Alembic migrations."""

from lore.catalog.catalog import MIGRATIONS_DIR, Catalog, ChunkRef, alembic_config, mask_url
from lore.catalog.manifests import BuildLock, ManifestEntry
from lore.catalog.models import FILE_STATUSES, VERSION_COUNTS, FileRecord, FileStatus, KnowledgeBase
from lore.catalog.versions import Activation, Version, VersionStatus

__all__ = [
    "FILE_STATUSES",
    "MIGRATIONS_DIR",
    "VERSION_COUNTS",
    "Activation",
    "BuildLock",
    "Catalog",
    "ChunkRef",
    "FileRecord",
    "FileStatus",
    "KnowledgeBase",
    "ManifestEntry",
    "Version",
    "VersionStatus",
    "alembic_config",
    "mask_url",
]
