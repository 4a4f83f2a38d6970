"""The one cache home: a small key-value interface with an in-process LRU and a Redis backend.

Callers key entries by everything that decides the value (full scope + version/cache epoch), so
nothing is ever invalidated by deleting keys: a catalog epoch bump makes old keys unreachable, on
every replica at once, and they age out (LRU in process, TTL in Redis). Values are JSON-ready.
A failing Redis is a miss (logged), never an error for the request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from cachetools import LRUCache

from lore.config import Settings
from lore.metrics import CACHE_LOOKUPS
from lore.state.redis import redis_client, redis_errors

log = logging.getLogger("lore.cache")


class Cache(Protocol):
    """Key-value entries and bounded lists of entries; `hits`/`misses` count `get` and `items` lookups."""

    name: str
    hits: int
    misses: int

    def get(self, key: str) -> Any | None:
        """The value stored under `key`, or None."""

    def set(self, key: str, value: Any) -> None:
        """Store `value` (JSON-ready) under `key`."""

    def push(self, key: str, value: Any, keep: int) -> None:
        """Append `value` to the list under `key`, keeping its newest `keep` values."""

    def items(self, key: str) -> list[Any]:
        """The list under `key`, oldest first (empty if none)."""

    def clear(self) -> None:
        """Forget every entry of this cache."""

    def __len__(self) -> int:
        """Entries held (list values count each element)."""


class _Counted:
    name = ""
    hits = misses = 0

    def _count(self, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        CACHE_LOOKUPS.labels(self.name, "hit" if hit else "miss").inc()


class _Bucket(list):  # type: ignore[type-arg]
    """A list value: counts as its length against the LRU's size."""


class LocalCache(_Counted):
    """In-process, thread-safe LRU (cachetools) of at most `maxsize` entries; 0 disables it."""

    def __init__(self, name: str, maxsize: int) -> None:
        self.name, self.maxsize = name, maxsize
        self._lru: LRUCache[str, Any] = LRUCache(max(1, maxsize), getsizeof=_size)
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            value = self._lru.get(key) if self.maxsize else None
        self._count(value is not None)
        return value

    def set(self, key: str, value: Any) -> None:
        if self.maxsize:
            with self._lock:
                self._lru[key] = value

    def push(self, key: str, value: Any, keep: int) -> None:
        if not self.maxsize:
            return
        with self._lock:
            old = self._lru.pop(key, None)
            self._lru[key] = _Bucket([*(old or []), value][-max(1, min(keep, self.maxsize)) :])

    def items(self, key: str) -> list[Any]:
        with self._lock:
            found = list(self._lru.get(key) or []) if self.maxsize else []
        self._count(bool(found))
        return found

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()

    def __len__(self) -> int:
        with self._lock:
            return int(self._lru.currsize) if self._lru else 0


class CacheFront:
    """A cache of one kind of result kept on a `Cache` backend, counting what the backend counts."""

    backend: Cache

    @property
    def hits(self) -> int:
        return self.backend.hits

    @property
    def misses(self) -> int:
        return self.backend.misses


class EvictingLRU(LRUCache):  # type: ignore[type-arg]
    """A cachetools LRU that calls `on_evict(key)` for each entry it drops to stay within `maxsize`."""

    def __init__(self, maxsize: int, on_evict: Callable[[Any], None]) -> None:
        super().__init__(maxsize)
        self.on_evict = on_evict

    def popitem(self) -> tuple[Any, Any]:
        key, value = super().popitem()
        self.on_evict(key)
        return key, value


def _size(value: Any) -> int:
    return len(value) if isinstance(value, _Bucket) else 1


class RedisCache(_Counted):
    """Entries in Redis under `<prefix>:cache:<name>:<sha256 of the key>`, expiring after `ttl_s`."""

    def __init__(self, name: str, client: Any, prefix: str, ttl_s: int) -> None:
        self.name, self.client, self.ttl_s = name, client, ttl_s
        self.space = f"{prefix}:cache:{name}:"

    def _key(self, key: str) -> str:
        return self.space + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> Any | None:
        try:
            raw = self.client.get(self._key(key))
        except redis_errors() as exc:
            log.warning("cache %s: Redis unavailable, treated as a miss: %s", self.name, exc)
            raw = None
        self._count(raw is not None)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value: Any) -> None:
        try:
            self.client.set(self._key(key), json.dumps(value, ensure_ascii=False), ex=self.ttl_s)
        except redis_errors() as exc:
            log.warning("cache %s: Redis unavailable, entry not stored: %s", self.name, exc)

    def push(self, key: str, value: Any, keep: int) -> None:
        k = self._key(key)
        try:
            pipe = self.client.pipeline(transaction=True)
            pipe.rpush(k, json.dumps(value, ensure_ascii=False)).ltrim(k, -max(1, keep), -1).expire(
                k, self.ttl_s
            )
            pipe.execute()
        except redis_errors() as exc:
            log.warning("cache %s: Redis unavailable, entry not stored: %s", self.name, exc)

    def items(self, key: str) -> list[Any]:
        try:
            raw = self.client.lrange(self._key(key), 0, -1)
        except redis_errors() as exc:
            log.warning("cache %s: Redis unavailable, treated as a miss: %s", self.name, exc)
            raw = []
        self._count(bool(raw))
        return [json.loads(r) for r in raw]

    def clear(self) -> None:
        try:
            for batch in _chunks(self.client.scan_iter(match=self.space + "*", count=500), 500):
                self.client.delete(*batch)
        except redis_errors() as exc:
            log.warning("cache %s: Redis unavailable, not cleared: %s", self.name, exc)

    def __len__(self) -> int:
        total = 0
        for k in self.client.scan_iter(match=self.space + "*", count=500):
            total += self.client.llen(k) if self.client.type(k) in (b"list", "list") else 1
        return total


def _chunks(it: Any, n: int) -> Any:
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch


def make_cache(name: str, settings: Settings | None, maxsize: int) -> Cache:
    """A Redis cache when `[redis] url` is set (shared by every replica), else an in-process LRU."""
    r = settings.redis if settings is not None else None
    if r is not None and r.url and maxsize:
        return RedisCache(name, redis_client(r.url), r.prefix, r.cache_ttl_s)
    return LocalCache(name, maxsize)
