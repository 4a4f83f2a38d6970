"""What every reranker shares: the plug-in registry, the calibrated score, the report of one rerank
(provider, candidates, ms, note), reported to the request's event stream (`lore.events`) as `rerank`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lore.errors import LoreError
from lore.events import emit
from lore.registry import Registry
from lore.schema import Hit


class RerankError(LoreError):
    """The reranker could not score the candidates; the caller keeps the first-stage order."""


@dataclass
class RerankInfo:
    """One rerank: who scored how many candidates in how long, and why the order was kept if it was."""

    provider: str
    candidates: int
    ms: float
    note: str = ""
    cpu_ms: float = (
        0.0  # this thread's CPU time: what the rerank costs apart from waiting (busy hosts, endpoints)
    )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "candidates": self.candidates,
            "ms": round(self.ms, 1),
        }
        if self.note:
            out["note"] = self.note
        return out


RERANK = "rerank"  # the event a finished rerank reports: `RerankInfo.to_json()`
RERANK_NOTE = "rerank_note"  # a reranker's remark on the rerank in progress: `{"text"}`


def note(text: str) -> None:
    """A reranker's remark on the rerank in progress (e.g. a budget cut); it lands in the report."""
    emit(RERANK_NOTE, text=text)


def report(info: RerankInfo) -> None:
    """Report one rerank to the request's event stream (status events, traces, search results take it)."""
    emit(RERANK, **info.to_json())


def sigmoid(x: float) -> float:
    """Logistic function, safe for large |x|."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def to_unit(scores: Sequence[float]) -> list[float]:
    """Scores already in [0, 1] (Cohere, Jina, TEI's default) stay; raw logits go through a sigmoid."""
    if all(0.0 <= s <= 1.0 for s in scores):
        return [float(s) for s in scores]
    return [sigmoid(float(s)) for s in scores]


def reorder(hits: Sequence[Hit], scores: Sequence[float], unit: Sequence[float] | None = None) -> list[Hit]:
    """Hits sorted by `scores` (ties keep first-stage order), each carrying its [0, 1] score as
    `rerank_score` and `score`."""
    unit = list(unit) if unit is not None else to_unit(scores)
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [replace(hits[i], score=unit[i], rerank_score=unit[i]) for i in order]


RerankerFactory = Callable[..., Any]
"""(settings: RerankSettings, **deps) -> Reranker; deps: `llm` (a chat client or None)."""

RERANKERS: Registry[RerankerFactory] = Registry("rerank.provider", "lore.rerankers")


def register_reranker(name: str, factory: RerankerFactory) -> None:
    """Register a reranker plug-in the same way the built-in ones are."""
    RERANKERS.register(name, factory)
