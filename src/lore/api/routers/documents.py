"""The console's document views: a KB's documents with their status and metadata, and a document's chunks."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import (
    audit,
    check_file_writes,
    file_visible,
    indexed_file,
    kb_resource,
    own_name,
    require_kb,
)
from lore.app.content_results import ChunkEdited, DocumentChunks, DocumentList
from lore.catalog import KnowledgeBase
from lore.catalog.models import FileRecord
from lore.engine import Lore
from lore.errors import NotFoundError
from lore.grant import Grant
from lore.ingest.edits import ChunkEdit, digest
from lore.ingest.pages import scanned_pages
from lore.policy import Action, can
from lore.schema import Chunk
from lore.storage.layout import uploads_key

router = APIRouter(prefix="/api/kbs/{kb}/documents", tags=["documents"])


def _readable_chunks(lore: Lore, kb: KnowledgeBase, record: FileRecord, scope: Grant) -> list[Chunk]:
    """The file's chunks that the caller's own grant reads (each chunk as stored)."""
    ids = lore.catalog.file_chunk_ids(record.id)
    flt = scope.to_filter()
    return [c for c in (lore.store(kb).get(ids) if ids else []) if flt.matches(c)]


def _documents(lore: Lore, kb: KnowledgeBase, scope: Grant) -> list[dict[str, Any]]:
    """Every catalogued file the caller may see, from a fixed number of catalog queries and one store read
    (files, owners, chunk ids and version manifests each in one query, whatever the number of files)."""
    files = lore.catalog.list_files(kb.id)
    owners = lore.catalog.file_owners(kb.id)
    ids_by_file = lore.catalog.kb_chunk_ids(kb.id)
    versions = lore.catalog.versions_by_path(kb.id)
    reviewed: dict[tuple[str, str], int] = {}  # (file, content sha256) -> pages marked reviewed
    for r in lore.ocr_reviews(kb.name).all():
        reviewed[r.file, r.sha256] = reviewed.get((r.file, r.sha256), 0) + 1

    def owner(f: FileRecord) -> str | None:
        return owners.get(f.path) or kb.owner_tenant

    # Only the caller's tenant's files can be readable: only their chunks are fetched.
    wanted = [i for f in files if owner(f) == scope.tenant for i in ids_by_file.get(f.id, [])]
    flt = scope.to_filter()
    readable = {c.chunk_id: c for c in (lore.store(kb).get(wanted) if wanted else []) if flt.matches(c)}
    docs = []
    for f in files:
        ids = ids_by_file.get(f.id, [])
        chunks = [readable[i] for i in ids if i in readable]
        if can(scope, Action.DOWNLOAD, indexed_file(f.path, owner(f), bool(ids), bool(chunks))):
            done = reviewed.get((f.path, f.sha256), 0) if f.ocr_pages else 0
            docs.append(_document_json(f, chunks, versions.get(f.path, []), done))
    return docs


def _document_json(
    record: FileRecord, chunks: list[Chunk], versions: list[int], ocr_reviewed: int
) -> dict[str, Any]:
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
        "ocr_unreviewed": max(0, record.ocr_pages - ocr_reviewed),
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


@router.get("", response_model=DocumentList)
async def list_documents(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """Every catalogued file the caller may see, failed ones with their reason (404 for a hidden KB)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        writer = can(scope, Action.UPLOAD, kb_resource(lore, record))
        return {"kb": kb, "writable": writer, "documents": _documents(lore, record, scope)}

    return await run_in_threadpool(run)


