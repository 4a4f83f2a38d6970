"""The catalog: knowledge bases, their files, chunk ids and versions, in SQL with Alembic migrations."""

from lore.catalog.catalog import Catalog, ChunkRef, mask_url
from lore.catalog.job_records import Job, JobStatus
from lore.catalog.manifests import BuildLock, BuildLockedError, ManifestEntry
from lore.catalog.migrate import MIGRATIONS_DIR, SchemaError, alembic_config, current_revision, head_revision
from lore.catalog.models import FILE_STATUSES, VERSION_COUNTS, FileRecord, FileStatus, KnowledgeBase
from lore.catalog.versions import Activation, Version, VersionStatus

__all__ = [
    "FILE_STATUSES",
    "MIGRATIONS_DIR",
    "VERSION_COUNTS",
    "Activation",
    "BuildLock",
    "BuildLockedError",
    "Catalog",
    "ChunkRef",
    "FileRecord",
    "FileStatus",
    "Job",
    "JobStatus",
    "KnowledgeBase",
    "ManifestEntry",
    "SchemaError",
    "Version",
    "VersionStatus",
    "alembic_config",
    "current_revision",
    "head_revision",
    "mask_url",
]
