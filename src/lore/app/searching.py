"""The search use case: one KB's hits for a caller, bounded by its grant, with the version searched."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from pydantic import BaseModel

from lore.app.access import require_kb
from lore.app.options import bm25_scores_are_scoped, search_options
from lore.app.requests import SearchRequest
from lore.app.results import SearchHit
from lore.engine import Lore
from lore.errors import InvalidRequestError
from lore.grant import Grant
from lore.lexical import tokenize
from lore.policy import Action
from lore.retrieve.rerank import RERANK_EVENTS, RerankInfo


class SearchResult(BaseModel):
    """Hits, best first, with file/page/sheet/row and scores; the query's terms and the filter applied."""

    kb: str
    query: str
    mode: str
    version: int | None
    terms: list[str]
    filter: dict[str, Any]
    hits: list[SearchHit]
    rerank: dict[str, Any] | None = None


def search(lore: Lore, caller: Grant | None, request: SearchRequest) -> SearchResult:
    """Search one KB as `caller` (blocking; None: the local operator, unbounded); a key holder does not see
    BM25 scores where the store counts other tenants' chunks."""
    limit = lore.settings.answer.max_question_chars
    if len(request.query) > limit:
        raise InvalidRequestError(f"query: {len(request.query)} characters, limit {limit}")
    action = Action.READ if request.version is None else Action.READ_VERSION
    kb = lore.catalog.get_kb(request.kb) if caller is None else require_kb(lore, caller, request.kb, action)
    options = search_options(lore, caller, request.top_k, request.rerank)
    if request.mode:
        options = replace(options, mode=request.mode)
    if request.recall_k:
        options = replace(options, recall_k=request.recall_k)
    if request.rerank_k:
        options = replace(options, rerank_k=request.rerank_k)
    events: list[RerankInfo] = []
    token = RERANK_EVENTS.set(events)
    try:
        hits = lore.search(request.kb, request.query, options, request.version)
    finally:
        RERANK_EVENTS.reset(token)
    read = lore.scoped(request.kb, options, request.version)  # the version searched
    rows = [h.to_json() for h in hits]
    if caller is not None and not bm25_scores_are_scoped(kb.store_backend):
        for row in rows:
            row["bm25_score"] = None
    return SearchResult(
        kb=request.kb,
        query=request.query,
        mode=options.mode,
        version=read.filter.version_seq,
        terms=sorted(set(tokenize(request.query))),
        filter=asdict(options.filter),
        hits=[SearchHit.model_validate(row) for row in rows],
        rerank=events[-1].to_json() if events else None,
    )