@router.get("/{name:path}/chunks", response_model=DocumentChunks)
async def document_chunks(kb: str, name: str, scope: Caller, state: State) -> dict[str, Any]:
    """A document's chunks in order, with location, parent passage and metadata (only what the caller
    reads)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        path = own_name(lore, record, scope, name)
        f = lore.catalog.get_file(record.id, path)
        if f is None or not file_visible(lore, record, path, scope):
            raise NotFoundError(f"file '{name}' not found")
        chunks = sorted(
            _readable_chunks(lore, record, f, scope), key=lambda c: (c.document_id, c.chunk_index)
        )
        flt = replace(scope.to_filter(), version_seq=None)
        edits = [e for e in lore.chunk_edits(kb).for_file(path) if flt.matches(e.chunk())]
        return {
            "kb": kb,
            "name": path,
            "status": f.status,
            "reason": f.error,
            "versioned": lore.catalog.has_versions(record.id),
            "chunks": [{**c.metadata(), "text": c.text, "parent_text": c.parent_text} for c in chunks],
            "edits": [e.to_json() for e in edits],
            "ocr": _ocr_review(lore, record, f) if f.ocr_pages else None,
        }

    return await run_in_threadpool(run)


def _ocr_review(lore: Lore, record: KnowledgeBase, f: FileRecord) -> dict[str, Any] | None:
    """An OCR'd PDF's scanned pages and which of them a reviewer marked reviewed (None: not a kept PDF)."""
    if not f.path.lower().endswith(".pdf"):
        return None
    source = lore.storage.fetch(f"{uploads_key(record)}/{f.path}")
    if source is None:
        return None
    done = lore.ocr_reviews(record.name).reviewed(f.path, f.sha256)
    return {
        "pages": scanned_pages(source),
        "reviewed": {str(p): {"by": r.by, "at": r.at} for p, r in sorted(done.items())},
    }


class ChunkEditBody(BaseModel):
    """Switch a chunk off, or give its new text (re-embedded); neither undoes an earlier edit."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, max_length=20_000)
    off: bool = False

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("empty text (switch the chunk off instead)")
        return value.strip() if value is not None else None


@router.put("/{name:path}/chunks/{index}", response_model=ChunkEdited)
async def edit_chunk(
    kb: str, name: str, index: int, body: ChunkEditBody, scope: Caller, state: State
) -> dict[str, Any]:
    """Switch chunk `index` of a document off or replace its text (admin who may add to the KB). An
    unversioned KB re-indexes the uploaded file at once; a versioned one applies it in its next build
    (pending until then)."""
    if not 0 <= index < 1_000_000:
        raise HTTPException(422, "index: out of range")

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.UPLOAD)
        path = own_name(lore, record, scope, name)
        f = lore.catalog.get_file(record.id, path)
        if f is None or not file_visible(lore, record, path, scope):
            raise NotFoundError(f"file '{name}' not found")
        check_file_writes(lore, record, [path], scope)
        edits = lore.chunk_edits(kb)
        flt = replace(scope.to_filter(), version_seq=None)
        prior = next((e for e in edits.for_file(path) if e.chunk_index == index), None)
        current = next((c for c in _readable_chunks(lore, record, f, scope) if c.chunk_index == index), None)
        original = prior.chunk() if prior else current
        if original is None or not flt.matches(original):
            raise NotFoundError(f"chunk {index} of '{name}' not found")
        edit = edits.put(
            ChunkEdit(path, index, digest(original.text), asdict(original), body.text, body.off, scope.actor)
        )
        applied = False
        versioned = lore.catalog.has_versions(record.id)
        source = None if versioned else lore.storage.fetch(f"{uploads_key(record)}/{path}")
        if source is not None:
            stamp = {"tenant_id": original.tenant_id, "dataset_id": original.dataset_id}  # as it was indexed
            result = lore.ingest(kb, [source], chunk_metadata=lambda _s: stamp).files[0]
            if result.status != "ingested":
                raise HTTPException(422, f"{name}: {result.error or result.status}")
            applied = True
        audit(lore, scope, "chunk_edit", kb=kb, target=f"{path}#{index}", off=body.off)
        now = next((e for e in edits.for_file(path) if e.chunk_index == index), edit)
        return {"kb": kb, "file": path, "edit": now.to_json(), "applied": applied}

    return await run_in_threadpool(run)
