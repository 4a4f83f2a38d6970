"""A short lock every process sharing the catalog database honours (one per name): PostgreSQL's advisory
lock or MySQL/MariaDB's GET_LOCK, held on a connection of its own across a whole transaction and its
commit. SQLite needs none: its writers are serialised, so a transaction that writes first is alone."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from lore.catalog.types import MYSQL_NAMES
from lore.errors import UnavailableError

_PG_KEY = 0x4C4A4F42  # "LJOB": the first half of every job lock's key; the name's hash is the second
WAIT_S = 30  # a holder keeps it for one short transaction: waiting longer means something is stuck


@contextmanager
def named_lock(engine: Engine, name: str) -> Iterator[None]:
    """Hold the lock `name` (database-wide) while the block runs; UnavailableError if it stays taken."""
    dialect = engine.dialect.name
    if dialect != "postgresql" and dialect not in MYSQL_NAMES:
        yield
        return
    with engine.connect() as conn:
        if dialect == "postgresql":
            conn.execute(text(f"SET LOCAL lock_timeout = '{WAIT_S}s'"))  # until this transaction ends
            try:
                conn.execute(text("SELECT pg_advisory_lock(:k, hashtext(:n))"), {"k": _PG_KEY, "n": name})
            except DBAPIError as exc:
                raise UnavailableError("the catalog is busy; try again shortly") from exc
            release, params = "SELECT pg_advisory_unlock(:k, hashtext(:n))", {"k": _PG_KEY, "n": name}
        else:
            # Names are server-wide and at most 64 characters: the database's and a hash of ours.
            database = conn.execute(text("SELECT DATABASE()")).scalar()
            key = f"lore.{hashlib.sha256(f'{database}/{name}'.encode()).hexdigest()[:40]}"
            if conn.execute(text("SELECT GET_LOCK(:n, :t)"), {"n": key, "t": WAIT_S}).scalar() != 1:
                raise UnavailableError("the catalog is busy; try again shortly")
            release, params = "SELECT RELEASE_LOCK(:n)", {"n": key}
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(text(release), params)
            conn.commit()
