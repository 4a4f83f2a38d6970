"""Search results of scenario questions (in process, or in Redis for every replica), keyed by everything
that bounds them.

The key holds the KB id, its cache epoch, the tokenizer version (a shared cache never serves results
an older tokenizer found), the version, the full search options (whose filter
carries tenant, datasets, visibility, roles and sources) and the query: a cached result can only
ever be served to a request with exactly the same scope. Unversioned KBs are never cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict

import numpy as np

from lore.events import emit
from lore.lexical import TOKENIZER_VERSION
from lore.retrieve.search import Retrieval, RetrieverWrapper, SearchOptions
from lore.schema import Hit, hit_from_record, hit_record
from lore.state.cache import Cache, CacheFront, LocalCache

CACHE = "cache"  # the event a lookup reports to the request's stream: `{"hit", "key", "hits"}`


def _note(key: str, hit: bool, found: list[Hit]) -> None:
    emit(CACHE, hit=hit, key=key[:16], hits=len(found))


def cache_key(kb_id: str, epoch: int, options: SearchOptions, query: str) -> str:
    """The digest of every field that decides a search's results."""
    options_items = sorted(asdict(options).items(), key=lambda kv: kv[0])
    raw = repr((kb_id, epoch, TOKENIZER_VERSION, options_items, query))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class SearchCache(CacheFront):
    """`get_or_search(key, fn)` over a `Cache` (in-process LRU, or Redis shared by every replica)."""

    def __init__(self, max_entries: int = 2048, backend: Cache | None = None) -> None:
        self.max_entries = max_entries
        self.backend: Cache = backend if backend is not None else LocalCache("search", max_entries)

    def get_or_search(self, key: str, search: Callable[[], list[Hit]]) -> tuple[list[Hit], bool]:
        """(hits, whether they came from the cache)."""
        cached = self.backend.get(key)
        if cached is not None:
            found = [hit_from_record(h) for h in cached]
            _note(key, True, found)
            return found, True
        found = search()
        _note(key, False, found)
        self.backend.set(key, [hit_record(h) for h in found])
        return found, False

    def clear(self) -> None:
        self.backend.clear()


SEARCH_CACHE = SearchCache()  # the in-process default; `Lore.search_cache` is the configured one


class CachingRetriever(RetrieverWrapper):
    """A `Retrieval` whose searches of a KB version go through a `SearchCache`: the same KB,
    cache epoch, options (scope included) and query text give the same hits. An unversioned KB
    changes without an epoch bump, so its searches are never cached."""

    def __init__(self, inner: Retrieval, cache: SearchCache, kb_id: str, epoch: int) -> None:
        super().__init__(inner)
        self.search_cache, self.kb_id, self.epoch = cache, kb_id, epoch

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        opts = options or SearchOptions()
        if opts.filter.version_seq is None:
            return self.inner.search(query, opts, vector=vector)
        key = cache_key(self.kb_id, self.epoch, opts, query)
        return self.search_cache.get_or_search(key, lambda: self.inner.search(query, opts, vector=vector))[0]
