"""Behaviour every VectorStore backend must show, checked on a small hand-made corpus."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lore.config import StoreSettings
from lore.schema import Chunk, SearchFilter
from lore.store import StoreQuery, VectorStore, open_store

BACKENDS = ["embedded", "milvus", "pgvector"]
DIM = 8
N = 30
POOL = ["公司", "员工", "制度", "流程", "申请", "审批", "polici", "employe", "travel", "系统"]
RARE = 7  # the only chunk holding the token 发票


def _corpus() -> tuple[list[Chunk], np.ndarray, list[list[str]]]:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(N, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    roles = [[], ["hr"], ["finance", "manager"], ["it"], []]
    chunks, tokens = [], []
    for i in range(N):
        valid_from = [1, 1, 2, 3][i % 4]
        table = i % 9 == 4
        chunks.append(
            Chunk(
                chunk_id=f"c{i:02d}",
                text=f"第{i}段：员工差旅报销须在三十天内提交，附上发票原件。",
                parent_id=f"p{i // 2}",
                parent_text=f"父段落 {i // 2}：公司财务制度（2024 版）",
                kb_id="kb_test",
                document_id=f"doc{i // 3}",
                file_path=f"docs/政策/{i // 3}.pdf",
                file_sha256=f"{i // 3:064x}",
                chunk_index=i % 3,
                chunk_schema="v1",
                embedding_model="test-model",
                source_type="table_row" if table else ["doc", "faq"][(i // 3) % 2],
                scenario_id=["default", "finance"][i % 2],
                source=["wiki", "sharepoint"][(i // 5) % 2],
                tenant_id=["acme", "globex"][i % 2],
                dataset_id=["hr", "finance", "it"][i % 3],
                visibility=["public", "internal", "restricted"][(i // 2) % 3],
                allowed_roles=list(roles[i % 5]),
                page=None if i % 2 == 0 else i,
                slide=i if i % 10 == 3 else None,
                heading_path=[f"第{i // 10}章", f"节 {i}"] if i % 4 else [],
                sheet="费用表" if table else None,
                row=i + 1 if table else None,
                title="员工手册" if i % 3 == 0 else None,
                valid_from_seq=valid_from,
                valid_to_seq=valid_from + 2 if i % 6 == 5 else 0,
            )
        )
        words = [str(w) for w in rng.choice(POOL, size=5)]
        if i == RARE:
            words.append("发票")
        if i in (12, 20):
            words += ["报销"] * (3 if i == 12 else 1)
        tokens.append(words)
    return chunks, vectors, tokens


CHUNKS, VECTORS, TOKENS = _corpus()
BY_ID = {c.chunk_id: c for c in CHUNKS}

FILTERS = {
    "none": SearchFilter(),
    "tenant": SearchFilter(tenant_ids=["globex"]),
    "dataset": SearchFilter(dataset_ids=["hr", "it"]),
    "visibility": SearchFilter(visibility=["public"]),
    "roles": SearchFilter(roles=["hr"]),
    "roles_unknown": SearchFilter(roles=["nobody"]),
    "roles_empty": SearchFilter(roles=[]),
    "source_type": SearchFilter(source_types=["faq", "table_row"]),
    "source": SearchFilter(sources=["sharepoint"]),
    "documents": SearchFilter(document_ids=["doc1", "doc5"]),
    "tenant_empty": SearchFilter(tenant_ids=[]),
    **{f"version_{s}": SearchFilter(version_seq=s) for s in range(1, 7)},
    "combined": SearchFilter(
        tenant_ids=["acme"], dataset_ids=["hr", "finance"], roles=["finance"], version_seq=3
    ),
}


def matches(c: Chunk, f: SearchFilter) -> bool:
    """Reference semantics of SearchFilter, written out plainly."""
    pairs = [
        (f.tenant_ids, c.tenant_id),
        (f.dataset_ids, c.dataset_id),
        (f.visibility, c.visibility),
        (f.source_types, c.source_type),
        (f.sources, c.source),
        (f.document_ids, c.document_id),
    ]
    if any(allowed is not None and value not in allowed for allowed, value in pairs):
        return False
    if f.roles is not None and c.allowed_roles and not set(c.allowed_roles) & set(f.roles):
        return False
    seq = f.version_seq
    return seq is None or (c.valid_from_seq <= seq and (c.valid_to_seq == 0 or c.valid_to_seq > seq))


def exact_ranking(query: np.ndarray, f: SearchFilter) -> list[tuple[str, float]]:
    """Brute-force cosine ranking of the rows the filter keeps."""
    scores = VECTORS @ query
    keep = [i for i, c in enumerate(CHUNKS) if matches(c, f)]
    return [(CHUNKS[i].chunk_id, float(scores[i])) for i in sorted(keep, key=lambda i: -scores[i])]


# Store settings per data folder, for backends living on a server (pgvector: a database per folder).
_CONNECTIONS: dict[Path, StoreSettings] = {}


def _connect(request: pytest.FixtureRequest, backend: str, path: Path) -> None:
    if backend == "pgvector":
        url = request.getfixturevalue("pgvector_server").database(str(path))
        _CONNECTIONS[path] = StoreSettings(backend="pgvector", pg_url=url)


def _open(backend: str, path: Path) -> VectorStore:
    return open_store(backend, "kb_test", path, DIM, connection=_CONNECTIONS.get(path))


def _filled(backend: str, path: Path) -> VectorStore:
    store = _open(backend, path)
    store.upsert(CHUNKS, VECTORS, TOKENS)
    return store


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VectorStore]:
    """A populated store for the read-only tests."""
    path = tmp_path_factory.mktemp(request.param)
    _connect(request, request.param, path)
    store = _filled(request.param, path)
    yield store
    store.close()


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path, VectorStore]]:
    """A populated store of its own, for tests that change data."""
    _connect(request, request.param, tmp_path)
    store = _filled(request.param, tmp_path)
    yield request.param, tmp_path, store
    store.close()


def ids(hits: list) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


def test_count(shared: VectorStore) -> None:
    assert shared.count() == N
    assert shared.count(SearchFilter(tenant_ids=["acme"])) == sum(c.tenant_id == "acme" for c in CHUNKS)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters_apply_inside_the_query(shared: VectorStore, name: str) -> None:
    flt = FILTERS[name]
    expected = exact_ranking(VECTORS[0], flt)
    assert shared.count(flt) == len(expected)
    hits = shared.search(StoreQuery("dense", k=100, vector=VECTORS[0], filter=flt))
    assert ids(hits) == [cid for cid, _ in expected]
    allowed = {cid for cid, _ in expected}
    bm25 = shared.search(StoreQuery("bm25", k=100, tokens=["公司", "员工", "travel"], filter=flt))
    assert set(ids(bm25)) <= allowed


@pytest.mark.parametrize("qi", [0, 11, 29])
@pytest.mark.parametrize("name", ["none", "tenant", "combined"])
def test_dense_is_exact(shared: VectorStore, qi: int, name: str) -> None:
    query = VECTORS[qi] + 0.3 * VECTORS[(qi + 5) % N]
    query /= np.linalg.norm(query)
    expected = exact_ranking(query, FILTERS[name])[:5]
    hits = shared.search(StoreQuery("dense", k=5, vector=query, filter=FILTERS[name]))
    assert ids(hits) == [cid for cid, _ in expected]
    assert [h.dense_rank for h in hits] == list(range(1, len(hits) + 1))
    for hit, (_, score) in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=1e-5)
        assert hit.dense_score == pytest.approx(score, abs=1e-5)


def test_selective_filter_keeps_every_match(shared: VectorStore) -> None:
    flt = SearchFilter(document_ids=["doc4"])
    hits = shared.search(StoreQuery("dense", k=10, vector=VECTORS[0], filter=flt))
    assert sorted(ids(hits)) == ["c12", "c13", "c14"]


def test_bm25_ranks_rare_token_first(shared: VectorStore) -> None:
    hits = shared.search(StoreQuery("bm25", k=10, tokens=["发票", "公司"]))
    assert ids(hits)[0] == BY_ID[f"c{RARE:02d}"].chunk_id
    assert [h.bm25_rank for h in hits] == list(range(1, len(hits) + 1))
    scores = [h.bm25_score for h in hits]
    assert all(s is not None and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert [h.score for h in hits] == scores


def test_bm25_returns_only_matching_chunks(shared: VectorStore) -> None:
    assert ids(shared.search(StoreQuery("bm25", k=10, tokens=["发票"]))) == ["c07"]
    assert ids(shared.search(StoreQuery("bm25", k=10, tokens=["报销"]))) == ["c12", "c20"]
    acme = SearchFilter(tenant_ids=["acme"])  # c07 belongs to globex
    assert shared.search(StoreQuery("bm25", k=10, tokens=["发票"], filter=acme)) == []
    assert shared.search(StoreQuery("bm25", k=10, tokens=[])) == []
    assert shared.search(StoreQuery("bm25", k=10, tokens=["不存在的词"])) == []


@pytest.mark.parametrize("rrf_k", [60, 10])
def test_hybrid_fuses_both_lists(shared: VectorStore, rrf_k: int) -> None:
    query, tokens, k = VECTORS[3], ["发票", "报销", "travel"], 6
    dense = shared.search(StoreQuery("dense", k=k, vector=query))
    bm25 = shared.search(StoreQuery("bm25", k=k, tokens=tokens))
    fused: dict[str, float] = {}
    for hits in (dense, bm25):
        for rank, hit in enumerate(hits, start=1):
            fused[hit.chunk.chunk_id] = fused.get(hit.chunk.chunk_id, 0.0) + 1 / (rrf_k + rank)
    hits = shared.search(StoreQuery("hybrid", k=k, vector=query, tokens=tokens, rrf_k=rrf_k))
    assert len(hits) == k
    assert {ids(dense)[0], ids(bm25)[0]} <= set(ids(hits))
    for hit in hits:
        assert hit.score == pytest.approx(fused[hit.chunk.chunk_id], rel=1e-5)
        assert hit.fused_score == hit.score  # kept apart for when a reranker replaces `score`
    assert all(h.fused_score is None for h in (*dense, *bm25))
    best = sorted(fused.values(), reverse=True)[:k]
    assert [h.score for h in hits] == pytest.approx(best, rel=1e-5)
    # Each fused hit keeps its components' scores and ranks (the evidence judgement and reranker read them).
    d = {h.chunk.chunk_id: (r, h.dense_score) for r, h in enumerate(dense, start=1)}
    b = {h.chunk.chunk_id: (r, h.bm25_score) for r, h in enumerate(bm25, start=1)}
    for hit in hits:
        dr, ds = d.get(hit.chunk.chunk_id, (None, None))
        br, bs = b.get(hit.chunk.chunk_id, (None, None))
        assert (hit.dense_rank, hit.bm25_rank) == (dr, br)
        assert hit.dense_score == (None if ds is None else pytest.approx(ds, rel=1e-5))
        assert hit.bm25_score == (None if bs is None else pytest.approx(bs, rel=1e-5))
    assert any(h.dense_rank for h in hits) and any(h.bm25_rank for h in hits)


@pytest.mark.parametrize("tokens", [[], ["不存在的词"]])
def test_hybrid_without_lexical_hits_is_dense_order(shared: VectorStore, tokens: list[str]) -> None:
    dense = shared.search(StoreQuery("dense", k=5, vector=VECTORS[4]))
    hits = shared.search(StoreQuery("hybrid", k=5, vector=VECTORS[4], tokens=tokens, rrf_k=60))
    assert ids(hits) == ids(dense)
    assert [h.score for h in hits] == pytest.approx([1 / (60 + r) for r in range(1, 6)], rel=1e-5)


def test_hybrid_respects_filter(shared: VectorStore) -> None:
    flt = SearchFilter(tenant_ids=["acme"], version_seq=2)
    hits = shared.search(StoreQuery("hybrid", k=10, vector=VECTORS[3], tokens=["发票", "报销"], filter=flt))
    assert hits and all(matches(h.chunk, flt) for h in hits)
    assert "c07" not in ids(hits)


def test_get_round_trips_every_field(shared: VectorStore) -> None:
    wanted = [c.chunk_id for c in reversed(CHUNKS)]
    assert shared.get(wanted) == list(reversed(CHUNKS))
    assert shared.get(["c05", "missing", "c01"]) == [BY_ID["c05"], BY_ID["c01"]]
    chunk = shared.get(["c03"])[0]
    assert chunk.page == 3 and chunk.slide == 3 and chunk.heading_path == ["第0章", "节 3"]
    assert shared.get(["c00"])[0].page is None
    assert shared.get([]) == []


def test_upsert_is_idempotent(fresh: tuple[str, Path, VectorStore]) -> None:
    _, _, store = fresh
    store.upsert(CHUNKS, VECTORS, TOKENS)
    assert store.count() == N
    changed = dataclasses.replace(CHUNKS[0], text="新的文本", heading_path=["新章"])
    store.upsert([changed], VECTORS[:1], [["新词"]])
    assert store.count() == N
    assert store.get(["c00"]) == [changed]
    assert ids(store.search(StoreQuery("bm25", k=5, tokens=["新词"]))) == ["c00"]


def test_delete(fresh: tuple[str, Path, VectorStore]) -> None:
    _, _, store = fresh
    assert store.delete(["c07", "c08", "missing"]) == 2
    assert store.count() == N - 2
    assert store.get(["c07", "c08"]) == []
    assert store.search(StoreQuery("bm25", k=5, tokens=["发票"])) == []
    assert "c08" not in ids(store.search(StoreQuery("dense", k=N, vector=VECTORS[8])))
    assert store.delete([]) == 0


def test_expire_hides_from_later_versions_only(fresh: tuple[str, Path, VectorStore]) -> None:
    _, _, store = fresh
    assert BY_ID["c07"].valid_from_seq == 3 and BY_ID["c07"].valid_to_seq == 0
    assert store.expire(["c07", "missing"], 5) == 1
    assert store.get(["c07"]) == [dataclasses.replace(BY_ID["c07"], valid_to_seq=5)]
    assert store.count() == N
    for seq, visible in [(3, True), (4, True), (5, False), (6, False)]:
        flt = SearchFilter(version_seq=seq)
        dense = store.search(StoreQuery("dense", k=1, vector=VECTORS[7], filter=flt))
        assert (ids(dense) == ["c07"]) is visible
        bm25 = store.search(StoreQuery("bm25", k=1, tokens=["发票"], filter=flt))
        assert (ids(bm25) == ["c07"]) is visible
    assert (
        store.count(SearchFilter(version_seq=5)) == len(exact_ranking(VECTORS[0], FILTERS["version_5"])) - 1
    )


def test_reopen_keeps_data(fresh: tuple[str, Path, VectorStore]) -> None:
    backend, path, store = fresh
    store.delete(["c29"])
    store.close()
    reopened = _open(backend, path)
    try:
        assert reopened.count() == N - 1
        assert reopened.get(["c00", "c29"]) == [BY_ID["c00"]]
        expected = [cid for cid, _ in exact_ranking(VECTORS[2], FILTERS["none"]) if cid != "c29"][:5]
        assert ids(reopened.search(StoreQuery("dense", k=5, vector=VECTORS[2]))) == expected
        assert ids(reopened.search(StoreQuery("bm25", k=5, tokens=["发票"]))) == ["c07"]
    finally:
        reopened.close()


def test_drop(fresh: tuple[str, Path, VectorStore]) -> None:
    backend, path, store = fresh
    store.drop()
    store.close()
    reopened = _open(backend, path)
    try:
        assert reopened.count() == 0
    finally:
        reopened.close()


def test_ids_valid_from_lists_what_one_build_wrote(fresh: tuple[str, Path, VectorStore]) -> None:
    _, _, store = fresh
    expected = sorted(c.chunk_id for c in CHUNKS if c.valid_from_seq == 3)
    assert expected and sorted(store.ids_valid_from(3)) == expected
    assert store.ids_valid_from(999) == []


def test_expired_lists_every_closed_validity_window(fresh: tuple[str, Path, VectorStore]) -> None:
    _, _, store = fresh
    before = {cid: (lo, hi) for cid, lo, hi in store.expired()}
    assert before == {c.chunk_id: (c.valid_from_seq, c.valid_to_seq) for c in CHUNKS if c.valid_to_seq}
    live = [c for c in CHUNKS if not c.valid_to_seq][:3]
    store.expire([c.chunk_id for c in live], 9)
    after = {cid: (lo, hi) for cid, lo, hi in store.expired()}
    assert after == {**before, **{c.chunk_id: (c.valid_from_seq, 9) for c in live}}
