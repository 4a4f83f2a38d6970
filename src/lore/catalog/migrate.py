"""Schema migrations as an explicit step: `upgrade` runs them once under a database-wide lock.

PostgreSQL takes an advisory lock, MySQL/MariaDB a named lock (GET_LOCK) and SQLite a file lock
beside the database, so processes starting together on an empty database wait for one another
instead of racing to create the same tables.
"""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection

from lore.catalog.types import MYSQL_NAMES
from lore.errors import LoreError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Alembic's command API keeps module-global state: two upgrades in one process must not overlap.
_UPGRADE_LOCK = threading.Lock()
_PG_LOCK_KEY = 0x4C6F7265  # "Lore"
_MYSQL_LOCK = "lore_catalog_migrations"
LOCK_TIMEOUT_S = 600


class SchemaError(LoreError):
    """The catalog's schema is not the one this code needs; `lore db upgrade` fixes it."""


def alembic_config(*, connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic Config for the packaged migrations, bound to a connection or a URL."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: never migrated)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def check_schema(engine: Engine, where: str) -> None:
    """Raise `SchemaError` unless the database is at this code's head revision."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return
    if current is None:
        state = "has no Lore schema yet"
    elif current in {r.revision for r in ScriptDirectory(str(MIGRATIONS_DIR)).walk_revisions()}:
        state = f"is at schema revision {current}"
    else:
        raise SchemaError(
            f"catalog {where} is at schema revision {current}, which this version of Lore does not "
            f"know (newer code migrated it?); run a Lore that knows it"
        )
    raise SchemaError(
        f"catalog {where} {state}; this version of Lore needs revision {head}: "
        f"run `lore db upgrade` once (one process, e.g. the migration job), then start again"
    )


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Migrate to head under the database's migration lock; returns (revision before, revision after)."""
    with _UPGRADE_LOCK, engine.connect() as conn, _migration_lock(conn, engine):
        before = MigrationContext.configure(conn).get_current_revision()
        conn.commit()
        with conn.begin():  # one transaction where DDL is transactional (SQLite, PostgreSQL)
            command.upgrade(alembic_config(connection=conn), "head")
        after = MigrationContext.configure(conn).get_current_revision()
        conn.commit()
    assert after is not None
    return before, after


@contextmanager
def _migration_lock(conn: Connection, engine: Engine) -> Iterator[None]:
    """Hold the database-wide migration lock on this connection's session."""
    dialect = engine.dialect.name
    if dialect == "postgresql":
        # Keyed by the database too: catalogs in other databases of the server migrate independently.
        conn.execute(text("SELECT pg_advisory_lock(:k, hashtext(current_database()))"), {"k": _PG_LOCK_KEY})
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(
                text("SELECT pg_advisory_unlock(:k, hashtext(current_database()))"), {"k": _PG_LOCK_KEY}
            )
            conn.commit()
    elif dialect in MYSQL_NAMES:
        name = f"{_MYSQL_LOCK}.{conn.execute(text('SELECT DATABASE()')).scalar()}"[
            :64
        ]  # names are server-wide
        got = conn.execute(text("SELECT GET_LOCK(:n, :t)"), {"n": name, "t": LOCK_TIMEOUT_S}).scalar()
        conn.commit()
        if got != 1:
            raise SchemaError(
                f"could not take the migration lock within {LOCK_TIMEOUT_S} s; is another "
                "`lore db upgrade` stuck?"
            )
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": name})
            conn.commit()
    else:
        with _file_lock(engine.url.database):
            yield


@contextmanager
def _file_lock(database: str | None) -> Iterator[None]:
    """An exclusive lock on `<database>.migrate.lock` (nothing for an in-memory database)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    path = Path(database).with_name(Path(database).name + ".migrate.lock")
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
