"""A semantic cache of retrieval candidates.

Key = scope (the whole `SearchFilter`, version included, plus the search options and a namespace
such as the KB id) + cache epoch + the normalised query embedding. A lookup only ever compares
against entries of the exact same scope key, so a candidate set is never served to another tenant,
role set, dataset or version; an activation or an unversioned ingest bumps the epoch in the catalog, which
retires every earlier entry on every replica.
A near-identical embedding alone is not enough: the query's anchor terms (codes, numbers, rare
words) must match too, so "LF-200 warranty" never returns the candidates of "LF-500 warranty".
Final answers are never cached here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from lore.lexical import tokenize
from lore.retrieve.search import Retrieval, RetrieverWrapper, SearchOptions
from lore.schema import Hit, hit_from_record, hit_record
from lore.state.cache import Cache, CacheFront, LocalCache
from lore.text.sentences import KEY_WEIGHT, token_weights


def scope_key(options: SearchOptions, epoch: int, namespace: str = "") -> str:
    """Everything that bounds what a search may return, as one canonical string."""
    o = asdict(options)
    return json.dumps(
        {"ns": namespace, "epoch": epoch, "filter": o.pop("filter"), "options": o},
        sort_keys=True,
        ensure_ascii=False,
    )


def anchors(query: str) -> frozenset[str]:
    """The query's terms that change what it asks for: tokens with digits, and rare words."""
    weights = token_weights(tokenize(query))
    return frozenset(t for t, w in weights.items() if w >= KEY_WEIGHT or any(ch.isdigit() for ch in t))


class SemanticCache(CacheFront):
    """Candidate lists per scope on a `Cache` (in-process LRU, or Redis shared by every replica).

    `max_entries=0` disables it; each scope keeps its newest `max_entries` entries.
    """

    def __init__(self, threshold: float = 0.97, max_entries: int = 512, backend: Cache | None = None) -> None:
        self.threshold, self.max_entries = threshold, max_entries
        self.backend: Cache = backend if backend is not None else LocalCache("semantic", max_entries)

    def get(self, scope: str, vector: np.ndarray, query: str) -> tuple[list[Hit], str] | None:
        """(cached hits, the query they were cached for) when an entry of this exact scope is close enough."""
        if self.max_entries == 0:
            return None
        v = _unit(vector)
        want = sorted(anchors(query))
        best: dict[str, Any] | None = None
        best_sim = self.threshold
        for entry in self.backend.items(scope):
            sim = float(_decode(entry["v"]) @ v)
            if sim >= best_sim and entry["a"] == want:
                best, best_sim = entry, sim
        if best is None:
            return None
        return [hit_from_record(h) for h in best["h"]], best["q"]

    def put(self, scope: str, vector: np.ndarray, query: str, hits: Sequence[Hit]) -> None:
        """Remember the candidates of `query` under `scope` (the oldest of a full scope goes)."""
        if self.max_entries == 0:
            return
        entry = {
            "v": _encode(_unit(vector)),
            "a": sorted(anchors(query)),
            "q": query,
            "h": [hit_record(h) for h in hits],
        }
        self.backend.push(scope, entry, self.max_entries)

    def clear(self) -> None:
        """Forget everything."""
        self.backend.clear()

    def __len__(self) -> int:
        return len(self.backend)


def _encode(v: np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def _decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def _unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).ravel()
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class CachedRetriever(RetrieverWrapper):
    """A `Retrieval` whose searches go through a semantic cache bounded by scope and epoch."""

    def __init__(
        self, retriever: Retrieval, cache: SemanticCache, *, epoch: int = 0, namespace: str = ""
    ) -> None:
        super().__init__(retriever)
        self.semantic, self.epoch, self.namespace = cache, epoch, namespace
        self.last_cached = False

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        """Cached candidates for this scope and a close-enough query, else a real search (then cached)."""
        opts = options or SearchOptions()
        if opts.mode == "bm25":  # no query embedding to key on; a BM25 search costs less than making one
            self.last_cached = False
            return self.inner.search(query, opts)
        if vector is None:
            vector = self.embed_query(query)
        scope = scope_key(opts, self.epoch, self.namespace)
        found = self.semantic.get(scope, vector, query)
        self.last_cached = found is not None
        if found is not None:
            return found[0]
        hits = self.inner.search(query, opts, vector=vector)
        self.semantic.put(scope, vector, query, hits)
        return hits
