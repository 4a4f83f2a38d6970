"""Milvus-specific behaviour: collection names, filter escaping, size limits, errors."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from lore.errors import EmbeddingMismatchError, MissingDependencyError
from lore.schema import Chunk, SearchFilter
from lore.store import StoreQuery, open_store
from lore.store.milvus import ChunkTooLargeError, MilvusStore, collection_name, filter_expr, quote

DIM = 4
VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
BASE = Chunk(
    chunk_id="c0",
    text="正文",
    parent_id="p0",
    parent_text="父段",
    kb_id="kb",
    document_id="d0",
    file_path="a.md",
    file_sha256="0" * 64,
    chunk_index=0,
    chunk_schema="v1",
    embedding_model="m",
)


def _vectors(n: int) -> np.ndarray:
    vectors = np.random.default_rng(1).normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_collection_name_sanitising() -> None:
    assert collection_name("kb_test") == "kb_test"
    names = ["kb-1", "kb_1", "kb 1", "1kb", "财务知识库", "人事知识库", "", "a" * 300]
    mapped = [collection_name(n) for n in names]
    assert all(VALID.fullmatch(m) for m in mapped)
    assert len(set(mapped)) == len(names)
    assert collection_name("kb-1") == collection_name("kb-1")


def test_unusual_name_opens(tmp_path: Path) -> None:
    store = open_store("milvus", "财务-KB 2024", tmp_path, DIM)
    try:
        store.upsert([BASE], _vectors(1), [["正文"]])
        assert store.count() == 1
    finally:
        store.close()


def test_quote_escapes_quotes_and_backslashes() -> None:
    assert quote('say "hi"') == '"say \\"hi\\""'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote("it's\n") == '"it\'s\\n"'
    assert filter_expr(SearchFilter()) == ""
    expr = filter_expr(SearchFilter(tenant_ids=["x"], roles=["hr"], version_seq=3))
    assert expr == (
        'tenant_id in ["x"] and (array_length(allowed_roles) == 0 or '
        'array_contains_any(allowed_roles, ["hr"])) and '
        "valid_from_seq <= 3 and (valid_to_seq == 0 or valid_to_seq > 3)"
    )


def test_filter_values_with_quotes(tmp_path: Path) -> None:
    tenants = ['o"neil', "it's", "back\\slash", "plain"]
    chunks = [dataclasses.replace(BASE, chunk_id=f"c{i}", tenant_id=t) for i, t in enumerate(tenants)]
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        store.upsert(chunks, _vectors(len(chunks)), [["正文"]] * len(chunks))
        for i, tenant in enumerate(tenants):
            flt = SearchFilter(tenant_ids=[tenant])
            assert store.count(flt) == 1
            hits = store.search(StoreQuery("dense", k=10, vector=_vectors(1)[0], filter=flt))
            assert [h.chunk.chunk_id for h in hits] == [f"c{i}"]
        # A value crafted to break out of the literal must match nothing, not everything.
        assert store.count(SearchFilter(tenant_ids=['x"] or tenant_id in ["plain'])) == 0
    finally:
        store.close()


def test_size_limits(tmp_path: Path) -> None:
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        fits = dataclasses.replace(BASE, text="长" * 21000)  # 63,000 bytes
        store.upsert([fits], _vectors(1), [["长"]])
        assert store.get(["c0"]) == [fits]
        too_long = dataclasses.replace(BASE, chunk_id="c1", parent_text="长" * 22000)  # 66,000 bytes
        with pytest.raises(ChunkTooLargeError, match="c1.*parent_text.*66000 bytes"):
            store.upsert([too_long], _vectors(1), [["长"]])
        many_roles = dataclasses.replace(BASE, chunk_id="c2", allowed_roles=[f"r{i}" for i in range(65)])
        with pytest.raises(ChunkTooLargeError, match="allowed_roles"):
            store.upsert([many_roles], _vectors(1), [[]])
        assert store.count() == 1
    finally:
        store.close()


def test_dimension_mismatch(tmp_path: Path) -> None:
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        with pytest.raises(EmbeddingMismatchError):
            store.upsert([BASE], np.ones((1, DIM + 1), dtype=np.float32), [[]])
    finally:
        store.close()
    with pytest.raises(EmbeddingMismatchError, match="4-d"):
        open_store("milvus", "kb", tmp_path, DIM + 1)


def test_collections_share_one_lite_file(tmp_path: Path) -> None:
    first = open_store("milvus", "kb_a", tmp_path, DIM)
    second = open_store("milvus", "kb_b", tmp_path, DIM)
    first.upsert([BASE], _vectors(1), [["正文"]])
    first.close()
    try:
        assert second.count() == 0
        second.upsert([BASE, dataclasses.replace(BASE, chunk_id="c1")], _vectors(2), [[], []])
        assert second.count() == 2
    finally:
        second.close()
    reopened = open_store("milvus", "kb_a", tmp_path, DIM)
    try:
        assert reopened.get(["c0"]) == [BASE]
    finally:
        reopened.close()


def test_missing_pymilvus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymilvus", None)
    with pytest.raises(MissingDependencyError, match=re.escape('pip install "pymilvus[milvus_lite]"')):
        MilvusStore("kb", tmp_path, DIM)
