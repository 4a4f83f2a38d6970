"""Hybrid search over one knowledge base, bounded by the caller's scope (`lore.app.searching`)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app import searching
from lore.app.requests import SearchRequest
from lore.app.searching import SearchResult

router = APIRouter(tags=["search"])


@router.post("/api/search", response_model=SearchResult)
async def search(body: SearchRequest, scope: Caller, state: State) -> SearchResult:
    """Hits, best first, with file/page/sheet/row and scores; the query's terms and the filter applied."""
    return await run_in_threadpool(searching.search, state.lore, scope, body)
