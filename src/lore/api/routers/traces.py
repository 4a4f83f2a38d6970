"""Request traces: stages with timings, first-token latency, route, plan, hits, confidences."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import redact_trace, trace_resource
from lore.app.results import TraceDetail, TraceSummary
from lore.policy import Action, check

router = APIRouter(prefix="/api/traces", tags=["traces"])


@router.get("", response_model=list[TraceSummary])
async def list_traces(
    scope: Caller, state: State, kb: str | None = None, limit: int = Query(default=50, ge=1, le=500)
) -> list[dict[str, Any]]:
    """The caller's most recent traces (an admin: its tenant's), without their full data."""
    rows = await run_in_threadpool(state.lore.catalog.list_traces, scope.tenant, kb, limit, scope.owner_key)
    return [{k: v for k, v in t.to_json().items() if k != "data"} for t in rows]


@router.get("/{trace_id}", response_model=TraceDetail)
async def get_trace(trace_id: str, scope: Caller, state: State) -> dict[str, Any]:
    """One of the caller's traces in full (an admin: any of its tenant's, without passages its grant cannot
    read)."""

    def run() -> dict[str, Any]:
        trace = state.lore.catalog.get_trace(trace_id, scope.tenant)
        check(scope, Action.READ_TRACE, trace_resource(trace))
        return redact_trace(state.lore, scope, trace)

    return await run_in_threadpool(run)
