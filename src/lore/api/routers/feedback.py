"""Thumbs up/down with a note on an answer, identified by its trace id."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.access import trace_resource
from lore.api.deps import Caller, State
from lore.policy import Action, check

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
    def run() -> Any:
        check(scope, Action.READ_TRACE, trace_resource(state.lore.catalog.get_trace(body.trace_id, scope.tenant)))
        return state.lore.catalog.add_feedback(trace_id=body.trace_id, tenant_id=scope.tenant, key_id=scope.key_id,
                                               rating=body.rating, note=body.note)
    fb = await run_in_threadpool(run)
    return {"id": fb.id, "trace_id": fb.trace_id, "rating": fb.rating, "kb": fb.kb}
