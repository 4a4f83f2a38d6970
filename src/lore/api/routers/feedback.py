"""Thumbs up/down with a note on an answer, identified by its trace id."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Admin, Caller, Scope, State
from lore.catalog.service import Feedback
from lore.engine import Lore
from lore.errors import LoreError

router = APIRouter(tags=["feedback"])


class FeedbackBody(BaseModel):
    """A rating of one of the caller's answers."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    rating: Literal[1, -1] = Field(description="1 = thumbs up, -1 = thumbs down.")
    note: str = Field(default="", max_length=4000)


@router.post("/api/feedback", status_code=201)
async def feedback(body: FeedbackBody, scope: Caller, state: State) -> dict[str, Any]:
    """Record feedback; thumbs-down answers become the bad-case eval set (`lore badcases export`)."""
    fb = await run_in_threadpool(lambda: state.lore.catalog.add_feedback(
        trace_id=body.trace_id, tenant_id=scope.tenant_id, key_id=scope.key.id, rating=body.rating,
        note=body.note, owner_key=scope.owner_key))
    return {"id": fb.id, "trace_id": fb.trace_id, "rating": fb.rating, "kb": fb.kb}


def _readable_chunks(lore: Lore, kb: str, chunk_ids: set[str], scope: Scope) -> set[str]:
    """The chunks among `chunk_ids` whose document the caller's own scope reads in `kb` (checked in the store)."""
    if not chunk_ids:
        return set()
    try:
        store = lore.store(lore.catalog.get_kb(kb))
    except LoreError:  # the KB was deleted since: nothing of it is readable
        return set()
    base = scope.search_filter()
    chunks = store.get(sorted(chunk_ids))
    docs = {c.document_id for c in chunks}
    readable = {d for d in docs if store.count(replace(base, document_ids=[d])) > 0}
    return {c.chunk_id for c in chunks if c.document_id in readable}


def _redacted(f: Feedback, readable: set[str]) -> dict[str, Any]:
    """A feedback row for a reader: citations it cannot read keep their location, lose their text, and an
    answer built on one of them is withheld."""
    hidden = [c for c in f.citations if c.get("chunk_id") not in readable]
    return {
        "id": f.id, "trace_id": f.trace_id, "kb": f.kb, "rating": f.rating, "note": f.note,
        "question": f.question, "created_at": f.created_at.isoformat(), "redacted": bool(hidden),
        "answer": None if hidden else f.answer,
        "citations": [c if c.get("chunk_id") in readable else {**c, "text": None} for c in f.citations],
    }


@router.get("/api/feedback")
async def list_feedback(scope: Admin, state: State, kb: str | None = None,
                        rating: Annotated[int | None, Query(ge=-1, le=1)] = None) -> list[dict[str, Any]]:
    """The tenant's feedback, newest first (admin); passages the caller may not read are redacted."""
    def run() -> list[dict[str, Any]]:
        rows = [f for f in state.lore.catalog.list_feedback(rating=rating, kb=kb) if f.tenant_id == scope.tenant_id]
        out = []
        for f in reversed(rows):
            ids = {c["chunk_id"] for c in f.citations if c.get("chunk_id")}
            out.append(_redacted(f, _readable_chunks(state.lore, f.kb, ids, scope)))
        return out
    return await run_in_threadpool(run)


@router.get("/api/feedback/export", response_class=PlainTextResponse)
async def export_feedback(scope: Admin, state: State, kb: str | None = None) -> PlainTextResponse:
    """Thumbs-down answers of the tenant as a JSONL eval set (as `lore badcases export`; admin)."""
    def run() -> str:
        rows = [f for f in state.lore.catalog.list_feedback(rating=-1, kb=kb) if f.tenant_id == scope.tenant_id]
        return "".join(json.dumps(f.as_badcase(), ensure_ascii=False) + "\n" for f in rows)
    return PlainTextResponse(await run_in_threadpool(run), media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="badcases.jsonl"'})
