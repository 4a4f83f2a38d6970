"""Document-level ranking from chunk hits, for callers whose results are documents (benchmarks, eval,
`diff`): a document scores by its best chunk (`max`) or by the sum of its best `n` chunks (`sum`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from lore.schema import Hit

DocAggregate = Literal["max", "sum"]


def rank_documents(hits: Sequence[Hit], how: DocAggregate = "max", n: int = 2) -> list[tuple[str, float]]:
    """(document id, score) best first. Reranked chunks score by their calibrated `rerank_score`;
    documents seen only beyond the reranked head follow in first-stage order (with their first score)."""
    head: dict[str, list[float]] = {}
    for h in hits:
        if h.rerank_score is not None:
            head.setdefault(h.chunk.document_id, []).append(h.rerank_score)
    agg = {d: max(s) if how == "max" else sum(sorted(s, reverse=True)[:n]) for d, s in head.items()}
    ranked = sorted(agg.items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    seen = set(agg)
    for h in hits:
        if h.chunk.document_id not in seen:
            seen.add(h.chunk.document_id)
            ranked.append((h.chunk.document_id, h.score))
    return ranked
