"""Search options for one caller: the configured ones, bounded to its grant."""

from __future__ import annotations

from dataclasses import replace

from lore.engine import Lore
from lore.errors import LoreError
from lore.grant import Grant
from lore.retrieve.search import SearchOptions
from lore.store.base import STORES


def search_options(
    lore: Lore, grant: Grant | None, top_k: int | None = None, rerank: bool | None = None
) -> SearchOptions:
    """Configured search options bounded to the caller's grant (applied inside the store; None is the local
    operator: unbounded); `rerank` True/False overrides whether the configured reranker runs (True with
    none configured is an error)."""
    opts = lore.search_options(top_k)
    if grant is not None:
        opts = replace(opts, filter=grant.to_filter())
    if rerank and lore.settings.rerank.provider == "none":
        raise LoreError('rerank: no reranker is configured ([rerank] provider = "none")')
    return opts if rerank is None else replace(opts, rerank=rerank)


def bm25_scores_are_scoped(backend: str) -> bool:
    """Whether a backend computes BM25 statistics over the caller's visible chunks only (a store
    capability); where it counts every tenant's chunks, its BM25 scores are not shown (ranks are)."""
    return bool(getattr(STORES.get(backend), "bm25_scores_are_scoped", False))
