"""add-by-chunks: commit a previewed file's chunks, as edited by the client, into an unversioned KB.

`POST .../preview` (file-to-chunk) shows how a file splits; the client edits or drops chunks and
sends the rest here. They replace the file's earlier chunks. Versioned knowledge bases refuse (409):
their content changes only through builds, so what people read stays reviewable and reversible.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.api.routers.ingest import report_json, uploaded
from lore.app.access import check_file_writes, require_kb
from lore.app.content_results import ChunksCommitted
from lore.app.fields import MAX_ITEMS, Name, Note, PositiveInt
from lore.catalog import KnowledgeBase
from lore.ingest.chunk_factory import ChunkSource, edited_chunk
from lore.ingest.files import SourceFile
from lore.policy import Action
from lore.schema import Chunk

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])


class ChunkIn(BaseModel):
    """One chunk as `preview` returned it, possibly edited; its position in the list is its index."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=20_000)
    chunk_index: int | None = Field(default=None, description="Ignored: the list order is the chunk order.")
    parent_text: str | None = Field(
        default=None, max_length=40_000, description="Context handed to answers; default: the text."
    )
    heading_path: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)
    title: Note | None = None
    page: PositiveInt | None = None
    sheet: Name | None = None
    row: PositiveInt | None = None
    source_type: Literal["doc", "table_row"] = "doc"

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty chunk text (drop the chunk instead)")
        return value.strip()


class CommitBody(BaseModel):
    """The chunks of one uploaded file, to store in place of the chunks that file has now."""

    model_config = ConfigDict(extra="forbid")

    file: Name = Field(description="The uploaded file the chunks were previewed from.")
    chunks: list[ChunkIn] = Field(min_length=1, max_length=5000)
    visibility: Literal["public", "internal", "restricted"] = "internal"
    allowed_roles: list[Name] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="Roles that may read them; [] = all."
    )
    dataset: Name | None = Field(
        default=None,
        description="Dataset the chunks go to; required for a key with several datasets (one of them).",
    )


def make_chunks(
    kb: KnowledgeBase, name: str, sha256: str, model: str, body: CommitBody, stamp: dict[str, str]
) -> list[Chunk]:
    """Chunks carrying the metadata contract, the caller's tenant (and dataset) and the file's identity."""
    src = ChunkSource(kb.id, name, sha256, kb.chunk_schema, model)
    return [
        edited_chunk(
            src,
            i,
            c.text,
            parent_text=(c.parent_text or "").strip() or c.text,
            source_type=c.source_type,
            visibility=body.visibility,
            allowed_roles=list(body.allowed_roles),
            page=c.page,
            heading_path=list(c.heading_path),
            sheet=c.sheet,
            row=c.row,
            title=c.title,
            **stamp,
        )
        for i, c in enumerate(body.chunks)
    ]


@router.post("/chunks", response_model=ChunksCommitted)
async def add_by_chunks(kb: str, body: CommitBody, scope: Caller, state: State) -> dict[str, Any]:
    """Store a previewed file's (edited) chunks in an unversioned KB (admin); 409 for a versioned KB."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.UPLOAD)
        stamp = scope.chunk_stamp(body.dataset)
        path = uploaded(lore, record, body.file, scope)
        check_file_writes(lore, record, [path.name], scope)
        model = lore.embedder(record).model_id

        def custom(source: SourceFile, sha256: str, _seq: int | None) -> list[Chunk] | None:
            return (
                make_chunks(record, source.name, sha256, model, body, stamp) if source.path == path else None
            )

        report = lore.ingest(kb, [path], custom_chunks=custom, force=True)
        result = report.files[0]
        if result.status != "ingested":
            raise HTTPException(422, f"{body.file}: {result.error or result.status}")
        return {"kb": kb, "file": result.name, "committed": result.chunks, **report_json(report)}

    return await run_in_threadpool(run)
