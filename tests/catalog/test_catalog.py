"""Catalog tests on SQLite, PostgreSQL and MariaDB: migrations, knowledge bases, files, chunks and errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import column, create_engine, insert, inspect, table, text
from sqlalchemy.pool import NullPool

from lore.catalog import MIGRATIONS_DIR, Catalog, KnowledgeBase, alembic_config
from lore.catalog.models import Base
from lore.errors import LoreError, MissingDependencyError, NotFoundError
from tests.conftest import migrated

HEAD = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
KB_SETTINGS = {
    "embedding_provider": "local",
    "embedding_model": "e5-small",
    "embedding_dim": 384,
    "chunk_schema": "v1",
    "store_backend": "milvus-lite",
}


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
def catalog(db_url: str) -> Iterator[Catalog]:
    cat = Catalog(migrated(db_url))
    yield cat
    cat.close()


def _kb(cat: Catalog, name: str = "docs") -> KnowledgeBase:
    return cat.create_kb(name, **KB_SETTINGS)  # type: ignore[arg-type]


def _count(cat: Catalog, table: str) -> int:
    with cat.engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_migrations_create_schema(catalog: Catalog) -> None:
    insp = inspect(catalog.engine)
    assert {"knowledge_bases", "files", "chunks", "jobs", "alembic_version"} <= set(insp.get_table_names())
    files_ix = {ix["name"]: ix for ix in insp.get_indexes("files")}
    assert files_ix["ux_files_kb_id_path_hash"]["column_names"] == ["kb_id", "path_hash"]
    assert files_ix["ux_files_kb_id_path_hash"]["unique"]
    assert "ux_files_kb_id_path" not in files_ix  # a 4096-character key: MySQL 8 refuses it
    assert insp.get_pk_constraint("kb_version_files")["constrained_columns"] == ["kb_id", "seq", "path_hash"]
    chunks_ix = {ix["name"]: ix["column_names"] for ix in insp.get_indexes("chunks")}
    assert chunks_ix["ix_chunks_kb_id_chunk_id"] == ["kb_id", "chunk_id"]
    with catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]
        if catalog.engine.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
        # The migrations and the ORM models describe the same schema.
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_sqlite_catalog_makes_its_folder(tmp_path: Path) -> None:
    with Catalog(_url(tmp_path / "data" / "catalog.db")) as cat:
        assert cat.list_kbs() == []
    assert (tmp_path / "data" / "catalog.db").is_file()


def test_first_revision_is_numbered_0001() -> None:
    revisions = list(ScriptDirectory(str(MIGRATIONS_DIR)).walk_revisions())
    assert revisions[-1].revision == "0001"
    assert revisions[-1].down_revision is None


def test_reopening_is_a_noop(db_url: str) -> None:
    url = migrated(db_url)
    with Catalog(url) as cat:
        kb = _kb(cat)
    with Catalog(url) as cat:
        assert cat.list_kbs() == [kb]
        with cat.engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]


def test_kb_create_get_list_delete(catalog: Catalog) -> None:
    docs = catalog.create_kb("docs", description="manuals", **KB_SETTINGS)  # type: ignore[arg-type]
    faq = _kb(catalog, "FAQ_2-b")
    assert docs.description == "manuals" and docs.embedding_dim == 384 and docs.store_backend == "milvus-lite"
    assert docs.created_at.tzinfo == UTC and docs.created_at == docs.updated_at
    assert catalog.get_kb("docs") == docs
    assert [kb.name for kb in catalog.list_kbs()] == ["FAQ_2-b", "docs"]
    assert docs.id != faq.id
    catalog.delete_kb("docs")
    assert catalog.list_kbs() == [faq]


def test_kb_errors(catalog: Catalog) -> None:
    _kb(catalog)
    with pytest.raises(LoreError, match="knowledge base name 'docs' is not available"):
        _kb(catalog)
    for bad in ["", "a" * 65, "has space", "dot.name", "斜/线"]:
        with pytest.raises(LoreError, match="invalid knowledge base name"):
            _kb(catalog, bad)
    _kb(catalog, "a" * 64)
    with pytest.raises(NotFoundError) as info:
        catalog.get_kb("nope")
    assert str(info.value) == "knowledge base 'nope' not found; create it with: lore kb create nope"
    with pytest.raises(NotFoundError):
        catalog.delete_kb("nope")
    with pytest.raises(LoreError, match="embedding dimension"):
        catalog.create_kb("zero", **{**KB_SETTINGS, "embedding_dim": 0})  # type: ignore[arg-type]


def test_file_upsert_updates_in_place(catalog: Catalog) -> None:
    kb = _kb(catalog)
    assert catalog.get_file(kb.id, "a.pdf") is None
    first = catalog.upsert_file(
        kb.id, "a.pdf", sha256="1" * 64, size=10, mtime=1.5, status="failed", error="encrypted"
    )
    second = catalog.upsert_file(
        kb.id,
        "a.pdf",
        sha256="2" * 64,
        size=20,
        mtime=2.5,
        status="ingested",
        chunk_count=7,
        document_count=1,
        ocr_pages=2,
        encoding="utf-8",
    )
    assert second.id == first.id and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert (second.sha256, second.size, second.mtime, second.error) == ("2" * 64, 20, 2.5, None)
    assert (second.chunk_count, second.document_count, second.ocr_pages, second.encoding) == (
        7,
        1,
        2,
        "utf-8",
    )
    assert catalog.get_file(kb.id, "a.pdf") == second
    catalog.upsert_file(kb.id, "b.txt", sha256="3" * 64, size=0, mtime=3.0, status="empty")
    assert [f.path for f in catalog.list_files(kb.id)] == ["a.pdf", "b.txt"]
    assert [f.path for f in catalog.list_files(kb.id, status="empty")] == ["b.txt"]
    assert _count(catalog, "files") == 2
    assert catalog.delete_file(kb.id, "b.txt") is True
    assert catalog.delete_file(kb.id, "b.txt") is False
    assert catalog.get_file(kb.id, "b.txt") is None


def test_file_errors(catalog: Catalog) -> None:
    kb = _kb(catalog)
    with pytest.raises(ValueError, match="unknown file status"):
        catalog.upsert_file(kb.id, "a", sha256="", size=0, mtime=0, status="done")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="knowledge base id"):
        catalog.upsert_file("missing", "a", sha256="", size=0, mtime=0, status="ingested")
    with pytest.raises(NotFoundError, match="file id"):
        catalog.set_file_chunks("missing", [("c", 0, None, None)])


def test_set_file_chunks_replaces(catalog: Catalog) -> None:
    kb = _kb(catalog)
    a = catalog.upsert_file(kb.id, "a.md", sha256="a", size=1, mtime=1, status="ingested")
    b = catalog.upsert_file(kb.id, "b.md", sha256="b", size=1, mtime=1, status="ingested")
    catalog.set_file_chunks(a.id, [("a2", 2, "p", "d"), ("a0", 0, None, "d"), ("a1", 1, "p", "d")])
    catalog.set_file_chunks(b.id, [("b0", 0, None, None)])
    assert catalog.file_chunk_ids(a.id) == ["a0", "a1", "a2"]
    assert catalog.count_chunks(kb.id) == 4
    catalog.set_file_chunks(a.id, [("n0", 0, None, "d")])
    assert catalog.file_chunk_ids(a.id) == ["n0"]
    assert catalog.file_chunk_ids(b.id) == ["b0"]
    assert catalog.count_chunks(kb.id) == 2
    catalog.set_file_chunks(a.id, [])
    assert catalog.file_chunk_ids(a.id) == []
    catalog.delete_file(kb.id, "b.md")
    assert catalog.count_chunks(kb.id) == 0


def test_transaction_groups_calls_and_rolls_back(catalog: Catalog) -> None:
    kb = _kb(catalog)
    with pytest.raises(RuntimeError), catalog.transaction():
        f = catalog.upsert_file(kb.id, "a.md", sha256="a", size=1, mtime=1, status="ingested")
        catalog.set_file_chunks(f.id, [("c0", 0, None, None)])
        raise RuntimeError("ingest crashed")
    assert catalog.get_file(kb.id, "a.md") is None
    assert catalog.count_chunks(kb.id) == 0


def test_delete_kb_cascades(catalog: Catalog) -> None:
    kb, other = _kb(catalog), _kb(catalog, "other")
    for owner in (kb, other):
        f = catalog.upsert_file(owner.id, "a.md", sha256="a", size=1, mtime=1, status="ingested")
        catalog.set_file_chunks(f.id, [("c0", 0, None, None), ("c1", 1, None, None)])
    catalog.delete_kb("docs")
    assert catalog.list_files(kb.id) == [] and catalog.count_chunks(kb.id) == 0
    assert _count(catalog, "files") == 1 and _count(catalog, "chunks") == 2
    assert catalog.count_chunks(other.id) == 2


def test_kb_chunk_settings_keep_sizes_and_strategy(catalog: Catalog) -> None:
    kb, other = _kb(catalog), _kb(catalog, "other")
    assert catalog.get_chunk_settings(kb.id) is None
    first = catalog.set_chunk_settings(kb.id, (100, 10, 400), by="admin")
    assert first is not None and first.sizes == (100, 10, 400) and first.strategy == "structure"
    got = catalog.set_chunk_settings(kb.id, (120, 0, 500), by="ops", strategy="semantic")
    again = catalog.get_chunk_settings(kb.id)
    assert got is not None and again is not None
    for record in (got, again):
        assert (record.sizes, record.strategy, record.updated_by) == ((120, 0, 500), "semantic", "ops")
        assert record.updated_at.tzinfo == UTC
    assert catalog.get_chunk_settings(other.id) is None
    with catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT strategy FROM kb_chunk_settings")).scalars().all() == ["semantic"]
    assert catalog.set_chunk_settings(kb.id, None, by="ops") is None
    assert catalog.get_chunk_settings(kb.id) is None
    catalog.set_chunk_settings(other.id, (100, 10, 400), by="ops", strategy="semantic")
    catalog.delete_kb("other")
    assert _count(catalog, "kb_chunk_settings") == 0


def test_upgrade_from_0010_keeps_chunk_settings_as_structure(db_url: str) -> None:
    """A KB's own sizes set before strategies existed keep chunking by structure; down again keeps them."""
    engine = create_engine(db_url, poolclass=NullPool)
    stamp = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
    stamp = stamp if engine.dialect.name == "postgresql" else stamp.replace(tzinfo=None)
    kb = {**KB_SETTINGS, "id": "kb1", "name": "old", "description": "", "created_at": stamp}
    own = {"kb_id": "kb1", "child_size": 100, "child_overlap": 10, "parent_size": 400, "updated_by": "ops"}
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0010")
            conn.execute(
                insert(table("knowledge_bases", *map(column, kb), column("updated_at"))),
                {**kb, "updated_at": stamp},
            )
            conn.execute(
                insert(table("kb_chunk_settings", *map(column, own), column("updated_at"))),
                {**own, "updated_at": stamp},
            )
        with Catalog(migrated(db_url)) as cat:
            got = cat.get_chunk_settings("kb1")
            assert got is not None and got.sizes == (100, 10, 400) and got.strategy == "structure"
            cat.set_chunk_settings("kb1", got.sizes, by="ops", strategy="semantic")
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0010")
        assert "strategy" not in {c["name"] for c in inspect(engine).get_columns("kb_chunk_settings")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT child_size FROM kb_chunk_settings")).scalars().all() == [100]
        with Catalog(migrated(db_url)) as cat:
            got = cat.get_chunk_settings("kb1")
            assert got is not None and got.strategy == "structure"
    finally:
        engine.dispose()


def test_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    url = _url(blocker / "sub" / "catalog.db")
    with pytest.raises(LoreError, match="cannot open catalog") as info:
        Catalog(url)
    assert str(blocker) in str(info.value)
    with pytest.raises(LoreError, match="unable to open database file"):
        Catalog(_url(tmp_path))  # a directory, not a database file


def test_error_masks_password() -> None:
    with pytest.raises(LoreError) as info:
        Catalog("postgresql://lore:s3cret@localhost:1/lore")
    message = str(info.value)
    assert "s3cret" not in message and "lore:***@localhost" in message
    assert isinstance(info.value, MissingDependencyError) or "cannot open catalog" in message


def test_migrations_are_reversible_on_fresh_db(db_url: str) -> None:
    url = db_url
    command.upgrade(alembic_config(url=url), "head")
    engine = create_engine(url)
    try:
        assert {"knowledge_bases", "files", "chunks"} <= set(inspect(engine).get_table_names())
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 0
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "head")
        assert {"knowledge_bases", "files", "chunks"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    with Catalog(url) as cat:  # a catalog opens a DB migrated outside it
        assert _kb(cat).name == "docs"
        with pytest.raises(LoreError, match="is not available"):
            _kb(cat)
