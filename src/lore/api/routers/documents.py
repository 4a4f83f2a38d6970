"""The console's document views: a KB's documents with their status and metadata, and a document's chunks."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from lore.api.access import file_visible, kb_resource, require_kb
from lore.api.deps import Caller, State
from lore.catalog import KnowledgeBase
from lore.catalog.models import FileRecord
from lore.engine import Lore
from lore.errors import NotFoundError
from lore.grant import Grant
from lore.policy import Action, can
from lore.schema import Chunk

router = APIRouter(prefix="/api/kbs/{kb}/documents", tags=["documents"])


def _readable_chunks(lore: Lore, kb: KnowledgeBase, record: FileRecord, scope: Grant) -> list[Chunk]:
    """The file's chunks that the caller's own grant reads (each chunk as stored)."""
    ids = lore.catalog.file_chunk_ids(record.id)
    flt = scope.to_filter()
    return [c for c in (lore.store(kb).get(ids) if ids else []) if flt.matches(c)]


def _versions_holding(lore: Lore, kb: KnowledgeBase) -> dict[str, list[int]]:
    """For each path, the versions whose manifest lists it."""
    held: dict[str, list[int]] = defaultdict(list)
    for version in lore.catalog.list_versions(kb.id):
        for path in lore.catalog.version_manifest(kb.id, version.seq):
            held[path].append(version.seq)
    return held


def _document_json(record: FileRecord, chunks: list[Chunk], versions: list[int]) -> dict[str, Any]:
    first = chunks[0] if chunks else None
    return {
        "name": record.path,
        "type": PurePosixPath(record.path).suffix.lstrip(".").lower() or "?",
        "size": record.size,
        "status": record.status,
        "reason": record.error,
        "chunks": record.chunk_count,
        "documents": record.document_count,
        "ocr_pages": record.ocr_pages,
        "encoding": record.encoding,
        "pages": len({c.page for c in chunks if c.page is not None}) or None,
        "sheets": sorted({c.sheet for c in chunks if c.sheet}) or None,
        "rows": len({(c.sheet, c.row) for c in chunks if c.row is not None}) or None,
        "slides": len({c.slide for c in chunks if c.slide is not None}) or None,
        "tenant": first.tenant_id if first else None,
        "dataset": first.dataset_id if first else None,
        "visibility": first.visibility if first else None,
        "roles": first.allowed_roles if first else [],
        "versions": versions,
        "updated_at": record.updated_at.isoformat(),
    }


@router.get("")
async def list_documents(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """Every catalogued file the caller may see, failed ones with their reason (404 for a hidden KB)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        writer = can(scope, Action.UPLOAD, kb_resource(lore, record))
        versions = _versions_holding(lore, record)
        docs = []
        for f in lore.catalog.list_files(record.id):
            if not file_visible(lore, record, f.path, scope):
                continue
            docs.append(_document_json(f, _readable_chunks(lore, record, f, scope), versions.get(f.path, [])))
        return {"kb": kb, "writable": writer, "documents": docs}

    return await run_in_threadpool(run)


@router.get("/{name:path}/chunks")
async def document_chunks(kb: str, name: str, scope: Caller, state: State) -> dict[str, Any]:
    """A document's chunks in order, with location, parent passage and metadata (only what the caller
    reads)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        f = lore.catalog.get_file(record.id, name)
        if f is None or not file_visible(lore, record, name, scope):
            raise NotFoundError(f"file '{name}' not found")
        chunks = sorted(
            _readable_chunks(lore, record, f, scope), key=lambda c: (c.document_id, c.chunk_index)
        )
        return {
            "kb": kb,
            "name": name,
            "status": f.status,
            "reason": f.error,
            "chunks": [{**c.metadata(), "text": c.text, "parent_text": c.parent_text} for c in chunks],
        }

    return await run_in_threadpool(run)
