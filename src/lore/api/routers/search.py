"""Hybrid search over one knowledge base, bounded by the caller's scope."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.access import require_kb
from lore.api.deps import Caller, State, search_options
from lore.api.limits import Name, Seq, check_text
from lore.lexical import tokenize
from lore.policy import Action
from lore.retrieve.rerank import RERANK_EVENTS, RerankInfo

router = APIRouter(tags=["search"])


class SearchBody(BaseModel):
    """A search; tenant, datasets and roles come from the API key."""

    model_config = ConfigDict(extra="forbid")

    kb: Name
    query: str = Field(min_length=1, description="At most `answer.max_question_chars` characters.")
    top_k: int = Field(default=10, ge=1, le=100)
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    version: Seq | None = Field(default=None, description="Search this version (admin keys only).")
    rerank: bool | None = Field(
        default=None,
        description="Re-score the candidates with the configured "
        "reranker (default: as configured; false: first-stage order).",
    )


@router.post("/api/search")
async def search(body: SearchBody, scope: Caller, state: State) -> dict[str, Any]:
    """Hits, best first, with file/page/sheet/row and scores; the query's terms and the filter applied."""
    check_text("query", body.query, state.lore.settings.answer.max_question_chars)
    kb = await run_in_threadpool(
        require_kb, state.lore, scope, body.kb, Action.READ if body.version is None else Action.READ_VERSION
    )
    options = search_options(state.lore, scope, body.top_k, body.rerank)
    if body.mode:
        options = replace(options, mode=body.mode)
    events: list[RerankInfo] = []
    hits = await run_in_threadpool(_search, state, body, options, events)
    read = await run_in_threadpool(state.lore.scoped, body.kb, options, body.version)  # the version searched
    rows = [h.to_json() for h in hits]
    if not bm25_scores_are_scoped(kb.store_backend):
        for row in rows:
            row["bm25_score"] = None
    return {
        "kb": body.kb,
        "query": body.query,
        "version": read.filter.version_seq,
        "terms": sorted(set(tokenize(body.query))),
        "filter": asdict(options.filter),
        "hits": rows,
        "rerank": events[-1].to_json() if events else None,
    }


def _search(state: Any, body: SearchBody, options: Any, events: list[RerankInfo]) -> list[Any]:
    token = RERANK_EVENTS.set(events)
    try:
        return state.lore.search(body.kb, body.query, options, body.version)
    finally:
        RERANK_EVENTS.reset(token)


def bm25_scores_are_scoped(backend: str) -> bool:
    """Only the embedded store computes BM25 statistics over the caller's visible chunks; Milvus computes
    them over the whole collection (every tenant), so its BM25 scores are not shown (ranks are)."""
    return backend == "embedded"
