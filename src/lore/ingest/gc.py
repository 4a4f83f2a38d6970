"""`lore gc`: delete chunks that no readable version can see any more."""

from __future__ import annotations

from dataclasses import dataclass

from lore.catalog import Catalog, KnowledgeBase, VersionStatus
from lore.ingest.build import build_lock, recover_abandoned
from lore.store.base import VectorStore

_READABLE = (VersionStatus.ACTIVE, VersionStatus.RETIRED, VersionStatus.STAGED)


@dataclass
class GcResult:
    """What a collection removed."""

    recovered_builds: list[int]
    deleted_chunks: int
    kept_versions: list[int]


def collect_garbage(kb: KnowledgeBase, catalog: Catalog, store: VectorStore) -> GcResult:
    """Under the build lock: close abandoned builds, then delete every expired chunk whose validity
    window holds no active, retired or finished staged version (FAILED versions are not kept readable)."""
    with build_lock(catalog, kb):
        recovered = recover_abandoned(kb, catalog, store)
        kept = [v.seq for v in catalog.list_versions(kb.id) if v.status in _READABLE and v.finished_at]
        dead = [cid for cid, lo, hi in store.expired() if not any(lo <= seq < hi for seq in kept)]
        deleted = store.delete(dead) if dead else 0
    return GcResult(recovered, deleted, kept)
