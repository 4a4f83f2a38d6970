"""A PDF page as an image (with a cited passage's region highlighted), and the OCR review of scanned pages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from lore.api.deps import Caller, State
from lore.api.routers.ingest import uploaded
from lore.api.routers.passages import readable
from lore.app.access import audit, check_file_writes, require_file, require_kb
from lore.app.content_results import PageReviewed
from lore.app.fields import PositiveInt
from lore.errors import NotFoundError
from lore.ingest.pages import passage_region, render_page, scanned_pages
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}/documents", tags=["documents"])

REGION_HEADER = "X-Lore-Region"  # marked | not-found | no-text-layer (scanned: the whole page) | none


@router.get(
    "/{name:path}/pages/{page}",
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {}},
            "description": f"The page as a PNG; with `chunk`, that passage's region highlighted and the "
            f"`{REGION_HEADER}` header saying whether it was found (a scanned page has no text layer).",
        }
    },
)
async def page_image(
    kb: str,
    name: str,
    page: PositiveInt,
    scope: Caller,
    state: State,
    chunk: str | None = Query(default=None, max_length=200, description="a cited passage's chunk_id"),
) -> Response:
    """Page `page` of an uploaded PDF as a PNG, to whoever may download the original; with `chunk` (a
    passage on that page the caller reads, else 404) its text is found on the page and highlighted."""

    def run() -> tuple[bytes, str]:
        lore = state.lore
        record = require_kb(lore, scope, kb)
        path = uploaded(lore, record, name, scope)
        require_file(lore, record, path.name, scope)
        if not name.lower().endswith(".pdf"):
            raise NotFoundError(f"'{name}' is not a PDF: it has no page images")
        if chunk is None:
            return render_page(path, page), "none"
        found, _ = readable(lore, record, scope, lore.store(record).get([chunk]), None)
        if not found or found[0].file_path != path.name or found[0].page != page:
            raise HTTPException(404, f"passage {chunk!r} not found on page {page} of '{name}'")
        region = passage_region(path, page, found[0].text)
        return render_page(path, page, marks=region.rects), region.state

    png, state_ = await run_in_threadpool(run)
    headers = {"Cache-Control": "private, no-store", REGION_HEADER: state_}
    return Response(png, media_type="image/png", headers=headers)


class ReviewBody(BaseModel):
    """Mark a scanned page's OCR text reviewed (promoted), or take the mark back."""

    model_config = ConfigDict(extra="forbid")

    reviewed: bool = True


@router.put("/{name:path}/pages/{page}/review", response_model=PageReviewed)
async def review_page(
    kb: str, name: str, page: PositiveInt, body: ReviewBody, scope: Caller, state: State
) -> dict[str, Any]:
    """Mark page `page` of an OCR'd PDF reviewed (an admin who may add to the KB, as for chunk edits): its
    OCR text was checked and fixed with chunk edits; the documents table counts the pages not yet reviewed."""

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.UPLOAD)
        path = uploaded(lore, record, name, scope)
        require_file(lore, record, path.name, scope)
        f = lore.catalog.get_file(record.id, path.name)
        if f is None or not name.lower().endswith(".pdf"):
            raise NotFoundError(f"file '{name}' not found among the indexed PDFs")
        check_file_writes(lore, record, [path.name], scope)
        scanned = scanned_pages(path)
        if page not in scanned:
            raise HTTPException(422, f"page {page} of '{name}' was not read by OCR (OCR pages: {scanned})")
        reviews = lore.ocr_reviews(kb)
        mark = reviews.mark(path.name, page, f.sha256, scope.actor, body.reviewed)
        audit(lore, scope, "ocr_review", kb=kb, target=f"{path.name}#page={page}", reviewed=body.reviewed)
        done = reviews.reviewed(path.name, f.sha256)
        return {
            "kb": kb,
            "file": path.name,
            "page": page,
            "reviewed": mark is not None,
            "by": mark.by if mark else None,
            "at": mark.at if mark else None,
            "unreviewed": [p for p in scanned if p not in done],
        }

    return await run_in_threadpool(run)
