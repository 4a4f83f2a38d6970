"""Semantic cache of retrieval candidates on the real handbook KB: paraphrases hit, and a cached
candidate set is never served to another scope, version or cache epoch."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import Retriever, SearchOptions
from lore.retrieve.semantic_cache import CachedRetriever, SemanticCache, anchors, scope_key
from lore.schema import Hit, SearchFilter
from tests.conftest import EXAMPLES


class Counting(Retriever):
    """The real retriever, counting the searches that reach the store."""

    calls = 0

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        self.calls += 1
        return super().search(query, options, vector=vector)


@pytest.fixture(scope="module")
def lore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lore]:
    home: Path = tmp_path_factory.mktemp("semcache")
    lore = Lore(load_settings(home=home))
    lore.create_kb("hb")
    lore.ingest("hb", [EXAMPLES])
    yield lore
    lore.close()


def cached(
    lore: Lore, cache: SemanticCache, epoch: int = 0, ns: str = "hb"
) -> tuple[CachedRetriever, Counting]:
    r = lore.retriever("hb")
    inner = Counting(r.store, r.embedder, r.cache)
    return CachedRetriever(inner, cache, epoch=epoch, namespace=ns), inner


def test_paraphrase_hits_within_the_same_scope(lore: Lore) -> None:
    cr, inner = cached(lore, SemanticCache(threshold=0.97))
    first = cr.search("报销需要什么材料？", SearchOptions())
    again = cr.search("报销需要哪些材料？", SearchOptions())
    assert (
        inner.calls == 1
        and cr.last_cached
        and [h.chunk.chunk_id for h in again] == [h.chunk.chunk_id for h in first]
    )
    cr.search("年假有几天？", SearchOptions())  # a different question is a real search
    assert inner.calls == 2 and not cr.last_cached


def test_never_served_to_another_scope(lore: Lore) -> None:
    # Threshold 0: any query would match -- only the scope key keeps entries apart.
    cache = SemanticCache(threshold=0.0)
    cr, inner = cached(lore, cache)
    base = SearchOptions()
    assert cr.search("报销需要什么材料？", base)
    for scope in (
        SearchFilter(tenant_ids=["tenant-b"]),
        SearchFilter(dataset_ids=["other"]),
        SearchFilter(roles=["sales"]),
        SearchFilter(visibility=["public"]),
        SearchFilter(source_types=["table_row"]),
        SearchFilter(document_ids=["nope"]),
    ):
        calls = inner.calls
        hits = cr.search("报销需要什么材料？", replace(base, filter=scope))
        assert inner.calls == calls + 1 and not cr.last_cached, scope
        if scope.tenant_ids or scope.dataset_ids or scope.document_ids or scope.visibility:
            assert hits == []  # the real answer in that scope: nothing, not tenant A's candidates
    calls = inner.calls
    cr.search("报销需要什么材料？", replace(base, top_k=3))  # other search options: other key
    assert inner.calls == calls + 1


def test_never_served_to_another_version_or_epoch(lore: Lore) -> None:
    cache = SemanticCache(threshold=0.0)
    cr, inner = cached(lore, cache)
    v1 = SearchOptions(filter=SearchFilter(version_seq=1))
    cr.search("报销需要什么材料？", v1)
    cr.search("报销需要什么材料？", SearchOptions(filter=SearchFilter(version_seq=2)))
    assert inner.calls == 2
    bumped, inner2 = cached(lore, cache, epoch=1)  # an activation bumped the epoch
    bumped.search("报销需要什么材料？", v1)
    assert inner2.calls == 1 and not bumped.last_cached
    other_kb, inner3 = cached(lore, cache, ns="another-kb")
    other_kb.search("报销需要什么材料？", v1)
    assert inner3.calls == 1
    same, inner4 = cached(lore, cache)
    same.search("报销需要什么材料？", v1)
    assert inner4.calls == 0 and same.last_cached  # the same scope still hits


def test_anchor_terms_must_match(lore: Lore) -> None:
    cr, inner = cached(lore, SemanticCache(threshold=0.5))
    cr.search("LF-200 的保修期多久？", SearchOptions())
    hits = cr.search("LF-500 的保修期多久？", SearchOptions())
    assert inner.calls == 2 and "LF-500" in hits[0].chunk.text
    assert anchors("LF-200 的保修期多久？") != anchors("LF-500 的保修期多久？")


def test_lru_limit_and_disabled() -> None:
    import numpy as np

    cache = SemanticCache(threshold=0.99, max_entries=2)
    key = scope_key(SearchOptions(), 0, "kb")
    for i in range(3):
        v = np.zeros(4, dtype=np.float32)
        v[i] = 1.0
        cache.put(key, v, f"q{i}", [])
    assert len(cache) == 2 and cache.get(key, np.eye(4, dtype=np.float32)[0], "q0") is None
    assert cache.get(key, np.eye(4, dtype=np.float32)[2], "q2") == ([], "q2")
    off = SemanticCache(max_entries=0)
    off.put(key, np.ones(4, dtype=np.float32), "q", [])
    assert len(off) == 0 and off.get(key, np.ones(4, dtype=np.float32), "q") is None


def test_scope_key_covers_every_filter_field() -> None:
    base = scope_key(SearchOptions(), 0)
    for name in SearchFilter.__dataclass_fields__:
        value = 3 if name == "version_seq" else ["x"]
        assert scope_key(SearchOptions(filter=SearchFilter(**{name: value})), 0) != base, name
    assert scope_key(SearchOptions(), 1) != base and scope_key(SearchOptions(), 0, "kb2") != base


def test_bm25_searches_pass_through_without_embedding(lore: Lore) -> None:
    cr, inner = cached(lore, SemanticCache(threshold=0.0))
    for _ in range(2):
        cr.search("报销需要什么材料？", SearchOptions(mode="bm25"))
        assert not cr.last_cached
    assert inner.calls == 2  # no cache entry keyed on a query embedding a BM25 search never needed


class Reversing:
    """A reranker (the `Reranker` protocol) that reverses the candidates, so its effect is visible."""

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        return list(reversed(hits))


def test_search_options_decide_whether_a_configured_reranker_runs(lore: Lore) -> None:
    r = lore.retriever("hb")
    reranked = Retriever(r.store, r.embedder, r.cache, reranker=Reversing())
    plain = [h.chunk.chunk_id for h in r.search("报销需要什么材料？", SearchOptions(top_k=50, rerank=False))]
    on = [h.chunk.chunk_id for h in reranked.search("报销需要什么材料？", SearchOptions(top_k=50))]
    off = [
        h.chunk.chunk_id for h in reranked.search("报销需要什么材料？", SearchOptions(top_k=50, rerank=False))
    ]
    assert off == plain and on == plain[::-1] and len(plain) > 1
