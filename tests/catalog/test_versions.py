"""Version tests on SQLite, PostgreSQL and MariaDB: migration 0002 (SQLite), seq allocation, activation,
rollback, atomicity."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine, event, inspect, text

from lore.catalog import VERSION_COUNTS, Catalog, KnowledgeBase, Version, VersionStatus, alembic_config
from lore.catalog.catalog import _sqlite_pragmas
from lore.catalog.versions import VersionsMixin
from lore.errors import LoreError, NotFoundError
from tests.conftest import migrated

KB_SETTINGS = {
    "embedding_provider": "local",
    "embedding_model": "e5-small",
    "embedding_dim": 384,
    "chunk_schema": "v1",
    "store_backend": "milvus-lite",
}
COUNTS = {
    "files_added": 3,
    "files_changed": 1,
    "files_removed": 0,
    "files_reused": 5,
    "chunks_embedded": 40,
    "chunks_reused": 100,
}


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
def catalog(db_url: str) -> Iterator[Catalog]:
    cat = Catalog(migrated(db_url))
    yield cat
    cat.close()


@pytest.fixture
def kb(catalog: Catalog) -> KnowledgeBase:
    return catalog.create_kb("docs", **KB_SETTINGS)  # type: ignore[arg-type]


def _built(cat: Catalog, kb_id: str, *, gate: bool | None = True, failed: bool = False) -> Version:
    v = cat.create_version(kb_id, embedding_model="e5-small", chunk_schema="v1")
    return cat.finish_version(
        kb_id,
        v.seq,
        counts=COUNTS,
        gate_passed=gate,
        gate_report={"recall@5": 0.9, "note": "ok ✓"},
        failed=failed,
    )


def _statuses(cat: Catalog, kb_id: str) -> list[str]:
    return [v.status.value for v in cat.list_versions(kb_id)]


def test_upgrade_from_0001_keeps_data(tmp_path: Path) -> None:
    url = _url(tmp_path / "old.db")
    command.upgrade(alembic_config(url=url), "0001")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO knowledge_bases VALUES ('kb1', 'legacy', 'old kb', 'local', 'e5', 384, 'v1', "
                "'milvus-lite', '2024-05-01 10:00:00', '2024-05-01 10:00:00')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO files VALUES ('f1', 'kb1', 'a.md', 'abc', 1, 1.0, 'ingested', NULL, 2, 1, 0, "
                "NULL, "
                "'2024-05-01 10:00:00', '2024-05-01 10:00:00')"
            )
        )
    engine.dispose()
    with Catalog(url) as cat:
        legacy = cat.get_kb("legacy")
        assert (legacy.id, legacy.description, legacy.embedding_dim) == ("kb1", "old kb", 384)
        assert legacy.created_at == datetime(2024, 5, 1, 10, tzinfo=UTC)
        assert [f.path for f in cat.list_files("kb1")] == ["a.md"]
        old_file = cat.list_files("kb1")[0]  # 0003 fills in the KB's settings an old file was indexed with
        assert (old_file.chunk_schema, old_file.embedding_model) == ("v1", "e5")
        assert cat.cache_epoch("kb1") == 0
        assert cat.active_version("kb1") is None and cat.list_versions("kb1") == []
        assert not cat.has_versions("kb1")
        assert {"kb_versions", "kb_activations"} <= set(inspect(cat.engine).get_table_names())
        v = _built(cat, "kb1")
        assert cat.has_versions("kb1")
        assert cat.activate("kb1", v.seq, actor="test").seq == 1


def test_downgrade_keeps_0001_rows_even_with_foreign_keys_on(tmp_path: Path) -> None:
    url = _url(tmp_path / "down.db")
    with Catalog(url) as cat:
        kb = cat.create_kb("docs", **KB_SETTINGS)  # type: ignore[arg-type]
        f = cat.upsert_file(kb.id, "a.md", sha256="a", size=1, mtime=1, status="ingested")
        cat.set_file_chunks(f.id, [("c0", 0, None, None)])
        cat.activate(kb.id, _built(cat, kb.id).seq, actor="test")
    engine = create_engine(url)
    event.listen(engine, "connect", _sqlite_pragmas)  # foreign_keys=ON, as the catalog runs
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0001")
        insp = inspect(engine)
        assert not {"kb_versions", "kb_activations"} & set(insp.get_table_names())
        assert {c["name"] for c in insp.get_columns("knowledge_bases")}.isdisjoint(
            {"active_seq", "cache_epoch"}
        )
        with engine.connect() as conn:
            for table in ("knowledge_bases", "files", "chunks"):
                assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 1
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0001"
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()
    with Catalog(url) as cat:  # and back up to head on an empty database
        assert cat.list_kbs() == []


def test_create_version_seq_is_monotonic_per_kb(catalog: Catalog, kb: KnowledgeBase) -> None:
    other = catalog.create_kb("other", **KB_SETTINGS)  # type: ignore[arg-type]
    first = catalog.create_version(
        kb.id, description="initial", embedding_model="e5-small", chunk_schema="v1"
    )
    assert (first.seq, first.status, first.description, first.base_seq) == (
        1,
        VersionStatus.STAGED,
        "initial",
        None,
    )
    assert first.counts == dict.fromkeys(VERSION_COUNTS, 0)
    assert first.created_at.tzinfo == UTC and first.finished_at is None and first.activated_at is None
    assert catalog.create_version(other.id, embedding_model="m", chunk_schema="v2").seq == 1
    second = catalog.create_version(kb.id, base_seq=1, embedding_model="e5-small", chunk_schema="v1")
    assert (second.seq, second.base_seq) == (2, 1)
    assert [v.seq for v in catalog.list_versions(kb.id)] == [1, 2]
    assert catalog.get_version(kb.id, 2) == second
    with pytest.raises(NotFoundError, match="has no version 7"):
        catalog.create_version(kb.id, base_seq=7, embedding_model="e5-small", chunk_schema="v1")
    with pytest.raises(NotFoundError, match="knowledge base id 'nope' not found"):
        catalog.create_version("nope", embedding_model="e5-small", chunk_schema="v1")
    with pytest.raises(NotFoundError) as info:
        catalog.get_version(kb.id, 9)
    assert str(info.value) == f"knowledge base id '{kb.id}' has no version 9"


def test_concurrent_creators_get_distinct_seqs(db_url: str) -> None:
    url = migrated(db_url)
    with Catalog(url) as setup:
        kb_id = setup.create_kb("docs", **KB_SETTINGS).id  # type: ignore[arg-type]
    # One engine per worker, like separate processes; opened here because Alembic's upgrade keeps
    # module-global state and must not run in several threads at once.
    workers = [Catalog(url) for _ in range(4)]
    seqs: list[int] = []
    errors: list[BaseException] = []

    def build(cat: Catalog) -> None:
        for _ in range(5):
            try:
                seqs.append(cat.create_version(kb_id, embedding_model="e5", chunk_schema="v1").seq)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=build, args=(cat,)) for cat in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for cat in workers:
        cat.close()
    assert errors == []
    assert sorted(seqs) == list(range(1, 21))


def test_finish_version(catalog: Catalog, kb: KnowledgeBase) -> None:
    ok = _built(catalog, kb.id)
    assert ok.status == VersionStatus.STAGED and ok.counts == COUNTS and ok.finished_at is not None
    assert ok.gate_passed is True and ok.gate_report == {"recall@5": 0.9, "note": "ok ✓"}
    assert catalog.get_version(kb.id, ok.seq) == ok
    assert _built(catalog, kb.id, gate=False).status == VersionStatus.FAILED
    assert _built(catalog, kb.id, gate=None, failed=True).status == VersionStatus.FAILED
    ungated = _built(catalog, kb.id, gate=None)
    assert (ungated.status, ungated.gate_passed) == (VersionStatus.STAGED, None)
    with pytest.raises(LoreError, match="already finished"):
        catalog.finish_version(kb.id, ok.seq, counts={}, gate_passed=True, gate_report=None)
    fresh = catalog.create_version(kb.id, embedding_model="e5", chunk_schema="v1")
    with pytest.raises(ValueError, match="unknown version counts"):
        catalog.finish_version(kb.id, fresh.seq, counts={"files": 1}, gate_passed=True, gate_report=None)
    with pytest.raises(ValueError, match="non-negative"):
        catalog.finish_version(
            kb.id, fresh.seq, counts={"files_added": -1}, gate_passed=True, gate_report=None
        )
    partial = catalog.finish_version(
        kb.id, fresh.seq, counts={"chunks_embedded": 2}, gate_passed=True, gate_report=None
    )
    assert partial.chunks_embedded == 2 and partial.files_added == 0 and partial.gate_report is None


def test_activate_and_rollback_flow(catalog: Catalog, kb: KnowledgeBase) -> None:
    v1, v2, v3 = (_built(catalog, kb.id) for _ in range(3))
    assert catalog.active_version(kb.id) is None and catalog.cache_epoch(kb.id) == 0
    active = catalog.activate(kb.id, v1.seq, actor="ci", reason="first build")
    assert active.status == VersionStatus.ACTIVE and active.activated_at is not None
    assert catalog.active_version(kb.id) == active and catalog.cache_epoch(kb.id) == 1
    catalog.activate(kb.id, v2.seq, actor="test")
    catalog.activate(kb.id, v3.seq, actor="test")
    assert _statuses(catalog, kb.id) == ["retired", "retired", "active"]
    assert catalog.cache_epoch(kb.id) == 3

    back = catalog.rollback(kb.id, actor="ops", reason="bad answers")
    assert back.seq == 2 and catalog.active_version(kb.id) == back
    assert _statuses(catalog, kb.id) == ["retired", "active", "retired"]
    assert catalog.rollback(kb.id, actor="test").seq == 1
    with pytest.raises(LoreError, match="no retired version older than the active version 1"):
        catalog.rollback(kb.id, actor="test")
    assert catalog.activate(kb.id, v3.seq, actor="test").seq == 3  # roll forward to a retired newer version
    assert catalog.cache_epoch(kb.id) == 6

    log = catalog.activation_log(kb.id)
    assert [(a.from_seq, a.to_seq) for a in log] == [(None, 1), (1, 2), (2, 3), (3, 2), (2, 1), (1, 3)]
    assert (log[0].actor, log[0].reason) == ("ci", "first build")
    assert (log[3].actor, log[3].reason) == ("ops", "bad answers")
    assert log[1].actor == "test" and all(a.at.tzinfo == UTC for a in log)
    assert [a.id for a in log] == sorted(a.id for a in log)


def test_an_actor_longer_than_the_log_column_is_cut_not_refused(catalog: Catalog, kb: KnowledgeBase) -> None:
    """Every caller passes who it is as it is (a key id and a long tenant name); the catalog cuts it."""
    v1, v2 = _built(catalog, kb.id), _built(catalog, kb.id)
    actor = f"key:{'k' * 32}@{'tenant-' * 10}"
    catalog.activate(kb.id, v1.seq, actor=actor)
    catalog.activate(kb.id, v2.seq, actor="short")
    catalog.rollback(kb.id, actor=actor)
    assert [a.actor for a in catalog.activation_log(kb.id)] == [actor[:64], "short", actor[:64]]


def test_activation_refusals(catalog: Catalog, kb: KnowledgeBase) -> None:
    with pytest.raises(LoreError, match="no version is active"):
        catalog.rollback(kb.id, actor="test")
    gated = _built(catalog, kb.id, gate=False)
    with pytest.raises(
        LoreError,
        match=f"cannot activate version {gated.seq} of knowledge base 'docs': it failed its quality gate",
    ):
        catalog.activate(kb.id, gated.seq, actor="test")
    broken = _built(catalog, kb.id, gate=None, failed=True)
    with pytest.raises(LoreError, match="failed to build"):
        catalog.activate(kb.id, broken.seq, actor="test")
    building = catalog.create_version(kb.id, embedding_model="e5", chunk_schema="v1")
    with pytest.raises(LoreError, match="has not finished"):
        catalog.activate(kb.id, building.seq, actor="test")
    good = _built(catalog, kb.id)
    catalog.activate(kb.id, good.seq, actor="test")
    with pytest.raises(LoreError, match="already active"):
        catalog.activate(kb.id, good.seq, actor="test")
    with pytest.raises(LoreError, match="no retired version older"):
        catalog.rollback(kb.id, actor="test")  # older versions exist but none was ever active
    with pytest.raises(NotFoundError, match="has no version 99"):
        catalog.activate(kb.id, 99, actor="test")
    with pytest.raises(NotFoundError, match="knowledge base id 'nope' not found"):
        catalog.activate("nope", 1, actor="test")
    with pytest.raises(NotFoundError):
        catalog.cache_epoch("nope")
    with pytest.raises(NotFoundError):
        catalog.active_version("nope")
    assert [a.to_seq for a in catalog.activation_log(kb.id)] == [good.seq]
    assert catalog.cache_epoch(kb.id) == 1


def test_activation_is_atomic(catalog: Catalog, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    v1, v2, v3 = (_built(catalog, kb.id) for _ in range(3))
    catalog.activate(kb.id, v1.seq, actor="test")
    catalog.activate(kb.id, v2.seq, actor="test")
    before = (catalog.list_versions(kb.id), catalog.cache_epoch(kb.id), catalog.get_kb("docs"))

    def broken_log(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("disk full while writing the activation log")

    monkeypatch.setattr(VersionsMixin, "_log_activation", staticmethod(broken_log))
    with pytest.raises(RuntimeError, match="disk full"):
        catalog.activate(kb.id, v3.seq, actor="test")
    with pytest.raises(RuntimeError, match="disk full"):
        catalog.rollback(kb.id, actor="test")
    after = (catalog.list_versions(kb.id), catalog.cache_epoch(kb.id), catalog.get_kb("docs"))
    assert after == before
    assert _statuses(catalog, kb.id) == ["retired", "active", "staged"]
    assert catalog.active_version(kb.id) == before[0][1]
    assert [a.to_seq for a in catalog.activation_log(kb.id)] == [1, 2]
    monkeypatch.undo()
    assert catalog.activate(kb.id, v3.seq, actor="test").status == VersionStatus.ACTIVE
    assert catalog.cache_epoch(kb.id) == 3


def test_delete_kb_removes_versions(catalog: Catalog, kb: KnowledgeBase) -> None:
    catalog.activate(kb.id, _built(catalog, kb.id).seq, actor="test")
    catalog.delete_kb("docs")
    with catalog.engine.connect() as conn:
        for table in ("kb_versions", "kb_activations"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0
    again = catalog.create_kb("docs", **KB_SETTINGS)  # type: ignore[arg-type]
    assert catalog.create_version(again.id, embedding_model="e5", chunk_schema="v1").seq == 1
