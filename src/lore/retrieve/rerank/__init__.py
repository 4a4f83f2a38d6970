"""Second-stage rankers behind `retrieve.search.Reranker`: the offline learned default (`ltr`), a
`/rerank` endpoint (`http`), the chat endpoint (`llm`), or any plug-in registered by name."""

from __future__ import annotations

from typing import Any

from lore.retrieve.rerank.base import (
    RERANK,
    RERANKERS,
    RerankError,
    RerankInfo,
    register_reranker,
)

__all__ = ["RERANK", "RERANKERS", "RerankError", "RerankInfo", "make_reranker", "register_reranker"]


def make_reranker(settings: Any, **deps: Any) -> Any:
    """The configured reranker (`[rerank] provider`), or None for "none"."""
    if settings.provider == "none":
        return None
    return RERANKERS.get(settings.provider)(settings, **deps)
