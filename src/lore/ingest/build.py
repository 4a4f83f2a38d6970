"""Versioned builds: a STAGED version per build, incremental from the catalog's file manifest.

Unchanged files (same sha256) are reused without parsing or embedding; changed and new files get
chunks valid from the build's seq and their old chunks expire at it; files gone from the source
expire too. Older versions keep their view of the knowledge base (time travel).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.catalog import Catalog, KnowledgeBase, ManifestEntry, Version, VersionStatus
from lore.config import GateSettings
from lore.ingest.files import SourceFile
from lore.ingest.pipeline import IngestPipeline, IngestReport
from lore.ingest.quality import evaluate_gate, quality_report, write_report
from lore.store.base import VectorStore

log = logging.getLogger("lore.build")


@dataclass(frozen=True)
class Removal:
    """Which catalogued files a build may drop. By default (an exact build) every file not among its
    sources goes, as asked; `keep_unlisted` carries those over instead, except the `named` ones;
    without `allowed`, a removal not `named` fails the quality gate."""

    keep_unlisted: bool = False
    named: frozenset[str] = frozenset()
    allowed: bool = True


@dataclass
class BuildResult:
    """The version a build made and what happened to each file."""

    version: Version
    report: IngestReport
    removed: list[str]
    quality: dict[str, Any]
    gate_reasons: list[str]


def build_version(
    kb: KnowledgeBase,
    catalog: Catalog,
    store: VectorStore,
    pipeline: IngestPipeline,
    files: list[SourceFile],
    version: Version,
    *,
    gate: GateSettings,
    reports_dir: Path,
    quality_gate: bool = False,
    activate: bool = False,
    actor: str,
    compare: Callable[[Version], dict[str, Any]] | None = None,
    extra_quality: dict[str, Any] | None = None,
    ocr_review: Callable[[list[tuple[str, Path, str]]], dict[str, Any]] | None = None,
    removal: Removal | None = None,
) -> BuildResult:
    """Run `pipeline` (created with `seq=version.seq`) over `files`, record the manifest, write the
    quality report, apply the gate if asked (a failing version is FAILED and never activated), maybe
    activate it as `actor` (the activation log's who). `compare(version)` returns the eval comparison
    against the active version, if configured; `extra_quality` adds sections (e.g. the FAQ's) before the
    gate sees the report; `ocr_review` counts the OCR'd files' (name, path, sha256) pages not reviewed
    yet; `removal` says which files the version may drop (default: every file not among `files`)."""
    removal = removal or Removal()
    before = {f.path: f for f in catalog.list_files(kb.id, "ingested")}
    report = pipeline.run(files)
    seen = {f.name for f in files}
    unlisted = [path for path in before if path not in seen]
    kept = [p for p in unlisted if removal.keep_unlisted and p not in removal.named]
    removed = [p for p in unlisted if p not in kept]
    unasked = [] if removal.allowed else [p for p in removed if p not in removal.named]
    # A file that failed to load keeps its last good chunks, unless they came from another embedding
    # model: vectors of two models must never be searched together.
    after = catalog.list_files(kb.id, "ingested")
    stale_model = [f.path for f in after if f.path in seen and f.embedding_model != version.embedding_model]
    dropped = set(removed) | set(stale_model)
    # A gated version that would drop files nobody asked to remove fails: it removes nothing, so the next
    # build still starts from them.
    doomed = quality_gate and bool(unasked)
    for path in stale_model + ([] if doomed else removed):
        _drop(catalog, store, kb, before[path].id, path, version.seq)
    done = [f for f in report.files if f.status == "ingested"]
    reused = [f for f in report.files if f.status == "skipped"]
    counts = {
        "files_added": sum(f.name not in before for f in done),
        "files_changed": sum(f.name in before for f in done),
        "files_removed": len(removed) + len(stale_model),
        "files_reused": len(reused) + len(kept),
        "chunks_embedded": sum(f.chunks for f in done),
        "chunks_reused": sum(f.chunks for f in reused) + sum(before[p].chunk_count for p in kept),
    }
    changes = {f.name: ("changed" if f.name in before else "added") for f in done}
    catalog.record_manifest(
        kb.id,
        version.seq,
        [
            ManifestEntry(
                f.path,
                f.sha256,
                f.size,
                f.mtime,
                f.chunk_count,
                changes.get(f.path, "reused"),
                f.chunk_schema or "",
                f.embedding_model or "",
            )
            for f in after
            if f.path not in dropped
        ],
    )
    quality = {"seq": version.seq, **quality_report(report, removed, gate)}
    quality["files"]["kept"] = len(kept)
    quality["removed_files"] = removed
    quality["removed_unasked"] = unasked
    if ocr_review is not None:
        sources = {s.name: s.path for s in files}
        ocr = [(f.path, sources[f.path], f.sha256) for f in after if f.ocr_pages and f.path in sources]
        quality["ocr"].update(ocr_review([x for x in ocr if x[0] not in dropped]))
    quality["reindexed"] = [{"file": f.name, "why": f.note} for f in done if f.note]
    quality["dropped_old_model"] = stale_model
    if compare is not None:
        quality["comparison"] = compare(version)
    extra = dict(extra_quality or {})
    quality["problems"] += extra.pop("problems", [])
    quality.update(extra)
    passed, reasons = evaluate_gate(quality, gate) if quality_gate else (None, [])
    if quality_gate:
        quality["gate"] = {"passed": passed, "reasons": reasons}
    write_report(reports_dir / str(version.seq), quality)
    # The catalog keeps the gate's outcome only (read with every version); the full report is quality.json.
    version = catalog.finish_version(
        kb.id, version.seq, counts=counts, gate_passed=passed, gate_report=quality.get("gate")
    )
    if activate and passed is not False:
        version = catalog.activate(kb.id, version.seq, actor=actor, reason=version.description)
    return BuildResult(version, report, removed, quality, reasons)


def _drop(catalog: Catalog, store: VectorStore, kb: KnowledgeBase, file_id: str, path: str, seq: int) -> None:
    store.expire(catalog.file_chunk_ids(file_id), seq)  # older versions keep seeing them
    catalog.delete_file(kb.id, path)


def recover_abandoned(kb: KnowledgeBase, catalog: Catalog, store: VectorStore) -> list[int]:
    """Close builds that never finished (killed, crashed): hide the chunks they wrote that the
    catalog never recorded, and mark them FAILED. Returns their seqs."""
    abandoned = [
        v for v in catalog.list_versions(kb.id) if v.status == VersionStatus.STAGED and v.finished_at is None
    ]
    for v in abandoned:
        fail_version(kb, catalog, store, v.seq, "the build did not finish")
    return [v.seq for v in abandoned]


def fail_version(kb: KnowledgeBase, catalog: Catalog, store: VectorStore, seq: int, reason: str) -> Version:
    """Mark an unfinished build FAILED and hide the chunks it wrote but never recorded.

    A file's chunks are recorded in the catalog only after they are stored, so recorded chunks are
    complete and stay (the next build reuses them); unrecorded ones are partial and must not show.
    """
    written = store.ids_valid_from(seq)
    known = catalog.recorded_chunk_ids(kb.id, written)
    orphans = [cid for cid in written if cid not in known]
    if orphans:
        store.expire(orphans, seq)  # valid from seq to seq: visible in no version
    return catalog.finish_version(
        kb.id,
        seq,
        counts={},
        gate_passed=None,
        failed=True,
        gate_report={"error": reason, "hidden_chunks": len(orphans)},
    )


@contextmanager
def build_lock(catalog: Catalog, kb: KnowledgeBase, lease_s: float = 60.0) -> Iterator[None]:
    """One build per KB at a time, across processes and machines sharing the catalog.

    The lock is a catalog row with a lease that a background thread renews every third of it while
    the build runs; a lock whose lease ran out (its holder was killed or lost) is taken over, as is
    one left by a dead process on this host.
    """
    lock = catalog.acquire_build_lock(kb.id, kb.name, lease_s)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(lease_s / 3):
            try:
                if not catalog.renew_build_lock(lock, lease_s):
                    log.error(
                        "build lock of %r was taken over (lease expired); this build no longer holds it",
                        kb.name,
                    )
                    return
            except Exception:  # a database hiccup: try again at the next beat
                log.warning("could not renew the build lock of %r", kb.name, exc_info=True)

    beat = threading.Thread(target=renew, name=f"lease-{kb.name}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
        catalog.release_build_lock(kb.id, lock)
