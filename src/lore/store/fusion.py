"""Reciprocal-rank fusion of several rankings (hybrid search in the store, query variants in retrieval)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

from lore.schema import Hit

K = TypeVar("K", bound=Hashable)
Ranking = Sequence[K]


RRF_K = 60
"""The reciprocal-rank fusion constant every store and stage fuses with unless configured."""


def rrf_score(ranks: Iterable[int], k: int = RRF_K) -> float:
    """A document's fused score from its rank (from 1) in each ranking that holds it."""
    return sum(1.0 / (k + rank) for rank in ranks)


def rrf(rankings: Sequence[Ranking[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank from 1."""
    scores: dict[K, float] = {}
    first_seen: dict[K, int] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(key, len(first_seen))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))


def fuse_hits(dense: Sequence[Hit], bm25: Sequence[Hit], k: int, rrf_k: int = RRF_K) -> list[Hit]:
    """RRF of a dense and a BM25 hit list, each fused hit keeping both components' scores and ranks."""
    by_id = {h.chunk.chunk_id: h for h in (*bm25, *dense)}
    d = {h.chunk.chunk_id: (rank, h.dense_score) for rank, h in enumerate(dense, start=1)}
    b = {h.chunk.chunk_id: (rank, h.bm25_score) for rank, h in enumerate(bm25, start=1)}
    fused = rrf([[h.chunk.chunk_id for h in dense], [h.chunk.chunk_id for h in bm25]], rrf_k)[:k]
    hits = []
    for cid, score in fused:
        dr, ds = d.get(cid, (None, None))
        br, bs = b.get(cid, (None, None))
        hits.append(Hit(by_id[cid].chunk, score, ds, bs, dr, br, fused_score=score))
    return hits
