"""A lexical index written by an older tokenizer (accents kept) is re-tokenised when it is opened:
BM25 then finds "Beyoncé" for "Beyonce", and the vectors are the ones that were stored."""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lore.lexical import TOKENIZER_VERSION, tokenize
from lore.schema import Chunk, index_text
from lore.store import StoreQuery, open_store
from lore.store import retokenise as rt
from lore.store.embedded import EmbeddedStore
from tests.chunks import BASE
from tests.servers import MilvusServer
from tests.store.shared import DIM, unit_vectors

TEXTS = [
    "Beyoncé Giselle Knowles-Carter is an American singer.",
    "Frédéric Chopin was a Polish composer.",
    "The refund window is thirty days.",
    "员工差旅报销须在三十天内提交。",
]


def _old_tokens(text: str) -> list[str]:
    """What the accent-keeping tokenizer (version 1) wrote: the accented words as they were."""
    return [{"beyonc": "beyoncé", "freder": "frédéric"}.get(t, t) for t in tokenize(text)]


def _chunks() -> tuple[list[Chunk], np.ndarray]:
    chunks = [
        dataclasses.replace(BASE, chunk_id=f"c{i}", text=t, heading_path=["H"]) for i, t in enumerate(TEXTS)
    ]
    return chunks, unit_vectors(len(chunks), seed=3)


def _bm25_ids(store: object, question: str) -> list[str]:
    return [h.chunk.chunk_id for h in store.search(StoreQuery("bm25", 5, tokens=tokenize(question)))]


def _dense(store: object, vector: np.ndarray) -> list[tuple[str, float]]:
    return [
        (h.chunk.chunk_id, round(h.score, 5)) for h in store.search(StoreQuery("dense", 5, vector=vector))
    ]


def _old_embedded_store(path: Path) -> None:
    """An embedded store as the old code left it: accented tokens and no tokenizer version recorded."""
    chunks, vectors = _chunks()
    store = EmbeddedStore("kb", path, DIM)
    store.upsert(chunks, vectors, [_old_tokens(index_text(c)) for c in chunks])
    assert _bm25_ids(store, "Beyoncé singer")[:1] == ["c0"]
    assert _bm25_ids(store, "Beyonce") == []  # the old tokens do not match a folded query
    store.close()
    db = sqlite3.connect(path / "embedded" / "kb.sqlite")
    with db:
        db.execute("DELETE FROM store_meta WHERE key = 'tokenizer'")
    db.close()


def test_an_old_embedded_store_is_retokenised_on_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _old_embedded_store(tmp_path)
    monkeypatch.setattr(rt, "BATCH", 3)  # two batches, so the resumable loop runs more than once
    with caplog.at_level(logging.WARNING, "lore.store"):
        store = EmbeddedStore("kb", tmp_path, DIM)
    assert (
        f"re-tokenising 4 chunks for tokenizer {TOKENIZER_VERSION}" in caplog.text
        and "re-tokenised 4 chunks" in caplog.text
    )
    assert _bm25_ids(store, "Beyonce")[:1] == ["c0"]
    assert _bm25_ids(store, "Frederic")[:1] == ["c1"]
    assert _bm25_ids(store, "差旅报销")[:1] == ["c3"]
    _, vectors = _chunks()
    assert _dense(store, vectors[2])[0] == ("c2", 1.0)  # the stored vectors, untouched
    rows = dict(store._db.execute("SELECT chunk_id, tokens FROM chunks"))
    assert rows["c0"] == " ".join(tokenize(index_text(_chunks()[0][0])))
    meta = dict(store._db.execute("SELECT key, value FROM store_meta"))
    assert meta["tokenizer"] == str(TOKENIZER_VERSION) and f"tokenizer_{TOKENIZER_VERSION}_rid" not in meta
    store.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, "lore.store"):
        EmbeddedStore("kb", tmp_path, DIM).close()  # once is enough
    assert "re-tokenis" not in caplog.text


def test_an_interrupted_retokenisation_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _old_embedded_store(tmp_path)
    monkeypatch.setattr(rt, "BATCH", 2)
    calls = {"n": 0}
    real = rt.index_tokens

    def failing(chunk: Chunk) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 3:  # the second batch fails: the first stays committed
            raise KeyboardInterrupt
        return real(chunk)

    monkeypatch.setattr(rt, "index_tokens", failing)
    with pytest.raises(KeyboardInterrupt):
        EmbeddedStore("kb", tmp_path, DIM)
    monkeypatch.setattr(rt, "index_tokens", real)
    store = EmbeddedStore("kb", tmp_path, DIM)
    assert _bm25_ids(store, "Beyonce")[:1] == ["c0"] and _bm25_ids(store, "Frederic")[:1] == ["c1"]
    store.close()


def test_a_new_store_keeps_the_tokens_it_is_given(tmp_path: Path) -> None:
    chunks, vectors = _chunks()
    store = EmbeddedStore("kb", tmp_path, DIM)
    store.upsert(chunks, vectors, [["tok"]] * len(chunks))  # written by the current tokenizer
    store.close()
    store = EmbeddedStore("kb", tmp_path, DIM)
    assert set(dict(store._db.execute("SELECT chunk_id, tokens FROM chunks")).values()) == {"tok"}
    store.close()


@pytest.mark.parametrize("where", ["lite file", "grpc server"])
def test_an_old_milvus_collection_is_retokenised_on_open(
    where: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("milvus_lite")
    server = MilvusServer(tmp_path / "milvus").start() if where == "grpc server" else None
    try:
        _check_milvus_upgrade(tmp_path, server.uri if server else "", caplog)
    finally:
        if server:
            server.stop()


def _check_milvus_upgrade(tmp_path: Path, uri: str, caplog: pytest.LogCaptureFixture) -> None:
    chunks, vectors = _chunks()
    store = open_store("milvus", "kb", tmp_path, DIM, uri)
    try:
        assert rt.milvus_version(store._client, store.name) == TOKENIZER_VERSION  # new: stamped
        store.upsert(chunks, vectors, [_old_tokens(index_text(c)) for c in chunks])
        store._client.alter_collection_properties(store.name, properties={"lore.tokenizer": "1"})
        assert _bm25_ids(store, "Beyonce") == []
        before = _dense(store, vectors[1])
    finally:
        store.close()
    with caplog.at_level(logging.WARNING, "lore.store"):
        store = open_store("milvus", "kb", tmp_path, DIM, uri)
    try:
        assert "re-tokenising 4 chunks" in caplog.text
        assert rt.milvus_version(store._client, store.name) == TOKENIZER_VERSION
        assert _bm25_ids(store, "Beyonce")[:1] == ["c0"]
        assert _bm25_ids(store, "Frederic")[:1] == ["c1"]
        assert _bm25_ids(store, "差旅报销")[:1] == ["c3"]
        assert _dense(store, vectors[1]) == before  # vectors re-upserted as they were
        assert store.count() == len(chunks)
    finally:
        store.close()
