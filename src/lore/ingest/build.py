"""Versioned builds: a STAGED version per build, incremental from the catalog's file manifest.

Unchanged files (same sha256) are reused without parsing or embedding; changed and new files get
chunks valid from the build's seq and their old chunks expire at it; files gone from the source
expire too. Older versions keep their view of the knowledge base (time travel).
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.catalog import Catalog, KnowledgeBase, Version, VersionStatus
from lore.config import GateSettings
from lore.errors import LoreError
from lore.ingest.files import SourceFile
from lore.ingest.pipeline import IngestPipeline, IngestReport
from lore.ingest.quality import evaluate_gate, quality_report, write_report
from lore.store.base import VectorStore


@dataclass
class BuildResult:
    """The version a build made and what happened to each file."""

    version: Version
    report: IngestReport
    removed: list[str]
    quality: dict[str, Any]
    gate_reasons: list[str]


def build_version(kb: KnowledgeBase, catalog: Catalog, store: VectorStore, pipeline: IngestPipeline,
                  files: list[SourceFile], version: Version, *, gate: GateSettings, reports_dir: Path,
                  quality_gate: bool = False, activate: bool = False) -> BuildResult:
    """Run `pipeline` (created with `seq=version.seq`) over `files`, write the quality report, apply
    the gate if asked (a failing version is FAILED and never activated), maybe activate."""
    before = {f.path: f for f in catalog.list_files(kb.id, "ingested")}
    report = pipeline.run(files)
    seen = {f.name for f in files}
    removed = [path for path in before if path not in seen]
    for path in removed:
        store.expire(catalog.file_chunk_ids(before[path].id), version.seq)
        catalog.delete_file(kb.id, path)
    done = [f for f in report.files if f.status == "ingested"]
    reused = [f for f in report.files if f.status == "skipped"]
    counts = {
        "files_added": sum(f.name not in before for f in done),
        "files_changed": sum(f.name in before for f in done),
        "files_removed": len(removed),
        "files_reused": len(reused),
        "chunks_embedded": sum(f.chunks for f in done),
        "chunks_reused": sum(f.chunks for f in reused),
    }
    quality = {"seq": version.seq, **quality_report(report, removed, gate)}
    passed, reasons = evaluate_gate(quality, gate) if quality_gate else (None, [])
    if quality_gate:
        quality["gate"] = {"passed": passed, "reasons": reasons}
    write_report(reports_dir / str(version.seq), quality)
    version = catalog.finish_version(kb.id, version.seq, counts=counts, gate_passed=passed, gate_report=quality)
    if activate and passed is not False:
        version = catalog.activate(kb.id, version.seq, reason=version.description)
    return BuildResult(version, report, removed, quality, reasons)


def recover_abandoned(kb: KnowledgeBase, catalog: Catalog, store: VectorStore) -> list[int]:
    """Close builds that never finished (killed, crashed): hide the chunks they wrote that the
    catalog never recorded, and mark them FAILED. Returns their seqs.

    A file's chunks are recorded in the catalog only after they are stored, so recorded chunks are
    complete and stay (the next build reuses them); unrecorded ones are partial and must not show.
    """
    abandoned = [v for v in catalog.list_versions(kb.id)
                 if v.status == VersionStatus.STAGED and v.finished_at is None]
    if not abandoned:
        return []
    known = {cid for f in catalog.list_files(kb.id) for cid in catalog.file_chunk_ids(f.id)}
    for v in abandoned:
        orphans = [cid for cid in store.ids_valid_from(v.seq) if cid not in known]
        if orphans:
            store.expire(orphans, v.seq)  # valid from seq to seq: visible in no version
        catalog.finish_version(kb.id, v.seq, counts={}, gate_passed=None, failed=True,
                               gate_report={"error": "the build did not finish", "hidden_chunks": len(orphans)})
    return [v.seq for v in abandoned]


@contextmanager
def build_lock(path: Path, kb_name: str) -> Iterator[None]:
    """One build per KB at a time (an OS file lock, released even when the process is killed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LoreError(f"another build of knowledge base {kb_name!r} is running ({path})") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
