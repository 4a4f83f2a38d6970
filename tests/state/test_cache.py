"""The one cache home: LRU in process or Redis; search/semantic/embedding caches on it; epoch invalidation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lore.embed.cache import RedisEmbeddingCache
from lore.engine import Lore
from lore.retrieve.cache import SearchCache, cache_key
from lore.retrieve.search import SearchOptions
from lore.retrieve.semantic_cache import SemanticCache, scope_key
from lore.schema import Hit
from lore.state.cache import LocalCache, RedisCache, make_cache
from lore.state.redis import redis_client
from tests.chunks import make_chunk
from tests.conftest import EXAMPLES
from tests.servers import REDIS_URL
from tests.state.conftest import settings_for


def _hit(text: str, tenant: str = "default") -> Hit:
    chunk = make_chunk(
        chunk_id=text,
        text=text,
        parent_text=text,
        tenant_id=tenant,
        heading_path=["H1", "H2"],
        page=3,
        allowed_roles=["hr"],
    )
    return Hit(chunk, 0.5, dense_score=0.7, bm25_rank=2)


def test_cache_roundtrip_lists_and_counts(backend: str) -> None:
    cache = make_cache("t", settings_for(backend), 8)
    assert isinstance(cache, LocalCache if backend == "local" else RedisCache)
    assert cache.get("k") is None and cache.items("list") == []
    cache.set("k", {"a": [1, "二"]})
    assert cache.get("k") == {"a": [1, "二"]}
    for i in range(5):
        cache.push("list", i, keep=3)
    assert cache.items("list") == [2, 3, 4]  # the newest `keep`, oldest first
    assert (cache.hits, cache.misses) == (2, 2)
    cache.clear()
    assert cache.get("k") is None and cache.items("list") == []


def test_two_replicas_share_a_redis_cache_and_not_a_local_one(backend: str) -> None:
    a, b = make_cache("t", settings_for(backend), 8), make_cache("t", settings_for(backend), 8)
    a.set("k", 1)
    assert b.get("k") == (None if backend == "local" else 1)


def test_local_lru_bounds_entries_and_zero_disables() -> None:
    cache = LocalCache("t", 3)
    for i in range(4):
        cache.set(str(i), i)
    assert cache.get("0") is None and cache.get("3") == 3 and len(cache) == 3
    off = LocalCache("off", 0)
    off.set("k", 1)
    off.push("l", 1, 5)
    assert off.get("k") is None and off.items("l") == [] and len(off) == 0


def test_search_cache_returns_equal_hits_through_the_backend(backend: str) -> None:
    hits = [_hit("年假 15 天"), _hit("refund window", "tenant-b")]
    cache = SearchCache(backend=make_cache("search", settings_for(backend), 16))
    key = cache_key("kb", 0, SearchOptions(), "q")
    assert cache.get_or_search(key, lambda: hits) == (hits, False)
    again, cached = cache.get_or_search(key, lambda: pytest.fail("searched twice"))
    assert cached and again == hits  # every field, nested lists and None included


def test_semantic_cache_on_redis_is_shared_and_scoped(backend: str) -> None:
    settings = settings_for(backend)
    a = SemanticCache(0.9, 8, make_cache("semantic", settings, 8))
    b = SemanticCache(0.9, 8, make_cache("semantic", settings, 8))
    scope = scope_key(SearchOptions(), 1, "kb")
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    a.put(scope, v, "LF-200 warranty", [_hit("two years")])
    found = b.get(scope, v * 2, "LF-200 warranty")  # another replica, same scope and epoch
    if backend == "local":
        assert found is None
    else:
        assert found is not None and found[0][0].chunk.text == "two years"
    assert b.get(scope_key(SearchOptions(), 2, "kb"), v, "LF-200 warranty") is None  # epoch moved
    assert a.get(scope, v, "LF-500 warranty") is None  # another anchor term


def test_redis_embedding_cache_shares_vectors(redis_only: str) -> None:
    backend = redis_only
    one = RedisEmbeddingCache(redis_client(REDIS_URL), backend, 60)
    two = RedisEmbeddingCache(redis_client(REDIS_URL), backend, 60)
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    one.put_many("m", "passage", ["a", "乙"], vectors)
    found = two.get_many("m", "passage", ["乙", "missing", "a"])
    assert (
        set(found) == {0, 2} and np.array_equal(found[0], vectors[1]) and np.array_equal(found[2], vectors[0])
    )
    assert two.get_many("m", "query", ["a"]) == {} and two.count("m") == 2


def test_failing_redis_is_a_miss_not_an_error() -> None:
    dead = "redis://127.0.0.1:1/0"
    cache = RedisCache("t", redis_client(dead), "x", 60)
    cache.set("k", 1)
    cache.push("l", 1, 3)
    assert cache.get("k") is None and cache.items("l") == []
    emb = RedisEmbeddingCache(redis_client(dead), "x", 60)
    emb.put_many("m", "query", ["a"], np.ones((1, 3), dtype=np.float32))
    assert emb.get_many("m", "query", ["a"]) == {}


def test_unversioned_ingest_retires_every_replicas_cached_answers(backend: str, tmp_path: Path) -> None:
    """Two replicas (own homes; one catalog and one store): a file ingested through one is seen by the
    other's deep mode
    at once; the catalog epoch moved, so no cached candidates of the old content are served."""
    catalog = f"sqlite:///{tmp_path / 'catalog.db'}"
    store = {"uri": str(tmp_path / "store")}
    a = Lore(settings_for(backend, home=tmp_path / "a", catalog_url=catalog, store=store))
    b = Lore(settings_for(backend, home=tmp_path / "b", catalog_url=catalog, store=store))
    a.create_kb("hb")
    a.ingest("hb", [EXAMPLES / "employee_handbook.md"])
    kb = b.catalog.get_kb("hb")
    before = b.catalog.cache_epoch(kb.id)
    question = "What is the Zephyr-9 calibration interval?"

    def deep_answer(lore: Lore) -> dict:
        events = list(lore.ask("hb", question, mode="deep"))
        return events[-1].data

    assert deep_answer(b)["refused"] is True
    extra = tmp_path / "zephyr.md"
    extra.write_text(
        "# Zephyr-9\n\nThe Zephyr-9 calibration interval is 90 days, per the lab manual.\n", encoding="utf-8"
    )
    a.ingest("hb", [extra])
    assert b.catalog.cache_epoch(kb.id) == before + 1
    end = deep_answer(b)
    assert end["refused"] is False and "90" in end["answer"]
    a.close()
    b.close()
