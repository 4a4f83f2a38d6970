"""Getting documents in: upload, list uploads, chunk preview, ingest (unversioned KBs) and builds."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from lore.api.deps import Caller, State
from lore.api.security import original_response
from lore.api.uploads import MultipartUpload, commit, safe_name, within_roots
from lore.app.access import (
    audit,
    check_file_writes,
    file_visible,
    own_files,
    own_name,
    plain_name,
    require_file,
    require_kb,
)
from lore.app.content_results import FileDeleted, FileList, IngestResult, Preview, Uploaded
from lore.app.fields import MAX_ITEMS, NAME_CHARS, Name, Note, PathText
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.errors import LoadError, NotFoundError
from lore.grant import Grant
from lore.ingest.chunk_factory import chunk_document
from lore.ingest.files import discover, links_outside
from lore.ingest.loaders import load_file
from lore.ingest.loaders.limits import FileLimits
from lore.ingest.pipeline import IngestReport
from lore.policy import Action
from lore.storage.layout import uploads_key

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])


@router.post("/files", status_code=201, response_model=Uploaded)
async def upload(kb: str, request: Request, scope: Caller, state: State) -> dict[str, Any]:
    """Upload files (multipart `file` parts), streamed to disk; over the size limit is a 413 (admin).

    403 for a KB holding other tenants' documents (unless platform admin). A tenant the KB is shared with
    stores its files as `<tenant>|<name>` (`access.own_name`): never another tenant's file, whatever its name.
    """
    lore = state.lore
    record = await run_in_threadpool(require_kb, lore, scope, kb, Action.UPLOAD)
    limit = int(lore.settings.api.max_upload_mb * 1e6)  # per file; per request: `BodyLimits` counts the bytes
    prefix = uploads_key(record)
    folder = lore.storage.path(prefix)  # temp files next to their final place (a bucket: the local cache)
    folder.mkdir(parents=True, exist_ok=True)
    upload = MultipartUpload(folder, limit, request.headers.get("content-type", ""))
    parts = await upload.consume(request.stream())
    try:
        parts = [
            (await run_in_threadpool(own_name, lore, record, scope, n), tmp, size) for n, tmp, size in parts
        ]
        await run_in_threadpool(check_file_writes, lore, record, [name for name, _, _ in parts], scope)
    except BaseException:
        upload.discard()
        raise
    saved = await run_in_threadpool(
        commit,
        parts,
        lambda name, tmp: lore.storage.put(f"{prefix}/{name}", tmp),
        lambda names: lore.catalog.claim_files(record.id, names, scope.tenant),
    )
    names = {name for name, _, _ in parts}  # uploaded again: no longer to be dropped by the next build
    await run_in_threadpool(lambda: lore.mark_removals(record, drop=names))
    target = ", ".join(sorted(names))[:500]
    await run_in_threadpool(lambda: audit(lore, scope, "upload", kb=kb, target=target))
    return {"kb": kb, "files": saved}


@router.get("/files", response_model=FileList)
async def list_files(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """Uploads and indexed files the caller may see: those it can read a chunk of, and, for admins who may
    write to the KB, their tenant's own files (e.g. uploads not indexed yet)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        uploads = lore.storage.list(uploads_key(record))
        return {
            "uploads": [
                {"name": e.name, "size": e.size} for e in uploads if file_visible(lore, record, e.name, scope)
            ],
            "indexed": [
                {
                    "path": f.path,
                    "status": f.status,
                    "chunks": f.chunk_count,
                    "error": f.error,
                    "size": f.size,
                }
                for f in lore.catalog.list_files(record.id)
                if file_visible(lore, record, f.path, scope)
            ],
        }

    return await run_in_threadpool(run)


@router.get("/files/{name}", response_class=FileResponse)
async def original(kb: str, name: str, scope: Caller, state: State) -> FileResponse:
    """An uploaded original, so a citation can link to its document; only for callers who can read one of
    its chunks (or admins writing to the KB, for their tenant's own files); 404 otherwise."""
    path = await run_in_threadpool(_visible_upload, state.lore, kb, name, scope)
    return original_response(path)


@router.delete("/files/{name}", response_model=FileDeleted)
async def delete_file(kb: str, name: str, scope: Caller, state: State) -> dict[str, Any]:
    """Delete one of the caller's tenant's files (admin): its upload and, in an unversioned KB, its indexed
    file; in a versioned KB the upload goes and the next build drops the file (`note` says so). Another
    tenant's file is never removed (409)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        stored = own_name(lore, record, scope, name)
        check_file_writes(lore, record, [stored], scope)
        return lore.delete_file(record, stored, tenant=scope.tenant, key_id=scope.key_id)

    return await run_in_threadpool(run)


class PreviewBody(BaseModel):
    """An uploaded file to split into chunks without indexing it."""

    model_config = ConfigDict(extra="forbid")

    file: Name
    limit: int = Field(default=50, ge=1, le=1000)


@router.post("/preview", response_model=Preview)
async def preview(kb: str, body: PreviewBody, scope: Caller, state: State) -> dict[str, Any]:
    """Load and chunk an uploaded file as a build would (file-to-chunk); nothing is stored (admin)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.UPLOAD)
        path = _visible_upload(lore, kb, body.file, scope)
        try:
            docs = load_file(
                path, ocr=lore.settings.ingest.ocr, limits=FileLimits.from_settings(lore.settings.ingest)
            )
        except LoadError as exc:
            raise HTTPException(422, f"{body.file}: {exc.reason}") from exc
        chunker = lore.chunker(record, lore.kb_chunk_params(record))  # as the KB's next build chunks
        chunks = [
            c
            for d in docs
            for c in chunk_document(
                d, chunker, kb_id=record.id, file_name=body.file, file_sha256="", embedding_model=""
            )
        ]
        return {
            "file": body.file,
            "documents": len(docs),
            "chunks": len(chunks),
            "preview": [
                {
                    "chunk_index": c.chunk_index,
                    "text": c.text,
                    "page": c.page,
                    "sheet": c.sheet,
                    "row": c.row,
                    "heading_path": c.heading_path,
                    "source_type": c.source_type,
                }
                for c in chunks[: body.limit]
            ],
        }

    return await run_in_threadpool(run)


