"""Thumbs up/down with a note on an answer, identified by its trace id."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.api.routers.scenarios import FaqRowIn, _row_json, _save
from lore.app.access import readable_chunk_ids, require_kb, trace_resource
from lore.app.admin_results import FeedbackFaq, HandledRow
from lore.app.fields import Name, Note
from lore.app.results import FeedbackSaved
from lore.app.scenarios import require_scenario
from lore.catalog.service_records import Feedback
from lore.grant import Grant
from lore.policy import Action, Kind, Resource, check
from lore.scenario import faq_edit

router = APIRouter(tags=["feedback"])


class FaqBody(BaseModel):
    """A FAQ row of a scenario of the rating's KB: its question (default: the one asked) and the answer."""

    model_config = ConfigDict(extra="forbid")

    scenario: Name
    question: str | None = Field(default=None, min_length=1, max_length=2000)
    answer: str = Field(min_length=1, max_length=20_000)
    source: str | None = Field(default=None, max_length=64, description="Default: the scenario's.")
    dataset: str | None = Field(default=None, max_length=128, description="Default: the scenario's.")


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
        "handled_at": f.handled_at.isoformat() if f.handled_at else None,
        "handled_by": f.handled_by,
        "handled_as": f.handled_as,
    }


def _row(state: Any, scope: Grant, f: Feedback) -> dict[str, Any]:
    ids = {c["chunk_id"] for c in f.citations if c.get("chunk_id")}
    return _redacted(f, readable_chunk_ids(state.lore, scope, f.kb, ids))


@router.get("/api/feedback", response_model=list[HandledRow])
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
        return [_row(state, scope, f) for f in reversed(rows)]

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


@router.get("/api/kbs/{kb}/feedback", response_model=list[HandledRow])
async def kb_feedback(
    kb: str,
    scope: Caller,
    state: State,
    rating: Annotated[int | None, Query(ge=-1, le=1)] = None,
    handled: bool | None = None,
) -> list[dict[str, Any]]:
    """The tenant's feedback on one KB, newest first (admins who may add to the KB: its FAQ rows)."""

    def run() -> list[dict[str, Any]]:
        require_kb(state.lore, scope, kb, Action.UPLOAD)  # 404 for a KB it does not see, before the role
        _review(scope)
        rows = [
            f
            for f in state.lore.catalog.list_feedback(rating=rating, kb=kb)
            if f.tenant_id == scope.tenant and (handled is None or (f.handled_at is not None) == handled)
        ]
        return [_row(state, scope, f) for f in reversed(rows)]

    return await run_in_threadpool(run)


@router.post("/api/feedback/{feedback_id}/faq", status_code=201, response_model=FeedbackFaq)
async def feedback_to_faq(feedback_id: int, body: FaqBody, scope: Caller, state: State) -> dict[str, Any]:
    """Turn a rating into a FAQ row of a scenario of its KB (question + the corrected answer; indexed at
    the scenario's next build) and mark the rating handled (admins who may add to the KB)."""
    if not 0 < feedback_id < 2**31:
        raise HTTPException(404, f"feedback {feedback_id} not found")

    def run() -> dict[str, Any]:
        lore = state.lore
        _review(scope)
        f = lore.catalog.get_feedback(feedback_id, scope.tenant)
        require_kb(lore, scope, f.kb, Action.UPLOAD)
        sc = require_scenario(lore, scope, body.scenario)
        if sc.kb_name != f.kb:
            raise HTTPException(
                422, f"scenario '{sc.id}' answers from '{sc.kb_name}', not from this rating's KB '{f.kb}'"
            )
        question = (body.question or f.question).strip()
        if not 0 < len(question) <= 2000:
            raise HTTPException(422, "question: 1 to 2000 characters (the rating's own is empty or longer)")
        row = FaqRowIn(
            revision=faq_edit.revision(sc.faq_path),
            question=question,
            answer=body.answer,
            source=body.source,
            dataset=body.dataset,
        )
        with lore.catalog.transaction():
            saved = _save(state, scope, sc.id, None, row)
            handled = lore.catalog.mark_feedback_handled(
                f.id, scope.tenant, by=scope.actor, handled_as=f"faq:{sc.id}:{saved.index}"
            )
        return {"feedback": _row(state, scope, handled), "scenario": sc.id, "faq": _row_json(saved)}

    return await run_in_threadpool(run)
