"""Milvus-specific behaviour: collection names, filter escaping, token encoding, size limits, errors."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from lore.errors import EmbeddingMismatchError, LoreError, MissingDependencyError
from lore.lexical.tokenize import tokenize
from lore.schema import SearchFilter
from lore.store import StoreQuery, VectorStore, open_store
from lore.store.milvus import MilvusStore, OutdatedCollectionError, collection_name
from lore.store.milvus_expr import decode_roles, encode_roles, encode_token, encode_tokens, filter_expr, quote
from lore.store.milvus_rows import ChunkTooLargeError
from tests.chunks import BASE
from tests.store.shared import DIM, unit_vectors

VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


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
        store.upsert([BASE], unit_vectors(1), [["正文"]])
        assert store.count() == 1
    finally:
        store.close()


def test_quote_escapes_quotes_and_backslashes() -> None:
    assert quote('say "hi"') == '"say \\"hi\\""'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote("it's\n") == '"it\'s\\n"'
    assert filter_expr(SearchFilter()) == ""
    expr = filter_expr(SearchFilter(tenant_ids=["x"], roles=["hr", "it", "hr"], version_seq=3))
    assert expr == (
        'tenant_id in ["x"] and (roles_open == true or roles_text like "%|6872|%" or '
        'roles_text like "%|6974|%") and '
        "valid_from_seq <= 3 and (valid_to_seq == 0 or valid_to_seq > 3)"
    )
    assert filter_expr(SearchFilter(roles=[])) == "(roles_open == true)"


def test_role_and_token_encoding() -> None:
    roles = ["hr", "50%", "a_b", "x|y", 'o"neil', "it's", "back\\slash", "角色", ""]
    assert encode_roles([]) == ""
    assert encode_roles(["hr", "角色"]) == "|6872|e8a792e889b2|"
    for kept in ([], ["hr"], roles):
        assert decode_roles(encode_roles(kept)) == kept
    assert re.fullmatch(r"[0-9a-f|]+", encode_roles(roles))
    assert encode_token("员工") == "e59198e5b7a5"
    assert encode_token("v2.3.1") == "76322e332e31"
    long = encode_token("x" * 17)
    assert re.fullmatch(r"x[0-9a-f]{32}", long) and long != encode_token("x" * 18)
    assert encode_tokens(["it's", "", "a b"]) == "69742773 612062"


def test_filter_values_with_quotes(tmp_path: Path) -> None:
    tenants = ['o"neil', "it's", "back\\slash", "plain"]
    chunks = [dataclasses.replace(BASE, chunk_id=f"c{i}", tenant_id=t) for i, t in enumerate(tenants)]
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        store.upsert(chunks, unit_vectors(len(chunks)), [["正文"]] * len(chunks))
        for i, tenant in enumerate(tenants):
            flt = SearchFilter(tenant_ids=[tenant])
            assert store.count(flt) == 1
            hits = store.search(StoreQuery("dense", k=10, vector=unit_vectors(1)[0], filter=flt))
            assert [h.chunk.chunk_id for h in hits] == [f"c{i}"]
        # A value crafted to break out of the literal must match nothing, not everything.
        assert store.count(SearchFilter(tenant_ids=['x"] or tenant_id in ["plain'])) == 0
    finally:
        store.close()


def test_size_limits(tmp_path: Path) -> None:
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        fits = dataclasses.replace(BASE, text="长" * 21000)  # 63,000 bytes
        store.upsert([fits], unit_vectors(1), [["长"]])
        assert store.get(["c0"]) == [fits]
        too_long = dataclasses.replace(BASE, chunk_id="c1", parent_text="长" * 22000)  # 66,000 bytes
        with pytest.raises(ChunkTooLargeError, match="c1.*parent_text.*66000 bytes"):
            store.upsert([too_long], unit_vectors(1), [["长"]])
        many_roles = dataclasses.replace(BASE, chunk_id="c2", allowed_roles=[f"r{i}" for i in range(65)])
        with pytest.raises(ChunkTooLargeError, match="allowed_roles"):
            store.upsert([many_roles], unit_vectors(1), [[]])
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
    first.upsert([BASE], unit_vectors(1), [["正文"]])
    first.close()
    try:
        assert second.count() == 0
        second.upsert([BASE, dataclasses.replace(BASE, chunk_id="c1")], unit_vectors(2), [[], []])
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


def test_role_names_with_like_wildcards(tmp_path: Path) -> None:
    # Each role name would act as a `like` wildcard or delimiter if it were not encoded.
    chunk_roles = [[], ["50%"], ["50x"], ["a_b"], ["axb"], ["x|y"], ["x", "y"], ['o"neil', "it's"]]
    chunk_roles += [["角色"], [""]]
    chunks = [dataclasses.replace(BASE, chunk_id=f"c{i}", allowed_roles=r) for i, r in enumerate(chunk_roles)]
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        store.upsert(chunks, unit_vectors(len(chunks)), [["正文"]] * len(chunks))
        assert store.get([c.chunk_id for c in chunks]) == chunks
        asked = [["50%"], ["a_b"], ["x|y"], ["x"], ["it's"], ['o"neil'], ["角色"], [""], ["%"], ["_"], ["|"]]
        for roles in [*asked, []]:
            flt = SearchFilter(roles=roles)
            expected = sorted(
                c.chunk_id for c in chunks if not c.allowed_roles or set(c.allowed_roles) & set(roles)
            )
            hits = store.search(StoreQuery("dense", k=20, vector=unit_vectors(1)[0], filter=flt))
            assert sorted(h.chunk.chunk_id for h in hits) == expected, roles
            assert store.count(flt) == len(expected)
    finally:
        store.close()


# Tokens Milvus' jieba analyzer would split (dots, apostrophes, accents, unknown Chinese words),
# next to the pieces it would split them into.
SPLIT_PRONE = [
    *["v2.3.1", "v2", "3", "1", "it's", "it", "s", "'", "o'neil", "neil", "3.5", "5", "c++", "c", "😀"],
    *["example.com", "example", "café", "caf", "x" * 40],
    *["员工差旅", "员工", "差旅", "经钉钉宜", "钉钉", "张小凡", "小凡"],
]


def test_each_token_stays_one_token(tmp_path: Path) -> None:
    chunks = [dataclasses.replace(BASE, chunk_id=f"c{i:02d}") for i in range(len(SPLIT_PRONE))]
    store = open_store("milvus", "kb", tmp_path, DIM)
    try:
        store.upsert(chunks, unit_vectors(len(chunks)), [[t] for t in SPLIT_PRONE])
        for i, token in enumerate(SPLIT_PRONE):
            hits = store.search(StoreQuery("bm25", k=10, tokens=[token]))
            assert [h.chunk.chunk_id for h in hits] == [f"c{i:02d}"], token
    finally:
        store.close()


TEXTS = [
    "鲲鹏云平台的飞书文档审批流须经钉钉宜搭复核",
    "差旅报销单据须在三十天内提交财务共享中心",
    "员工差旅标准：经理级以上可乘坐商务舱",
    "The O'Brien v2.3.1 release moves café payments to example.com",
    "龙湖天街店的收银系统V3.5升级在周末进行",
    "张小凡负责研发中台的灰度发布和回滚预案",
    "新员工入职须签署保密协议和竞业限制协议",
    "Employees' travel expenses must be filed within 30 days via the finance portal",
    "报销流程：提交申请、部门经理审批、财务复核、出纳付款",
    "The HR policy v1.2 covers annual leave, sick leave and the 3.5-day rule",
    "研发中台的CI/CD流水线在鲲鹏云上运行",
    "钉钉宜搭表单用于采购申请，飞书文档用于会议纪要",
    "O'Neil's team owns the example.com payments gateway",
    "竞业限制协议的补偿标准为离职前十二个月平均工资的三成",
    "收银系统V3.5的灰度发布由张小凡负责",
    "Travel policy: managers may book business class on flights over 6 hours",
]
QUERIES = [
    "钉钉宜搭",
    "张小凡 灰度发布",
    "差旅报销",
    "v2.3.1 café",
    "O'Brien payments",
    "竞业限制 补偿",
    "收银系统 V3.5",
    "travel policy business class",
    "鲲鹏云 研发中台",
    "飞书文档 审批",
    "employees' travel",
]


def _bm25_ranking(store: VectorStore, tokens: list[str]) -> list[tuple[float, str]]:
    """(score, chunk id) best first; ties ordered by id so both backends list them alike."""
    hits = store.search(StoreQuery("bm25", k=len(TEXTS), tokens=tokens))
    return sorted((-round(float(h.bm25_score or 0), 4), h.chunk.chunk_id) for h in hits)


def test_bm25_agrees_with_embedded_store(tmp_path: Path) -> None:
    """Same tokens in, same BM25 ranking out: Milvus must not re-split Lore's tokens."""
    chunks = [dataclasses.replace(BASE, chunk_id=f"c{i:02d}", text=t) for i, t in enumerate(TEXTS)]
    tokens = [tokenize(t) for t in TEXTS]
    vectors = unit_vectors(len(chunks))
    stores = {b: open_store(b, "kb", tmp_path / b, DIM) for b in ("embedded", "milvus")}
    try:
        for store in stores.values():
            store.upsert(chunks, vectors, tokens)
        for query in QUERIES:
            q = tokenize(query)
            want = _bm25_ranking(stores["embedded"], q)
            got = _bm25_ranking(stores["milvus"], q)
            assert want, query
            assert [cid for _, cid in got[:5]] == [cid for _, cid in want[:5]], query
            assert [cid for _, cid in got] == [cid for _, cid in want], query
            # Milvus keeps document lengths lossily: its scores drift a few percent from the exact ones.
            assert [s for s, _ in got] == pytest.approx([s for s, _ in want], rel=0.05), query
    finally:
        for store in stores.values():
            store.close()


def test_outdated_collection_is_refused(tmp_path: Path) -> None:
    import pymilvus

    # A collection as an older Lore made it: roles in an ARRAY column, no roles_open/roles_text.
    client = pymilvus.MilvusClient(str(tmp_path / "milvus.db"))
    dt = pymilvus.DataType
    schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("chunk_id", dt.VARCHAR, is_primary=True, max_length=512)
    schema.add_field("dense", dt.FLOAT_VECTOR, dim=DIM)
    schema.add_field("allowed_roles", dt.ARRAY, element_type=dt.VARCHAR, max_capacity=64, max_length=256)
    client.create_collection("kb", schema=schema)
    client.close()
    with pytest.raises(
        OutdatedCollectionError, match=r"'kb'.*missing fields: .*roles_open.*allowed_roles.*rebuild"
    ):
        open_store("milvus", "kb", tmp_path, DIM)
    assert issubclass(OutdatedCollectionError, LoreError)
    other = open_store("milvus", "kb_new", tmp_path, DIM)  # the failed open released the Lite file
    try:
        other.upsert([BASE], unit_vectors(1), [["正文"]])
        assert other.count() == 1
    finally:
        other.close()