class SourcesBody(BaseModel):
    """What to index: uploaded files (all by default) and server paths inside the configured roots."""

    model_config = ConfigDict(extra="forbid")

    files: list[Name] | None = Field(
        default=None, max_length=MAX_ITEMS, description="Uploaded file names; default: every upload."
    )
    paths: list[PathText] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Server files/folders inside api.ingest_roots.",
    )
    dataset: str | None = Field(
        default=None,
        max_length=NAME_CHARS,
        description="Dataset the chunks go to; required for a key with several datasets (one of them).",
    )


class BuildBody(SourcesBody):
    """A versioned build of the given sources."""

    description: Note = ""
    activate: bool = False
    quality_gate: bool = False
    incremental_from: Literal["latest", "active"] = "latest"
    force: bool = False
    mode: Literal["add", "exact"] = Field(
        default="add",
        description="add: the KB's other files stay (minus `remove`); exact: the version holds only these "
        "sources, and a gated build fails if that drops files unless `allow_removal`.",
    )
    remove: list[PathText] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="Files of the KB to drop from the version."
    )
    allow_removal: bool = False


def uploaded(lore: Lore, record: KnowledgeBase, name: str, scope: Grant) -> Path:
    """A local, current copy of the caller's upload `name` (its tenant's own file: `access.own_name`; the
    file itself for a storage directory); 404 if there is none."""
    safe_name(plain_name(scope, name))  # 400/415 for a name no upload can have
    path = _fetch(lore, record, own_name(lore, record, scope, name))
    if path is None:
        raise NotFoundError(f"file '{name}' not found")
    return path


def _visible_upload(lore: Lore, kb: str, name: str, scope: Grant) -> Path:
    """The upload if the caller may see it; the same 404 as a missing file (and KB) otherwise."""
    record = require_kb(lore, scope, kb)
    path = uploaded(lore, record, name, scope)
    require_file(lore, record, path.name, scope)
    return path


def check_sources_write(lore: Lore, kb: str, inputs: list[Path], scope: Grant, *, replaces_all: bool) -> None:
    """403/409 for writes the caller may not make (`lore.policy`); a build (`replaces_all`) needs write
    rights on all of the KB's content, and also removes every catalogued file it does not name."""
    record = require_kb(lore, scope, kb, Action.BUILD if replaces_all else Action.UPLOAD)
    names = {f.name for f in discover(inputs)}
    if replaces_all:
        names |= {f.path for f in lore.catalog.list_files(record.id)}
    check_file_writes(lore, record, sorted(names), scope)


def _fetch(lore: Lore, record: KnowledgeBase, stored: str) -> Path | None:
    return lore.storage.fetch(f"{uploads_key(record)}/{stored}")


def _sources(
    lore: Lore, kb: str, body: SourcesBody, scope: Grant, *, allow_empty: bool = False
) -> list[Path]:
    """The named uploads (default: every upload of the caller's tenant) and server paths."""
    record = require_kb(lore, scope, kb)
    if body.files is None:
        names = own_files(lore, record, scope, [e.name for e in lore.storage.list(uploads_key(record))])
        inputs = [p for p in (_fetch(lore, record, n) for n in names) if p is not None]
    else:
        inputs = [uploaded(lore, record, name, scope) for name in body.files]
    server = [within_roots(p, lore.settings.api.ingest_roots) for p in body.paths]
    if escaping := links_outside(server, lore.settings.api.ingest_roots):
        # refused rather than dropped: Lore.ingest/build re-discover the folder, and a build indexes exactly
        # it
        raise HTTPException(
            403,
            "server paths: symbolic links lead outside the configured ingest roots: "
            + ", ".join(f.name for f in escaping[:20]),
        )
    inputs += server
    if not inputs and not allow_empty:
        raise HTTPException(
            400, f"nothing to index: upload files to knowledge base '{kb}' or give server paths"
        )
    return inputs


def report_json(report: IngestReport) -> dict[str, Any]:
    """Per-file outcomes and totals."""
    files = [
        {k: v for k, v in asdict(f).items() if k not in ("chunk_units", "chunk_hashes")} for f in report.files
    ]
    statuses = {f["status"] for f in files}
    return {"files": files, "chunks": report.chunks, "counts": {s: report.count(s) for s in sorted(statuses)}}


@router.post("/ingest", response_model=IngestResult)
async def ingest(kb: str, body: SourcesBody, scope: Caller, state: State) -> dict[str, Any]:
    """Index sources straight into an unversioned knowledge base (admin); bad files are reported.

    The chunks belong to the key's tenant (and its dataset, if it has exactly one), as in builds.
    """

    def run() -> dict[str, Any]:
        lore = state.lore
        require_kb(lore, scope, kb, Action.UPLOAD)
        stamp = scope.chunk_stamp(body.dataset)
        inputs = _sources(lore, kb, body, scope)
        check_sources_write(lore, kb, inputs, scope, replaces_all=False)
        report = lore.ingest(kb, inputs, chunk_metadata=lambda _source: stamp)
        return {"kb": kb, **report_json(report)}

    return await run_in_threadpool(run)
