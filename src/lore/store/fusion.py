"""Reciprocal-rank fusion of several rankings (hybrid search in the store, query variants in retrieval)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

Ranking = Sequence[Hashable]


def rrf(rankings: Sequence[Ranking], k: int = 60) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank from 1."""
    scores: dict[Hashable, float] = {}
    first_seen: dict[Hashable, int] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(key, len(first_seen))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))
