"""Two-stage retrieval over one store: recall K candidates, optional rerank, return the top hits."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from lore.config import RerankSettings, RetrieveSettings
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.errors import LoreError
from lore.events import collecting
from lore.lexical import tokenize
from lore.lexical.bilingual import other_language_share, translate_terms
from lore.retrieve.rerank.base import RERANK_NOTE, RerankInfo, report
from lore.schema import Hit, SearchFilter, SearchMode
from lore.store.base import StoreQuery, VectorStore
from lore.store.fusion import RRF_K
from lore.text.normalise import normalise


class Reranker(Protocol):
    """Re-scores candidates for a query (the offline learned model, a `/rerank` endpoint, the chat LLM).
    Raises LoreError when it cannot; the retriever then keeps the first-stage order with a note."""

    name: str

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """Return the hits re-ordered best first, with `score` replaced by the reranker's."""


@dataclass
class SearchOptions:
    """How one search runs: mode, recall depth, returned hits, RRF constant, score floor, and whether a
    configured reranker re-scores the first `rerank_k` candidates (a retrieval plan may skip it)."""

    mode: SearchMode = "hybrid"
    recall_k: int = 50
    top_k: int = 10
    rrf_k: int = RRF_K
    min_score: float = 0.0
    filter: SearchFilter = field(default_factory=SearchFilter)
    rerank: bool = True
    rerank_k: int = 50
    # Hybrid: BM25 also matches the query's words translated when most candidates are in another language.
    translate: bool = True
    max_terms: int = 64  # distinct BM25 query terms matched (`capped_terms`)

    @classmethod
    def from_settings(
        cls,
        r: RetrieveSettings,
        top_k: int | None = None,
        filter: SearchFilter | None = None,
        rerank: RerankSettings | None = None,
    ) -> SearchOptions:
        """The configured defaults (`[retrieve]`, and `[rerank]`'s depths when given), with another
        `top_k` or filter if given."""
        on = rerank is not None and rerank.provider != "none"
        keep = top_k or (rerank.top_k if on and rerank and rerank.top_k else r.top_k)
        return cls(
            r.mode,
            r.recall_k,
            keep,
            r.rrf_k,
            r.min_score,
            filter or SearchFilter(),
            on,
            rerank.rerank_k if rerank else cls.rerank_k,
            r.translate,
            r.max_query_terms,
        )


class Retrieval(Protocol):
    """What callers need of retrieval: search, the query's embedding, and the embedder and its cache
    (for evidence and verification). `Retriever` and its caching/rewriting wrappers implement it."""

    @property
    def embedder(self) -> Embedder: ...

    @property
    def cache(self) -> EmbeddingCache | None: ...

    def embed_query(self, query: str) -> np.ndarray:
        """The query's embedding (through the embedding cache)."""
        ...

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        """Hits for `query`, best first; `vector` is its embedding when the caller has it."""
        ...


class RetrieverWrapper:
    """Base of a wrapper around another retrieval: embedding is delegated to `inner`, explicitly."""

    def __init__(self, inner: Retrieval) -> None:
        self.inner = inner

    @property
    def embedder(self) -> Embedder:
        return self.inner.embedder

    @property
    def cache(self) -> EmbeddingCache | None:
        return self.inner.cache

    def embed_query(self, query: str) -> np.ndarray:
        return self.inner.embed_query(query)


CROSS_SHARE = 0.5  # share of first-stage candidates in another language than the query that translates it


class Retriever:
    """Embeds and tokenises the query, searches the store, reranks and de-duplicates."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.store, self.embedder, self.cache, self.reranker = store, embedder, cache, reranker
        self.last_rerank: RerankInfo | None = None

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        """Hits for `query`, best first, at most `top_k`, none below `min_score`; `vector` is the query's
        embedding when the caller already has it (embedded once per ask)."""
        opts = options or SearchOptions()
        if opts.mode not in ("dense", "hybrid"):
            vector = None
        elif vector is None:
            vector = self.embed_query(query)
        tokens = capped_terms(tokenize(query), opts.max_terms) if opts.mode in ("bm25", "hybrid") else []
        k = max(opts.recall_k, opts.top_k)
        hits = self.store.search(StoreQuery(opts.mode, k, vector, tokens, opts.filter, opts.rrf_k))
        if (
            opts.mode == "hybrid"
            and opts.translate
            and other_language_share(query, [h.chunk.text for h in hits]) >= CROSS_SHARE
        ):
            # Most candidates are in the other language: BM25 also looks for the query's words translated.
            extra = tokenize(translate_terms(query))
            if extra:
                terms = capped_terms(tokens + extra, opts.max_terms)
                hits = self.store.search(StoreQuery(opts.mode, k, vector, terms, opts.filter, opts.rrf_k))
        if self.reranker is not None and opts.rerank and hits:
            hits = self.rerank(query, hits, opts.rerank_k)
        hits = [h for h in dedupe(hits) if h.score >= opts.min_score or h.rerank_score is not None]
        return hits[: opts.top_k]

    def embed_query(self, query: str) -> np.ndarray:
        """The query's embedding (through the embedding cache)."""
        vector: np.ndarray = embed_texts(self.embedder, [query], "query", self.cache)[0]
        return vector

    def rerank(self, query: str, hits: Sequence[Hit], rerank_k: int) -> list[Hit]:
        """The first `rerank_k` hits re-scored by the reranker, the rest after them in first-stage order.
        A failing or invalid reranker keeps the first-stage order; either way the report is published."""
        assert self.reranker is not None
        head, tail = list(hits[:rerank_k]), list(hits[rerank_k:])
        started, cpu = time.perf_counter(), time.thread_time()
        failed: list[str] = []
        with collecting(RERANK_NOTE) as noted:
            try:
                ranked = self.reranker.rerank(query, head)
                if sorted(h.chunk.chunk_id for h in ranked) != sorted(h.chunk.chunk_id for h in head):
                    raise LoreError("the reranker returned other candidates than it was given")
            except LoreError as exc:
                ranked, failed = head, [f"rerank failed, first-stage order kept: {exc}"]
        notes = [str(e.data["text"]) for e in noted] + failed
        note = "; ".join(notes)
        info = RerankInfo(
            getattr(self.reranker, "name", type(self.reranker).__name__),
            len(head),
            (time.perf_counter() - started) * 1000,
            note,
            (time.thread_time() - cpu) * 1000,
        )
        self.last_rerank = info
        report(info)
        return [*ranked, *tail]


def capped_terms(tokens: list[str], limit: int) -> list[str]:
    """The tokens of the first `limit` distinct terms, in order with their repeats: BM25's work grows with
    every term's postings, and the terms after the first `limit` of a question rarely change its top hits."""
    kept: set[str] = set()
    out = []
    for token in tokens:
        if token not in kept and len(kept) >= limit:
            continue
        kept.add(token)
        out.append(token)
    return out


def dedupe(hits: Sequence[Hit]) -> list[Hit]:
    """Drop hits whose text repeats an earlier hit's (same passage ingested twice, overlaps)."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        key = normalise(hit.chunk.text)
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept
