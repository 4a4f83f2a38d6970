"""Hybrid search over one knowledge base, bounded by the caller's scope."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.lexical import tokenize
from lore.retrieve.rerank import RERANK_EVENTS, RerankInfo

router = APIRouter(tags=["search"])


class SearchBody(BaseModel):
    """A search; tenant, datasets and roles come from the API key."""

    model_config = ConfigDict(extra="forbid")

    kb: str
    query: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(default=10, ge=1, le=100)
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    version: int | None = Field(default=None, description="Search this version (admin keys only).")
    rerank: bool | None = Field(default=None, description="Re-score the candidates with the configured "
                                "reranker (default: as configured; false: first-stage order).")


@router.post("/api/search")
async def search(body: SearchBody, scope: Caller, state: State) -> dict[str, Any]:
    """Hits, best first, with file/page/sheet/row and scores; the query's terms and the filter applied."""
    if body.version is not None and not scope.is_admin:
        raise HTTPException(403, "searching a named version needs an API key with the 'admin' role")
    options = scope.options(state.lore, body.top_k, body.rerank)
    if body.mode:
        options = replace(options, mode=body.mode)
    events: list[RerankInfo] = []
    hits = await run_in_threadpool(_search, state, body, options, events)
    return {"kb": body.kb, "query": body.query, "terms": sorted(set(tokenize(body.query))),
            "filter": asdict(options.filter), "hits": [h.to_json() for h in hits],
            "rerank": events[-1].to_json() if events else None}


def _search(state: Any, body: SearchBody, options: Any, events: list[RerankInfo]) -> list[Any]:
    token = RERANK_EVENTS.set(events)
    try:
        return state.lore.search(body.kb, body.query, options, body.version)
    finally:
        RERANK_EVENTS.reset(token)
