"""Column types and DDL helpers that mean the same on SQLite, PostgreSQL and MySQL/MariaDB.

Migrations and models both use them, so a fresh database of any kind gets the same schema.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

MYSQL_NAMES = ("mysql", "mariadb")
# 8-byte floats: MySQL's FLOAT is 4 bytes (a Unix mtime 1796138855 comes back as 1796140000).
Float64 = sa.Float().with_variant(mysql.DOUBLE(asdecimal=False), *MYSQL_NAMES)
# MySQL's TEXT holds 64 KB; traces, reports and job payloads may be longer.
LongText = sa.Text().with_variant(mysql.LONGTEXT(), *MYSQL_NAMES)
# The digest of a long value (a file path) that keys and unique indexes use instead of the value:
# MariaDB refuses keys over 3,072 bytes and MySQL 8 refuses long unique indexes.
Digest = sa.String(64)


def digest(value: str) -> str:
    """SHA-256 hex of a value, for the digest column that keys it."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def timestamp_type() -> sa.types.TypeEngine[datetime]:
    """A timezone-aware timestamp with microseconds (MySQL: DATETIME(6), which keeps fractions)."""
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), *MYSQL_NAMES)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back timezone-aware (SQLite and MySQL drop the zone)."""

    impl = sa.DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name in MYSQL_NAMES:
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: catalog timestamps must carry a timezone")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name in MYSQL_NAMES else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        stamp: datetime = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return stamp
