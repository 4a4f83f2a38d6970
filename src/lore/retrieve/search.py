"""Two-stage retrieval over one store: recall K candidates, optional rerank, return the top hits."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from lore.config import RetrieveSettings
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.lexical import tokenize
from lore.schema import Hit, SearchFilter, SearchMode
from lore.store.base import StoreQuery, VectorStore


class Reranker(Protocol):
    """Re-scores candidates for a query (a local cross-encoder or a `/rerank` endpoint)."""

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """Return the hits re-ordered best first, with `score` replaced by the reranker's."""


@dataclass
class SearchOptions:
    """How one search runs: mode, recall depth, returned hits, RRF constant, score floor, and whether a
    configured reranker re-scores the candidates (a retrieval plan may skip it for short questions)."""

    mode: SearchMode = "hybrid"
    recall_k: int = 50
    top_k: int = 10
    rrf_k: int = 60
    min_score: float = 0.0
    filter: SearchFilter = field(default_factory=SearchFilter)
    rerank: bool = True

    @classmethod
    def from_settings(cls, r: RetrieveSettings, top_k: int | None = None,
                      filter: SearchFilter | None = None) -> SearchOptions:
        """The configured defaults (`[retrieve]`), with another `top_k` or filter if given."""
        return cls(r.mode, r.recall_k, top_k or r.top_k, r.rrf_k, r.min_score, filter or SearchFilter())


class Retriever:
    """Embeds and tokenises the query, searches the store, reranks and de-duplicates."""

    def __init__(self, store: VectorStore, embedder: Embedder, cache: EmbeddingCache | None = None,
                 reranker: Reranker | None = None) -> None:
        self.store, self.embedder, self.cache, self.reranker = store, embedder, cache, reranker

    def search(self, query: str, options: SearchOptions | None = None) -> list[Hit]:
        """Hits for `query`, best first, at most `top_k`, none below `min_score`."""
        opts = options or SearchOptions()
        vector = None
        if opts.mode in ("dense", "hybrid"):
            vector = embed_texts(self.embedder, [query], "query", self.cache)[0]
        tokens = tokenize(query) if opts.mode in ("bm25", "hybrid") else []
        k = max(opts.recall_k, opts.top_k)
        hits = self.store.search(StoreQuery(opts.mode, k, vector, tokens, opts.filter, opts.rrf_k))
        if self.reranker is not None and opts.rerank and hits:
            hits = self.reranker.rerank(query, hits)
        hits = [h for h in dedupe(hits) if h.score >= opts.min_score]
        return hits[: opts.top_k]


def dedupe(hits: Sequence[Hit]) -> list[Hit]:
    """Drop hits whose text repeats an earlier hit's (same passage ingested twice, overlaps)."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        key = normalise_text(hit.chunk.text)
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept


def normalise_text(text: str) -> str:
    """NFKC, whitespace collapsed, lower case: the key two texts are "the same passage" by."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()
