"""The search use case: one KB's hits for a caller, bounded by its grant, with the version searched."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from pydantic import BaseModel

from lore.answer.context import build_passages
from lore.answer.evidence import EvidenceQuery, default_model, judge_evidence
from lore.app.access import require_kb
from lore.app.options import bm25_scores_are_scoped, search_options
from lore.app.requests import SearchRequest
from lore.app.results import SearchHit
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.errors import check_length
from lore.events import collecting
from lore.grant import Grant
from lore.lexical import tokenize
from lore.policy import Action
from lore.retrieve.rerank import RERANK
from lore.retrieve.search import SearchOptions
from lore.schema import Hit


class SearchEvidence(BaseModel):
    """The hits judged as an answer judges them first: P(the KB answers), the KB version's refusal threshold,
    and whether the passages hold the question's words (when not, an answer refuses at any threshold)."""

    confidence: float
    threshold: float
    held: bool
    reasons: list[str]


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
    evidence: SearchEvidence | None = None  # with `explain`


def search(lore: Lore, caller: Grant | None, request: SearchRequest) -> SearchResult:
    """Search one KB as `caller` (blocking; None: the local operator, unbounded); a key holder does not see
    BM25 scores where the store counts other tenants' chunks."""
    check_length("query", request.query, lore.settings.answer.max_question_chars)
    action = Action.READ if request.version is None else Action.READ_VERSION
    kb = lore.catalog.get_kb(request.kb) if caller is None else require_kb(lore, caller, request.kb, action)
    options = search_options(lore, caller, request.top_k, request.rerank)
    if request.mode:
        options = replace(options, mode=request.mode)
    if request.recall_k:
        options = replace(options, recall_k=request.recall_k)
    if request.rerank_k:
        options = replace(options, rerank_k=request.rerank_k)
    if request.rrf_k:
        options = replace(options, rrf_k=request.rrf_k)
    with collecting(RERANK) as reranks:
        hits = lore.search(request.kb, request.query, options, request.version)
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
        rerank=dict(reranks[-1].data) if reranks else None,
        evidence=_evidence(lore, kb, request.query, hits, read) if request.explain else None,
    )


def _evidence(
    lore: Lore, kb: KnowledgeBase, query: str, hits: list[Hit], read: SearchOptions
) -> SearchEvidence:
    """Judge the hits' passages as an ask does first (not its per-part or other-language retries)."""
    a = lore.settings.answer
    passages = build_passages(hits, max_passages=a.max_passages, budget_units=a.context_budget)
    retriever = lore.retriever(kb)
    vector = retriever.embed_query(query) if passages and read.mode != "bm25" else None
    asked = EvidenceQuery(query, tokenize(query), vector, retriever.embedder, retriever.cache)
    judged = judge_evidence(asked, passages, threshold=0.0)  # sufficient at 0: the passages hold the question
    threshold = lore.evidence_threshold(kb, read.filter.version_seq, query)  # for the query's language
    return SearchEvidence(
        confidence=judged.confidence,
        threshold=default_model().threshold_for(query) if threshold is None else threshold,
        held=judged.sufficient,
        reasons=judged.reasons,
    )
