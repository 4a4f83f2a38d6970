"""The embedded store's load path: bulk rebuild, index snapshot reuse, and reloads after other writers."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from lore.schema import SearchFilter
from lore.store import StoreQuery
from lore.store import embedded as emb
from lore.store.embedded import EmbeddedStore
from lore.store.memory_index import Columns, MemoryIndex
from lore.store.snapshot import read_snapshot
from tests.chunks import make_chunk
from tests.store.test_contract import BY_ID, CHUNKS, DIM, TOKENS, VECTORS, N

FILTERS = [
    SearchFilter(),
    SearchFilter(tenant_ids=["acme"], roles=["finance"], version_seq=3),
    SearchFilter(roles=["hr", "it"]),
    SearchFilter(roles=[]),
    SearchFilter(dataset_ids=["hr"], version_seq=2),
]


def _open(path: Path) -> EmbeddedStore:
    return EmbeddedStore("kb", path, DIM)


def _filled(path: Path) -> EmbeddedStore:
    store = _open(path)
    store.upsert(CHUNKS, VECTORS, TOKENS)
    return store


def _results(store: EmbeddedStore) -> list:
    """Everything a caller sees: hits (ids, all scores and ranks) and counts, over modes and filters."""
    out: list = []
    for flt in FILTERS:
        out.append(store.count(flt))
        for mode in ("dense", "bm25", "hybrid"):
            query = StoreQuery(mode, 12, VECTORS[3], ["发票", "报销", "公司", "travel"], flt)
            out.append(
                [
                    (h.chunk.chunk_id, h.score, h.dense_score, h.bm25_score, h.dense_rank, h.bm25_rank)
                    for h in store.search(query)
                ]
            )
    return out


def _snapshotted(path: Path) -> list:
    """Fill a store, search it (a rebuild, which writes the snapshot) and close it; returns its results."""
    store = _filled(path)
    results = _results(store)
    store.close()  # waits for the snapshot writer
    assert store.snapshot.exists()
    return results


def _no_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object) -> None:
        raise AssertionError("rebuilt from SQLite although the snapshot was current")

    monkeypatch.setattr(Columns, "from_rows", fail)


def test_snapshot_is_reused_with_identical_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _snapshotted(tmp_path)
    _no_rebuild(monkeypatch)
    store = _open(tmp_path)
    try:
        assert _results(store) == expected
    finally:
        store.close()


def test_stale_snapshot_is_ignored(tmp_path: Path) -> None:
    _snapshotted(tmp_path)
    writer = _open(tmp_path)  # never loads the index, so writes no snapshot
    writer.delete(["c07"])
    writer.upsert([dataclasses.replace(CHUNKS[0], text="新")], VECTORS[:1], [["新词"]])
    writer.close()
    store = _open(tmp_path)
    try:
        assert store.count() == N - 1
        assert store.search(StoreQuery("bm25", 5, tokens=["发票"])) == []
        assert [h.chunk.chunk_id for h in store.search(StoreQuery("bm25", 5, tokens=["新词"]))] == ["c00"]
    finally:
        store.close()


def test_snapshot_of_another_store_is_ignored(tmp_path: Path) -> None:
    _snapshotted(tmp_path)
    saved = tmp_path / "old.index"
    shutil.copy(tmp_path / "embedded" / "kb.index", saved)
    _open(tmp_path).drop()
    store = _open(tmp_path)
    store.upsert(CHUNKS[:5], VECTORS[:5], TOKENS[:5])  # same generation number as the old store's snapshot
    shutil.copy(saved, store.snapshot)
    try:
        assert store.count() == 5
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "footer"])
def test_damaged_snapshot_is_ignored_and_rewritten(tmp_path: Path, damage: str) -> None:
    expected = _snapshotted(tmp_path)
    path = tmp_path / "embedded" / "kb.index"
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[70] ^= 0xFF  # inside the first array, which starts at byte 64
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = bytearray()
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    else:
        data[-40:-16] = b"x" * 24
    path.write_bytes(bytes(data))
    assert read_snapshot(path, _key(path.parent)) is None
    store = _open(tmp_path)
    try:
        assert _results(store) == expected
    finally:
        store.close()
    assert read_snapshot(path, _key(path.parent)) is not None  # the rebuild replaced it


def _key(folder: Path) -> dict:
    db = emb.sqlite3.connect(folder / "kb.sqlite")
    meta = dict(db.execute("SELECT key, value FROM store_meta"))
    db.close()
    return {"store_id": meta["store_id"], "generation": int(meta["generation"]), "dim": DIM}


def test_another_writer_triggers_reload(tmp_path: Path) -> None:
    reader = _filled(tmp_path)
    assert reader.count() == N
    writer = _open(tmp_path)
    writer.upsert(
        [dataclasses.replace(CHUNKS[1], chunk_id="new", allowed_roles=["auditor"])],
        VECTORS[1:2],
        [["独有词"]],
    )
    writer.delete(["c07"])
    try:
        assert reader.count() == N
        assert [h.chunk.chunk_id for h in reader.search(StoreQuery("bm25", 5, tokens=["独有词"]))] == ["new"]
        assert reader.search(StoreQuery("bm25", 5, tokens=["发票"])) == []
        assert reader.count(SearchFilter(roles=["auditor"])) == reader.count(SearchFilter(roles=[])) + 1
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("source", ["rebuild", "snapshot"])
def test_appends_after_load_see_new_terms(tmp_path: Path, source: str) -> None:
    if source == "snapshot":
        _snapshotted(tmp_path)
        store = _open(tmp_path)
    else:
        store = _filled(tmp_path)
    try:
        assert store.count() == N
        extra = [
            dataclasses.replace(CHUNKS[2], chunk_id="x1", tenant_id="initech", allowed_roles=["auditor"]),
            dataclasses.replace(CHUNKS[7], text="替换"),
        ]  # c07 replaced: its old tokens go away
        store.upsert(extra, VECTORS[[2, 7]], [["新词", "新词", "公司"], ["另一个"]])
        assert store.count() == N + 1
        assert [h.chunk.chunk_id for h in store.search(StoreQuery("bm25", 5, tokens=["新词"]))] == ["x1"]
        assert [h.chunk.chunk_id for h in store.search(StoreQuery("bm25", 5, tokens=["另一个"]))] == ["c07"]
        assert store.search(StoreQuery("bm25", 5, tokens=["发票"])) == []
        assert store.count(SearchFilter(tenant_ids=["initech"], roles=["auditor"])) == 1
        store.expire(["x1"], 2)
        assert store.count(SearchFilter(tenant_ids=["initech"], version_seq=2)) == 0
        store.delete(["x1"])
        assert store.count() == N
    finally:
        store.close()


def test_failed_snapshot_write_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise OSError("read-only")

    monkeypatch.setattr(os, "replace", refuse)
    old_tmp = tmp_path / "embedded" / "kb.index.dead.tmp"
    old_tmp.parent.mkdir()
    old_tmp.write_bytes(b"left by a crash")
    os.utime(old_tmp, (time.time() - 3600, time.time() - 3600))
    store = _filled(tmp_path)
    assert store.count() == N
    store.close()
    assert [p.name for p in old_tmp.parent.iterdir() if ".index" in p.name] == []


def test_index_arrays_round_trip() -> None:
    index = MemoryIndex(DIM)
    columns = Columns.from_rows(
        [
            (
                i + 1,
                c.chunk_id,
                *(getattr(c, f) for f in emb.SCALAR_FIELDS),
                emb.json.dumps(c.allowed_roles + c.allowed_roles[:1]),
                c.valid_from_seq,
                c.valid_to_seq,
                " ".join(t) if i != 5 else "",
                v.tobytes(),
            )
            for i, (c, t, v) in enumerate(zip(CHUNKS, TOKENS, VECTORS, strict=True))
        ],
        DIM,
    )
    index.extend(columns)
    index.kill(["c03"])
    copy = MemoryIndex.from_arrays(DIM, index.to_arrays())
    assert copy.vocab == index.vocab and copy.position == index.position
    assert list(index.vocab)[:3] == list(dict.fromkeys(TOKENS[0]))[:3]  # ids in first-seen order
    for flt in FILTERS:
        np.testing.assert_array_equal(copy.mask(flt), index.mask(flt))
        mask = index.mask(flt)
        for a, b in zip(
            copy.bm25(["发票", "公司"], mask, 10), index.bm25(["发票", "公司"], mask, 10), strict=True
        ):
            np.testing.assert_array_equal(a, b)
    assert len(copy) == len(index) == N - 1 and index.doc_len[5] == 0
    assert BY_ID["c03"].chunk_id not in copy.position


def test_bm25_statistics_come_from_the_version_view(tmp_path: Path) -> None:
    """A version scores like a store that holds only that version's chunks (other versions' chunks
    do not change its idf or length norms)."""
    from lore.schema import Chunk, SearchFilter
    from lore.store.base import StoreQuery
    from lore.store.embedded import EmbeddedStore

    def chunk(i: int, text: str, frm: int, to: int = 0) -> Chunk:
        return make_chunk(
            chunk_id=f"c{i}",
            text=text,
            parent_text=text,
            document_id=f"d{i}",
            file_path=f"f{i}.md",
            valid_from_seq=frm,
            valid_to_seq=to,
        )

    texts = [
        "leave policy days",
        "leave request form portal",
        "vpn password reset",
        "leave leave leave old text",
    ]
    current = [chunk(0, texts[0], 1), chunk(1, texts[1], 1), chunk(2, texts[2], 1)]
    history = [chunk(3, texts[3], 1, 2)]  # expired at version 2
    vec = np.eye(4, dtype=np.float32)
    both = EmbeddedStore("both", tmp_path, 4)
    both.upsert(current + history, vec, [t.split() for t in texts])
    alone = EmbeddedStore("alone", tmp_path, 4)
    alone.upsert(current, vec[:3], [t.split() for t in texts[:3]])
    query = ["leave", "portal"]
    versioned = both.search(StoreQuery("bm25", 5, tokens=query, filter=SearchFilter(version_seq=2)))
    scratch = alone.search(StoreQuery("bm25", 5, tokens=query))
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in versioned] == [
        (h.chunk.chunk_id, round(h.score, 6)) for h in scratch
    ]
    unversioned = both.search(StoreQuery("bm25", 5, tokens=query))  # all live rows count without a version
    assert {h.chunk.chunk_id for h in unversioned} == {"c0", "c1", "c3"}
    both.close()
    alone.close()


def test_a_delete_while_another_thread_loads_the_index_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A health check's `count` (re)loads the index while the KB is deleted: the drop waits for the load and
    its snapshot writer instead of joining a thread not started yet ("cannot join thread before it is
    started")."""
    import threading

    writer = _filled(tmp_path / "s")
    writer.close()
    writer.snapshot.unlink(missing_ok=True)  # the next load rebuilds the index and writes its snapshot
    store = _open(tmp_path / "s")
    loading, release = threading.Event(), threading.Event()
    real = Columns.from_rows

    def slow_rows(*args: object) -> Columns:
        loading.set()
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(Columns, "from_rows", slow_rows)
    counted: list[int] = []
    reader = threading.Thread(target=lambda: counted.append(store.count()))
    reader.start()
    assert loading.wait(30)  # the load has read the rows and builds the index
    errors: list[BaseException] = []

    def drop() -> None:
        try:
            store.drop()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    dropper = threading.Thread(target=drop)
    dropper.start()
    dropper.join(2)  # a chance to run first (without the wait it would, and the load's snapshot outlived it)
    release.set()
    reader.join(30)
    dropper.join(30)
    assert not errors and counted == [N]
    assert not store.snapshot.exists() and not Path(store.path).exists()
