"""The embedded store's approximate dense index: recall and filters against the exact scan, incremental
writes, and the graph kept with the snapshot."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lore.config import StoreSettings
from lore.schema import Chunk, SearchFilter
from lore.store import StoreQuery
from lore.store.ann_index import AnnIndex, AnnParams
from lore.store.embedded import EmbeddedStore
from lore.store.memory_index import Columns
from lore.store.snapshot import read_snapshot

DIM, N, K = 32, 4000, 10
ANN = StoreSettings(ann_min_rows=1000)
EXACT = StoreSettings(ann_min_rows=10**9)
SELECTIVE = SearchFilter(tenant_ids=["rare"])  # ~1% of rows: under ann_filter_min_share, scanned exactly
BROAD = SearchFilter(tenant_ids=["half"], roles=["r1"])  # ~40%: searched in the graph with a selector


def _corpus(n: int, seed: int) -> tuple[list[Chunk], np.ndarray, list[list[str]]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.3 * rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    draw = rng.random(n)
    chunks = [
        Chunk(
            chunk_id=f"s{seed}-{i:05d}",
            text=f"row {i}",
            parent_id=f"p{i}",
            parent_text=f"row {i}",
            kb_id="kb",
            document_id=f"d{i // 10}",
            file_path=f"d{i // 10}.md",
            file_sha256=f"{i // 10:064x}",
            chunk_index=i % 10,
            chunk_schema="v1",
            embedding_model="m",
            tenant_id="rare" if draw[i] < 0.01 else "half" if draw[i] < 0.5 else "other",
            allowed_roles=[] if i % 5 else ["r2"],
        )
        for i in range(n)
    ]
    return chunks, vectors, [[f"w{i % 50}"] for i in range(n)]


CHUNKS, VECTORS, TOKENS = _corpus(N, 1)
QUERIES = [
    v / np.linalg.norm(v) for v in VECTORS[::97] + 0.2 * np.random.default_rng(2).normal(size=(42, DIM))
]


def _store(path: Path, settings: StoreSettings, batch: int = N) -> EmbeddedStore:
    store = EmbeddedStore("kb", path, DIM, connection=settings)
    for s in range(0, N, batch):
        store.upsert(CHUNKS[s : s + batch], VECTORS[s : s + batch], TOKENS[s : s + batch])
    return store


def _top(store: EmbeddedStore, flt: SearchFilter, q: np.ndarray) -> list[tuple[str, float]]:
    hits = store.search(StoreQuery("dense", K, vector=q.astype(np.float32), filter=flt))
    return [(h.chunk.chunk_id, h.dense_score) for h in hits]


def _recall(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> float:
    return float(
        np.mean([len({c for c, _ in g} & {c for c, _ in w}) / len(w) for g, w in zip(got, want, strict=True)])
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[EmbeddedStore, EmbeddedStore]:
    approx = _store(tmp_path_factory.mktemp("ann"), ANN, batch=700)
    exact = _store(tmp_path_factory.mktemp("exact"), EXACT)
    yield approx, exact
    approx.close()
    exact.close()


def _graph_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = AnnIndex.search

    def counted(self: AnnIndex, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AnnIndex, "search", counted)
    return calls


@pytest.mark.parametrize("flt", [SearchFilter(), BROAD], ids=["unfiltered", "broad"])
def test_graph_recall_and_exact_scores(
    stores: tuple[EmbeddedStore, EmbeddedStore], flt: SearchFilter, monkeypatch: pytest.MonkeyPatch
) -> None:
    approx, exact = stores
    calls = _graph_calls(monkeypatch)
    got = [_top(approx, flt, q) for q in QUERIES]
    want = [_top(exact, flt, q) for q in QUERIES]
    assert len(calls) == len(QUERIES)  # every search went through the graph
    assert _recall(got, want) >= 0.99
    allowed = {c.chunk_id for c in CHUNKS if _passes(c, flt)}
    assert all(c in allowed for hits in got for c, _ in hits)
    for hits, exact_hits in zip(got, want, strict=True):  # candidates are rescored exactly
        truth = dict(exact_hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert all(s == pytest.approx(truth[c], abs=1e-6) for c, s in hits if c in truth)


def test_selective_filter_scans_its_rows_exactly(
    stores: tuple[EmbeddedStore, EmbeddedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    approx, exact = stores
    calls = _graph_calls(monkeypatch)
    assert 0 < approx.count(SELECTIVE) < ANN.ann_filter_min_share * N < approx.count(BROAD)
    for q in QUERIES:
        assert _top(approx, SELECTIVE, q) == _top(exact, SELECTIVE, q)
    assert calls == []


def _passes(chunk: Chunk, flt: SearchFilter) -> bool:
    tenant_ok = flt.tenant_ids is None or chunk.tenant_id in flt.tenant_ids
    roles_ok = flt.roles is None or not chunk.allowed_roles or set(chunk.allowed_roles) & set(flt.roles)
    return tenant_ok and bool(roles_ok)


def test_graph_grows_with_writes_and_deletes_drop_out(tmp_path: Path) -> None:
    store = EmbeddedStore("kb", tmp_path, DIM, connection=ANN)
    try:
        store.upsert(CHUNKS[:900], VECTORS[:900], TOKENS[:900])
        assert store._index is not None and store._index.ann is None  # under the switch-over: exact
        for s in range(900, N, 1100):
            store.upsert(CHUNKS[s : s + 1100], VECTORS[s : s + 1100], TOKENS[s : s + 1100])
            assert store._index.ann is not None and store._index.ann.ntotal == min(s + 1100, N)
        q = QUERIES[0]
        first = _top(store, SearchFilter(), q)
        gone = [c for c, _ in first[:3]]
        store.delete(gone)
        after = [c for c, _ in _top(store, SearchFilter(), q)]
        assert not set(gone) & set(after) and len(after) == K
        moved = Chunk(**{**CHUNKS[5].__dict__, "chunk_id": first[3][0]})  # an upsert replaces the row
        store.upsert([moved], -q[None, :].astype(np.float32), [["w1"]])
        assert first[3][0] not in [c for c, _ in _top(store, SearchFilter(), q)]
        assert _top(store, SearchFilter(), -q)[0][0] == first[3][0]
    finally:
        store.close()


def test_reopen_maps_the_saved_graph_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path, ANN, batch=1500)
    before = [_top(store, flt, q) for flt in (SearchFilter(), BROAD, SELECTIVE) for q in QUERIES]
    store.close()  # saves the snapshot and the graph beside it
    graphs = list((tmp_path / "embedded").glob("kb.*.ann"))
    assert len(graphs) == 1
    built: list[int] = []
    real_sync = AnnIndex.sync
    monkeypatch.setattr(
        Columns, "from_rows", lambda *_: pytest.fail("rebuilt although the snapshot is current")
    )
    monkeypatch.setattr(
        AnnIndex, "sync", lambda self, v: built.append(len(v) - self.ntotal) or real_sync(self, v)
    )
    store = EmbeddedStore("kb", tmp_path, DIM, connection=ANN)
    try:
        assert [_top(store, flt, q) for flt in (SearchFilter(), BROAD, SELECTIVE) for q in QUERIES] == before
        assert set(built) == {0}  # the graph came from its file, not from the vectors
        assert isinstance(store._index.vectors, np.memmap)  # above the switch-over: read from the file
        monkeypatch.undo()  # writes parse their rows as a rebuild does
        extra, extra_vectors, extra_tokens = _corpus(50, 9)
        store.upsert(extra, extra_vectors, extra_tokens)  # adding to a mapped graph copies it first
        after = [_top(store, flt, q) for flt in (SearchFilter(), SELECTIVE) for q in extra_vectors[:5]]
        assert [hits[0][0] for hits in after[:5]] == [c.chunk_id for c in extra[:5]]
    finally:
        store.close()
    assert list((tmp_path / "embedded").glob("kb.*.ann")) != graphs  # the new graph replaced the old one
    store = EmbeddedStore("kb", tmp_path, DIM, connection=ANN)
    try:  # the appended rows were saved with the others, and are read from the file again
        assert [
            _top(store, flt, q) for flt in (SearchFilter(), SELECTIVE) for q in extra_vectors[:5]
        ] == after
        assert isinstance(store._index.vectors, np.memmap) and len(store._index.vectors) == N + 50
    finally:
        store.close()
    store.drop()
    assert list((tmp_path / "embedded").glob("kb.*")) == []


def test_vectors_stay_in_memory_below_the_switch_over_and_a_damaged_map_is_refused(tmp_path: Path) -> None:
    _store(tmp_path, ANN).close()
    path = tmp_path / "embedded" / "kb.index"
    db = sqlite3.connect(tmp_path / "embedded" / "kb.sqlite")
    meta = dict(db.execute("SELECT key, value FROM store_meta"))
    db.close()
    key = {"store_id": meta["store_id"], "generation": int(meta["generation"]), "dim": DIM}
    params = AnnParams.from_settings(ANN)
    mapped = read_snapshot(path, key, params)
    in_memory = read_snapshot(path, key, AnnParams.from_settings(EXACT))
    assert isinstance(mapped.vectors, np.memmap) and not isinstance(in_memory.vectors, np.memmap)
    assert mapped.vectors.flags.aligned and np.array_equal(mapped.vectors, in_memory.vectors)
    del mapped
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[-16:-8], "little")
    _, shape, offset, _ = json.loads(data[-16 - size : -16])["arrays"]["vectors"]
    data[offset + 4 * DIM * (shape[0] - 1)] ^= 0xFF  # inside the last vector
    path.write_bytes(bytes(data))
    assert read_snapshot(path, key, params) is None
    assert read_snapshot(path, key, AnnParams.from_settings(EXACT)) is None


def test_a_delete_on_a_mapped_store_is_saved_from_the_map(tmp_path: Path) -> None:
    _store(tmp_path, ANN).close()
    store = EmbeddedStore("kb", tmp_path, DIM, connection=ANN)
    try:
        first = _top(store, SearchFilter(), QUERIES[0])
        assert isinstance(store._index.vectors, np.memmap)
        store.delete([c for c, _ in first[:3]])
        after = _top(store, SearchFilter(), QUERIES[0])
    finally:
        store.close()  # writes the next snapshot from the mapped vectors over the file they map
    store = EmbeddedStore("kb", tmp_path, DIM, connection=ANN)
    try:
        assert _top(store, SearchFilter(), QUERIES[0]) == after and after[:7] == first[3:]
        assert isinstance(store._index.vectors, np.memmap) and store.count() == N - 3
    finally:
        store.close()
