"""The catalog on SQLite, PostgreSQL and MariaDB: exact values, long keys, resumable and locked migrations,
the schema check, and a dropped connection."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import column, create_engine, insert, inspect, select, table, text
from sqlalchemy.pool import NullPool

from lore.catalog import Catalog, ManifestEntry, SchemaError, alembic_config, head_revision
from lore.catalog.job_records import JobRow
from lore.catalog.models import Base
from lore.config import CatalogSettings
from lore.errors import ConflictError, NotFoundError
from tests.catalog.rows import KB, LORE
from tests.conftest import fresh_database, migrated, server_absent


def test_values_round_trip_exactly(db_url: str) -> None:
    with Catalog(migrated(db_url)) as cat:
        kb = cat.create_kb("docs", **KB)  # type: ignore[arg-type]
        long_path = "报销/" + "长" * 3000 + ".md"  # 12 KB in utf8mb4: far past MySQL's 3,072-byte key limit
        mtime = 1796138855.123456  # a 4-byte float would give 1796140000
        for path in (long_path, "A.md", "a.md"):  # case matters, as on every file system Lore reads
            cat.upsert_file(kb.id, path, sha256="0" * 64, size=1, mtime=mtime, status="ingested")
        assert [f.path for f in cat.list_files(kb.id)] == sorted([long_path, "A.md", "a.md"])
        got = cat.get_file(kb.id, long_path)
        assert got is not None and got.mtime == mtime
        assert cat.get_file(kb.id, "A.md") != cat.get_file(kb.id, "a.md")
        assert got.created_at.microsecond == got.created_at.microsecond and got.created_at.tzinfo == UTC
        stamps = {
            cat.create_version(kb.id, embedding_model="e5", chunk_schema="v1").created_at for _ in range(3)
        }
        assert any(s.microsecond for s in stamps) and len(stamps) == 3  # fractions kept (DATETIME(6))
        entry = ManifestEntry(long_path, "1" * 64, 5, mtime, 2, "added", "v1", "e5")
        cat.record_manifest(
            kb.id, 1, [entry, ManifestEntry("A.md", "2" * 64, 1, 1.5, 1, "added", "v1", "e5")]
        )
        assert cat.version_manifest(kb.id, 1)[long_path] == entry
        with pytest.raises(Exception, match="(?i)duplicate|unique"):
            cat.record_manifest(kb.id, 2, [entry, entry])
        with pytest.raises(ConflictError, match="not available"):  # unique whatever the case, on every db
            cat.create_kb("Docs", **KB)  # type: ignore[arg-type]
        for other in ("Docs", "docs ", "DOCS"):  # looked up exactly (MariaDB's collation pads spaces)
            with pytest.raises(NotFoundError):
                cat.get_kb(other)
        if cat.engine.dialect.name == "mysql":  # every table in utf8mb4 with binary collation
            with cat.engine.connect() as conn:
                collations = set(
                    conn.execute(
                        text(
                            "SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                            "DATABASE() "
                            "AND TABLE_NAME <> 'alembic_version'"
                        )
                    ).scalars()
                )
            assert collations == {"utf8mb4_bin"}


def test_half_applied_migration_resumes(db_url: str) -> None:
    """MariaDB commits DDL per statement: a migration stopped after its first step must finish when run
    again."""
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0002")
        with engine.begin() as conn:  # the first statement of 0003 went through, then the process died
            conn.execute(text("ALTER TABLE files ADD COLUMN chunk_schema VARCHAR(64)"))
        migrated(db_url)
        with engine.connect() as conn:
            assert (
                conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == head_revision()
            )
        assert {"kb_version_files", "jobs"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_from_0004_keeps_and_keys_rows(db_url: str) -> None:
    engine = create_engine(db_url, poolclass=NullPool)
    now = datetime(2026, 11, 30, 12, 0, 0, 250000, tzinfo=UTC)
    kbs = table(
        "knowledge_bases",
        *map(
            column,
            [
                "id",
                "name",
                "description",
                "embedding_provider",
                "embedding_model",
                "embedding_dim",
                "chunk_schema",
                "store_backend",
                "created_at",
                "updated_at",
                "cache_epoch",
            ],
        ),
    )
    files = table(
        "files",
        *map(
            column,
            [
                "id",
                "kb_id",
                "path",
                "sha256",
                "size",
                "mtime",
                "status",
                "chunk_count",
                "document_count",
                "ocr_pages",
                "created_at",
                "updated_at",
            ],
        ),
    )
    manifest = table(
        "kb_version_files",
        *map(
            column,
            [
                "kb_id",
                "seq",
                "path",
                "sha256",
                "size",
                "mtime",
                "chunk_count",
                "change",
                "chunk_schema",
                "embedding_model",
            ],
        ),
    )
    naive = now.replace(tzinfo=None) if engine.dialect.name != "postgresql" else now
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0004")
        with engine.begin() as conn:
            conn.execute(
                insert(kbs).values(
                    id="kb1",
                    name="old",
                    description="",
                    embedding_provider="local",
                    embedding_model="e5",
                    embedding_dim=8,
                    chunk_schema="v1",
                    store_backend="embedded",
                    created_at=naive,
                    updated_at=naive,
                    cache_epoch=0,
                )
            )
            conn.execute(
                insert(files).values(
                    id="f1",
                    kb_id="kb1",
                    path="docs/a.md",
                    sha256="a",
                    size=1,
                    mtime=2.5,
                    status="ingested",
                    chunk_count=1,
                    document_count=1,
                    ocr_pages=0,
                    created_at=naive,
                    updated_at=naive,
                )
            )
            if engine.dialect.name != "mysql":  # on MySQL 0003 made the digest key already; no old rows there
                conn.execute(
                    insert(manifest).values(
                        kb_id="kb1",
                        seq=1,
                        path="docs/a.md",
                        sha256="a",
                        size=1,
                        mtime=2.5,
                        chunk_count=1,
                        change="added",
                        chunk_schema="v1",
                        embedding_model="e5",
                    )
                )
    finally:
        engine.dispose()
    with Catalog(migrated(db_url)) as cat:
        got = cat.get_file("kb1", "docs/a.md")
        assert got is not None and got.id == "f1" and got.mtime == 2.5
        if cat.engine.dialect.name != "mysql":
            assert list(cat.version_manifest("kb1", 1)) == ["docs/a.md"]
        again = cat.upsert_file("kb1", "docs/a.md", sha256="b", size=2, mtime=3.0, status="ingested")
        assert again.id == "f1"  # found through the digest the migration filled in
        with cat.engine.connect() as conn:  # an upgraded database has the schema a fresh one gets
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_server_database_must_be_upgraded_first(db_kind: str, tmp_path: Path) -> None:
    with fresh_database(db_kind, tmp_path) as url:
        if db_kind == "sqlite":  # the embedded default migrates itself unless told not to
            with pytest.raises(SchemaError, match="lore db upgrade"):
                Catalog(url, CatalogSettings(auto_upgrade="never"))
            with Catalog(url) as cat:
                assert cat.list_kbs() == []
            return
        with pytest.raises(SchemaError, match=r"has no Lore schema yet.*run `lore db upgrade`"):
            Catalog(url)
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0004")
        engine.dispose()
        with pytest.raises(
            SchemaError, match=f"is at schema revision 0004.*needs revision {head_revision()}"
        ):
            Catalog(url)
        with Catalog(migrated(url)) as cat:
            assert cat.list_kbs() == []


@pytest.mark.parametrize("kind", ["postgresql", "mariadb", "sqlite"])
def test_processes_starting_together_migrate_once(kind: str, tmp_path: Path) -> None:
    """Three `lore db upgrade` at once on an empty database: the lock makes one migrate, the others wait."""
    if reason := server_absent(kind):
        pytest.skip(reason)
    with fresh_database(kind, tmp_path) as url:
        env = {**os.environ, "LORE_CATALOG_URL": url, "LORE_HOME": str(tmp_path / "home")}
        procs = [
            subprocess.Popen(
                [*LORE, "db", "upgrade"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for _ in range(3)
        ]
        outputs = [" ".join(p.communicate(timeout=300)[0].split()) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outputs
        assert sum("migrated from empty" in out for out in outputs) == 1, outputs
        assert sum("nothing to do" in out for out in outputs) == 2, outputs
        check = subprocess.run(
            [*LORE, "db", "current", "--check"], check=False, env=env, capture_output=True, text=True
        )
        assert check.returncode == 0 and f"revision {head_revision()}" in " ".join(check.stdout.split())


@pytest.mark.parametrize("pre_ping", [True, False])
@pytest.mark.parametrize("db_kind", ["postgresql", "mariadb"])
def test_dropped_connection_is_retried(db_kind: str, pre_ping: bool, tmp_path: Path) -> None:
    """The server ends the catalog's connections (as a restart does): the next call still succeeds,
    through the pool's pre-ping or, without it, the catalog's one retry."""
    if reason := server_absent(db_kind):
        pytest.skip(reason)
    with (
        fresh_database(db_kind, tmp_path) as db_url,
        Catalog(migrated(db_url), CatalogSettings(pool_pre_ping=pre_ping)) as cat,
    ):
        cat.create_kb("docs", **KB)  # type: ignore[arg-type]
        with cat.engine.connect() as conn:
            own = conn.execute(
                text("SELECT pg_backend_pid()" if db_kind == "postgresql" else "SELECT CONNECTION_ID()")
            ).scalar_one()
        admin = create_engine(db_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            if db_kind == "postgresql":
                conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": own})
            else:
                conn.execute(text(f"KILL {int(own)}"))
        admin.dispose()
        assert [kb.name for kb in cat.list_kbs()] == ["docs"]
        with cat.engine.connect() as conn:
            assert conn.execute(select(JobRow.id)).all() == []


def test_mysql_tables_of_other_revisions_get_binary_collation(tmp_path: Path) -> None:
    """A table another revision created with the server's default collation (case-insensitive) is
    converted."""
    if reason := server_absent("mariadb"):
        pytest.skip(reason)
    with fresh_database("mariadb", tmp_path) as url:
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.begin() as conn:
                command.upgrade(alembic_config(connection=conn), "0004")
                conn.execute(
                    text(
                        "CREATE TABLE upload_owners (name VARCHAR(255) PRIMARY KEY) "
                        "DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci"
                    )
                )
            migrated(url)
            with engine.begin() as conn:
                conn.execute(text("INSERT INTO upload_owners VALUES ('Report.pdf'), ('report.pdf')"))
                assert conn.execute(text("SELECT count(*) FROM upload_owners")).scalar_one() == 2
        finally:
            engine.dispose()


@pytest.mark.parametrize("command_line", [["serve"], ["worker", "--once"]])
def test_serve_and_worker_refuse_a_catalog_behind_head(
    command_line: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from lore.cli.main import app

    if reason := server_absent("postgresql"):
        pytest.skip(reason)
    with fresh_database("postgresql", tmp_path) as url:
        monkeypatch.setenv("LORE_CATALOG_URL", url)
        monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
        result = CliRunner().invoke(app, command_line)
        out = " ".join(result.output.split())
        assert result.exit_code == 2 and "has no Lore schema yet" in out and "lore db upgrade" in out, out
        migrated(url)
        if command_line[0] == "worker":
            result = CliRunner().invoke(app, command_line)
            assert result.exit_code == 0 and "no job queued" in result.output, result.output
