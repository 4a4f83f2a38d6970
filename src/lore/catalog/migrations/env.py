"""Alembic environment: migrates the connection (or URL) the catalog passes in; no alembic.ini needed."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection

from lore.catalog.models import Base

config = context.config
target_metadata = Base.metadata


def _migrate(connection: Connection) -> None:
    # Batch mode lets later revisions ALTER tables on SQLite (copy-and-move).
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    """Emit SQL for the configured URL without connecting."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Migrate the shared connection in config.attributes["connection"], else connect to sqlalchemy.url."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _migrate(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection or sqlalchemy.url given to the catalog migrations")
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            _migrate(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
