"""Guarded migration steps: each does nothing when its effect is already there.

PostgreSQL and SQLite run a whole upgrade in one transaction; MySQL/MariaDB commit every DDL
statement on its own, so an upgrade stopped half-way there leaves some steps done. Written with
these helpers, running the same upgrade again finishes it instead of failing on the first step.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import context, op

from lore.catalog.types import MYSQL_NAMES

# Every table is utf8mb4 with binary collation on MySQL: Chinese text fits, and names, paths and
# tenants compare exactly as on SQLite and PostgreSQL (the default collation ignores case).
MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _inspector() -> sa.Inspector | None:
    return None if context.is_offline_mode() else sa.inspect(op.get_bind())


def dialect() -> str:
    """The name of the database dialect being migrated ('mysql' for MariaDB too)."""
    name = op.get_context().dialect.name
    return "mysql" if name in MYSQL_NAMES else name


def has_table(name: str) -> bool:
    """Whether the table exists (False when emitting SQL offline)."""
    insp = _inspector()
    return insp is not None and insp.has_table(name)


def has_column(table: str, column: str) -> bool:
    """Whether the table has the column."""
    insp = _inspector()
    return (
        insp is not None and insp.has_table(table) and column in {c["name"] for c in insp.get_columns(table)}
    )


def has_index(table: str, name: str) -> bool:
    """Whether the table has the index (unique or not)."""
    insp = _inspector()
    return insp is not None and insp.has_table(table) and name in {i["name"] for i in insp.get_indexes(table)}


def create_table(name: str, *items: Any, **kw: Any) -> None:
    """CREATE TABLE unless it exists (MySQL: utf8mb4, binary collation)."""
    if not has_table(name):
        op.create_table(name, *items, **MYSQL_TABLE, **kw)


def add_columns(table: str, *columns: sa.Column[Any]) -> None:
    """ALTER TABLE ... ADD COLUMN for each column the table lacks (rows stay in place)."""
    missing = [c for c in columns if not has_column(table, c.name)]
    if missing:
        with op.batch_alter_table(table, recreate="never") as batch:
            for column in missing:
                batch.add_column(column)


def create_index(name: str, table: str, columns: list[str], *, unique: bool = False) -> None:
    """CREATE INDEX unless it exists."""
    if not has_index(table, name):
        op.create_index(name, table, columns, unique=unique)


def drop_index(name: str, table: str) -> None:
    """DROP INDEX if it exists."""
    if has_index(table, name):
        op.drop_index(name, table_name=table)
