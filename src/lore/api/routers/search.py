"""Hybrid search over one knowledge base, bounded by the caller's scope."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.api.limits import Seq, check_text
from lore.lexical import tokenize

router = APIRouter(tags=["search"])


class SearchBody(BaseModel):
    """A search; tenant, datasets and roles come from the API key."""

    model_config = ConfigDict(extra="forbid")

    kb: str
    query: str = Field(min_length=1, description="At most `answer.max_question_chars` characters.")
    top_k: int = Field(default=10, ge=1, le=100)
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    version: Seq | None = Field(default=None, description="Search this version (admin keys only).")


@router.post("/api/search")
async def search(body: SearchBody, scope: Caller, state: State) -> dict[str, Any]:
    """Hits, best first, with file/page/sheet/row and scores; the query's terms and the filter applied."""
    check_text("query", body.query, state.lore.settings.answer.max_question_chars)
    if body.version is not None and not scope.is_admin:
        raise HTTPException(403, "searching a named version needs an API key with the 'admin' role")
    options = scope.options(state.lore, body.top_k)
    if body.mode:
        options = replace(options, mode=body.mode)
    hits = await run_in_threadpool(state.lore.search, body.kb, body.query, options, body.version)
    read = await run_in_threadpool(state.lore.scoped, body.kb, options, body.version)  # the version searched
    return {"kb": body.kb, "query": body.query, "version": read.filter.version_seq,
            "terms": sorted(set(tokenize(body.query))), "filter": asdict(options.filter),
            "hits": [h.to_json() for h in hits]}
