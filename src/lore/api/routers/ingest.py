"""Getting documents in: upload, list uploads, chunk preview, ingest (unversioned KBs) and builds."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from lore.api.deps import Admin, Caller, State
from lore.api.routers.kbs import uploads_dir
from lore.api.uploads import MultipartUpload, commit, safe_name, within_roots
from lore.engine import Lore
from lore.errors import LoadError
from lore.ingest.chunking import Chunker
from lore.ingest.loaders import load_file
from lore.ingest.pipeline import IngestReport, chunk_document

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])
_MULTIPART_SLACK = 64 * 1024  # boundaries and part headers on top of the file bytes


@router.post("/files", status_code=201)
async def upload(kb: str, request: Request, _: Admin, state: State) -> dict[str, Any]:
    """Upload files (multipart `file` parts), streamed to disk; over the size limit is a 413 (admin)."""
    lore = state.lore
    await run_in_threadpool(lore.catalog.get_kb, kb)
    limit = int(lore.settings.api.max_upload_mb * 1e6)
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + _MULTIPART_SLACK:
        raise HTTPException(413, f"upload: request of {int(declared) / 1e6:.1f} MB is over the limit of "
                                 f"{limit / 1e6:g} MB per file")
    folder = uploads_dir(lore, kb)
    folder.mkdir(parents=True, exist_ok=True)
    parts = await MultipartUpload(folder, limit, request.headers.get("content-type", "")).consume(request.stream())
    return {"kb": kb, "files": commit(parts, folder)}


@router.get("/files")
async def list_files(kb: str, _: Caller, state: State) -> dict[str, Any]:
    """Uploaded files waiting in the KB's upload folder and the files the catalog has indexed."""
    def run() -> dict[str, Any]:
        record = state.lore.catalog.get_kb(kb)
        folder = uploads_dir(state.lore, kb)
        uploads = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")) \
            if folder.is_dir() else []
        return {
            "uploads": [{"name": p.name, "size": p.stat().st_size} for p in uploads],
            "indexed": [{"path": f.path, "status": f.status, "chunks": f.chunk_count, "error": f.error,
                         "size": f.size} for f in state.lore.catalog.list_files(record.id)],
        }
    return await run_in_threadpool(run)


@router.get("/files/{name}", response_class=FileResponse)
async def original(kb: str, name: str, _: Caller, state: State) -> FileResponse:
    """An uploaded original file, so a citation can link to the document it came from."""
    path = await run_in_threadpool(_uploaded, state.lore, kb, name)
    return FileResponse(path, filename=path.name)


class PreviewBody(BaseModel):
    """An uploaded file to split into chunks without indexing it."""

    model_config = ConfigDict(extra="forbid")

    file: str
    limit: int = Field(default=50, ge=1, le=1000)


@router.post("/preview")
async def preview(kb: str, body: PreviewBody, _: Admin, state: State) -> dict[str, Any]:
    """Load and chunk an uploaded file as a build would (file-to-chunk); nothing is stored (admin)."""
    def run() -> dict[str, Any]:
        lore = state.lore
        record = lore.catalog.get_kb(kb)
        path = _uploaded(lore, kb, body.file)
        try:
            docs = load_file(path, ocr=lore.settings.ingest.ocr)
        except LoadError as exc:
            raise HTTPException(422, f"{body.file}: {exc.reason}") from exc
        chunker = Chunker(lore.chunk_params)
        chunks = [c for d in docs for c in chunk_document(
            d, chunker, kb_id=record.id, file_name=body.file, file_sha256="", embedding_model="")]
        return {"file": body.file, "documents": len(docs), "chunks": len(chunks), "preview": [
            {"chunk_index": c.chunk_index, "text": c.text, "page": c.page, "sheet": c.sheet, "row": c.row,
             "heading_path": c.heading_path, "source_type": c.source_type} for c in chunks[: body.limit]]}
    return await run_in_threadpool(run)


class SourcesBody(BaseModel):
    """What to index: uploaded files (all by default) and server paths inside the configured roots."""

    model_config = ConfigDict(extra="forbid")

    files: list[str] | None = Field(default=None, description="Uploaded file names; default: every upload.")
    paths: list[str] = Field(default_factory=list, description="Server files/folders inside api.ingest_roots.")


class BuildBody(SourcesBody):
    """A versioned build of the given sources."""

    description: str = ""
    activate: bool = False
    quality_gate: bool = False
    incremental_from: Literal["latest", "active"] = "latest"
    force: bool = False


def _uploaded(lore: Lore, kb: str, name: str) -> Path:
    path = uploads_dir(lore, kb) / safe_name(name)
    if not path.is_file():
        raise HTTPException(404, f"upload {name!r} not found in knowledge base '{kb}'")
    return path


def _sources(lore: Lore, kb: str, body: SourcesBody) -> list[Path]:
    folder = uploads_dir(lore, kb)
    if body.files is None:
        inputs = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")) \
            if folder.is_dir() else []
    else:
        inputs = [_uploaded(lore, kb, name) for name in body.files]
    inputs += [within_roots(p, lore.settings.api.ingest_roots) for p in body.paths]
    if not inputs:
        raise HTTPException(400, f"nothing to index: upload files to knowledge base '{kb}' or give server paths")
    return inputs


def report_json(report: IngestReport) -> dict[str, Any]:
    """Per-file outcomes and totals."""
    files = [{k: v for k, v in asdict(f).items() if k not in ("chunk_units", "chunk_hashes")} for f in report.files]
    statuses = {f["status"] for f in files}
    return {"files": files, "chunks": report.chunks, "counts": {s: report.count(s) for s in sorted(statuses)}}


@router.post("/ingest")
async def ingest(kb: str, body: SourcesBody, scope: Admin, state: State) -> dict[str, Any]:
    """Index sources straight into an unversioned knowledge base (admin); bad files are reported.

    The chunks belong to the key's tenant (and its dataset, if it has exactly one), as in builds.
    """
    stamp = scope.chunk_stamp()

    def run() -> dict[str, Any]:
        lore = state.lore
        lore.catalog.get_kb(kb)
        report = lore.ingest(kb, _sources(lore, kb, body), chunk_metadata=lambda _source: stamp)
        return {"kb": kb, **report_json(report)}
    return await run_in_threadpool(run)
