"""Conversation sessions: a key sees the sessions it opened; an admin key those of its whole tenant."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import own_session, redact_end, trace_resource, unreadable_citations
from lore.app.results import SessionDetail, SessionInfo
from lore.catalog.service_records import ChatSession
from lore.errors import NotFoundError
from lore.grant import Grant
from lore.policy import Action, check

router = APIRouter(prefix="/api/sessions", tags=["sessions"])


def _json(s: ChatSession) -> dict[str, Any]:
    return {
        "id": s.id,
        "kb": s.kb,
        "title": s.title,
        "summary": s.summary,
        "created_at": s.created_at.isoformat(),
        "updated_at": s.updated_at.isoformat(),
    }


@router.get("", response_model=list[SessionInfo])
async def list_sessions(scope: Caller, state: State, kb: str | None = None) -> list[dict[str, Any]]:
    """The caller's sessions (an admin: its tenant's), most recent first."""
    rows = await run_in_threadpool(state.lore.catalog.list_sessions, scope.tenant, kb, 50, scope.owner_key)
    return [_json(s) for s in rows]


@router.get("/{session_id}", response_model=SessionDetail)
async def get_session(session_id: str, scope: Caller, state: State) -> dict[str, Any]:
    """A session with its messages."""

    def run() -> dict[str, Any]:
        s = own_session(state.lore.catalog, session_id, scope)
        return {
            **_json(s),
            "messages": [
                {
                    "role": m.role,
                    "content": _content(state, scope, m.trace_id, m.content),
                    "query": m.query,
                    "trace_id": m.trace_id,
                    "created_at": m.created_at.isoformat(),
                }
                for m in state.lore.catalog.messages(s.id)
            ],
        }

    return await run_in_threadpool(run)


@router.delete("/{session_id}", status_code=204)
async def delete_session(session_id: str, scope: Caller, state: State) -> None:
    """Delete a session and its messages."""

    def run() -> None:
        own_session(state.lore.catalog, session_id, scope)
        state.lore.catalog.delete_session(session_id, scope.tenant)

    await run_in_threadpool(run)


def _content(state: Any, grant: Grant, trace_id: str | None, content: str) -> str:
    """An answer turn as the reader may see it: without passages (and the answer) outside its grant."""
    if trace_id is None:
        return content
    try:
        trace = state.lore.catalog.get_trace(trace_id, grant.tenant)
    except NotFoundError:
        return content
    check(grant, Action.READ_TRACE, trace_resource(trace))
    hidden = unreadable_citations(state.lore, grant, trace)
    return redact_end({}, hidden)["answer"] if hidden else content
