"""Rank fusion as plain functions, chosen by name (reciprocal-rank fusion is the default)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

Ranking = Sequence[Hashable]
Fuser = Callable[[Sequence[Ranking], int], list[tuple[Hashable, float]]]


def rrf(rankings: Sequence[Ranking], k: int = 60) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank from 1."""
    scores: dict[Hashable, float] = {}
    first_seen: dict[Hashable, int] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(key, len(first_seen))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))


def rank_sum(rankings: Sequence[Ranking], k: int = 60) -> list[tuple[Hashable, float]]:
    """Borda-style fusion: each list contributes (depth - rank); `k` is unused."""
    del k
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        depth = len(ranking)
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + (depth - rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


FUSERS: dict[str, Fuser] = {"rrf": rrf, "rank_sum": rank_sum}
