"""One passage by id and one indexed file's text, read under the caller's scope (for agents and citations).

A chunk is returned only when a search by the same key could have found it: it passes the caller's
filter (`SearchFilter.matches`: tenant, datasets, visibility, roles, and valid at the version read, the
active one; another only for admin keys, as in search).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import require_kb
from lore.app.options import search_options
from lore.app.results import DocumentText, Passage
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.grant import Grant
from lore.policy import Action
from lore.schema import Chunk, SearchFilter

router = APIRouter(prefix="/api/kbs/{kb}", tags=["search"])


def readable(
    lore: Lore, kb: KnowledgeBase, scope: Grant, chunks: list[Chunk], version: int | None
) -> tuple[list[Chunk], int | None]:
    """The chunks the caller reads at the version (active unless named: the policy decides), and its
    number."""
    require_kb(lore, scope, kb.name, Action.READ if version is None else Action.READ_VERSION)
    flt = lore.scoped(kb, search_options(lore, scope), version).filter
    return [c for c in chunks if flt.matches(c)], flt.version_seq


def _where(c: Chunk) -> dict[str, Any]:
    return {
        "file": c.file_path,
        "page": c.page,
        "slide": c.slide,
        "sheet": c.sheet,
        "row": c.row,
        "heading_path": list(c.heading_path),
    }


def _chunks_at(lore: Lore, kb: KnowledgeBase, file: str, seq: int) -> list[Chunk]:
    """A file's chunks as version `seq` sees them, from what each build up to it wrote (when a newer build
    changed the file, the catalog lists only that build's chunks)."""
    store = lore.store(kb)
    ids = [i for s in range(1, seq + 1) for i in store.ids_valid_from(s)]
    at = SearchFilter(version_seq=seq)
    return [c for c in store.get(ids) if c.file_path == file and at.matches(c)] if ids else []


@router.get("/passages/{chunk_id}", response_model=Passage)
async def get_passage(
    kb: str, chunk_id: str, scope: Caller, state: State, version: int | None = None
) -> dict[str, Any]:
    """A passage (a search hit's or citation's `chunk_id`) with its parent text and location; 404 when the
    caller could not have found it."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)  # foreign or unknown: the same 404
        chunks, seq = readable(lore, record, scope, lore.store(record).get([chunk_id]), version)
        if not chunks:
            raise HTTPException(404, f"passage {chunk_id!r} not found in knowledge base '{kb}'")
        c = chunks[0]
        return {
            "kb": kb,
            "chunk_id": c.chunk_id,
            "document_id": c.document_id,
            **_where(c),
            "text": c.text,
            "parent_text": c.parent_text,
            "source_type": c.source_type,
            "version": seq,
        }

    return await run_in_threadpool(run)


@router.get("/document", response_model=DocumentText)
async def get_document(
    kb: str, file: str, scope: Caller, state: State, version: int | None = None
) -> dict[str, Any]:
    """An indexed file's text as the caller may read it, section by section (its passages' parent texts in
    order, each with its location); 404 when the caller reads none of it."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)  # foreign or unknown: the same 404
        entry = lore.catalog.get_file(record.id, file)
        ids = lore.catalog.file_chunk_ids(entry.id) if entry is not None else []
        chunks, seq = readable(lore, record, scope, lore.store(record).get(ids) if ids else [], version)
        if (
            not chunks and entry is not None and seq is not None
        ):  # the catalog lists the newest build's chunks
            chunks, seq = readable(lore, record, scope, _chunks_at(lore, record, file, seq), version)
        if not chunks:
            raise HTTPException(404, f"document {file!r} not found in knowledge base '{kb}'")
        sections, seen = [], set()
        for c in sorted(chunks, key=lambda c: c.chunk_index):
            if c.parent_id not in seen:
                seen.add(c.parent_id)
                sections.append({**_where(c), "text": c.parent_text})
        return {
            "kb": kb,
            "file": file,
            "document_id": chunks[0].document_id,
            "version": seq,
            "text": "\n\n".join(s["text"] for s in sections),
            "sections": sections,
        }

    return await run_in_threadpool(run)
