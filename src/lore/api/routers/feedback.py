"""Thumbs up/down with a note on an answer, identified by its trace id."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State

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
