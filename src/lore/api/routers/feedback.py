"""Thumbs up/down with a note on an answer, identified by its trace id."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import readable_chunk_ids, trace_resource
from lore.app.fields import Name, Note
from lore.app.results import FeedbackRow, FeedbackSaved
from lore.catalog.service_records import Feedback
from lore.grant import Grant
from lore.policy import Action, Kind, Resource, check

router = APIRouter(tags=["feedback"])


class FeedbackBody(BaseModel):
    """A rating of one of the caller's answers."""

    model_config = ConfigDict(extra="forbid")

    trace_id: Name
    rating: Literal[1, -1] = Field(description="1 = thumbs up, -1 = thumbs down.")
    note: Note = ""


@router.post("/api/feedback", status_code=201, response_model=FeedbackSaved)
async def feedback(body: FeedbackBody, scope: Caller, state: State) -> dict[str, Any]:
    """Record feedback; thumbs-down answers become the bad-case eval set (`lore badcases export`)."""

    def run() -> Any:
        check(
            scope,
            Action.READ_TRACE,
            trace_resource(state.lore.catalog.get_trace(body.trace_id, scope.tenant)),
        )
        return state.lore.catalog.add_feedback(
            trace_id=body.trace_id,
            tenant_id=scope.tenant,
            key_id=scope.key_id,
            rating=body.rating,
            note=body.note,
        )

    fb = await run_in_threadpool(run)
    return {"id": fb.id, "trace_id": fb.trace_id, "rating": fb.rating, "kb": fb.kb}


def _review(scope: Grant) -> None:
    check(scope, Action.REVIEW, Resource(Kind.FEEDBACK, "feedback", tenants=frozenset({scope.tenant})))


def _redacted(f: Feedback, readable: set[str]) -> dict[str, Any]:
    """A feedback row for a reader: citations it cannot read keep their location, lose their text, and an
    answer built on one of them is withheld."""
    hidden = [c for c in f.citations if c.get("chunk_id") not in readable]
    return {
        "id": f.id,
        "trace_id": f.trace_id,
        "kb": f.kb,
        "rating": f.rating,
        "note": f.note,
        "question": f.question,
        "created_at": f.created_at.isoformat(),
        "redacted": bool(hidden),
        "answer": None if hidden else f.answer,
        "citations": [c if c.get("chunk_id") in readable else {**c, "text": None} for c in f.citations],
    }


@router.get("/api/feedback", response_model=list[FeedbackRow])
async def list_feedback(
    scope: Caller,
    state: State,
    kb: str | None = None,
    rating: Annotated[int | None, Query(ge=-1, le=1)] = None,
) -> list[dict[str, Any]]:
    """The tenant's feedback, newest first (admin); passages the caller may not read are redacted."""

    def run() -> list[dict[str, Any]]:
        _review(scope)
        rows = [
            f for f in state.lore.catalog.list_feedback(rating=rating, kb=kb) if f.tenant_id == scope.tenant
        ]
        out = []
        for f in reversed(rows):
            ids = {c["chunk_id"] for c in f.citations if c.get("chunk_id")}
            out.append(_redacted(f, readable_chunk_ids(state.lore, scope, f.kb, ids)))
        return out

    return await run_in_threadpool(run)


@router.get("/api/feedback/export", response_class=PlainTextResponse)
async def export_feedback(scope: Caller, state: State, kb: str | None = None) -> PlainTextResponse:
    """Thumbs-down answers of the tenant as a JSONL eval set (as `lore badcases export`; admin)."""

    def run() -> str:
        _review(scope)
        rows = [f for f in state.lore.catalog.list_feedback(rating=-1, kb=kb) if f.tenant_id == scope.tenant]
        lines = []
        for f in rows:  # an answer built on a passage the caller may not read is withheld, as in the list
            ids = {c["chunk_id"] for c in f.citations if c.get("chunk_id")}
            case = f.as_badcase()
            if ids - readable_chunk_ids(state.lore, scope, f.kb, ids):
                case["bad_answer"] = None
            lines.append(json.dumps(case, ensure_ascii=False) + "\n")
        return "".join(lines)

    return PlainTextResponse(
        await run_in_threadpool(run),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="badcases.jsonl"'},
    )
