"""`lore db upgrade` and `lore db current`: the catalog's schema migrations as an explicit step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from lore.catalog import head_revision, mask_url
from lore.catalog.catalog import open_engine
from lore.catalog.migrate import current_revision, upgrade
from lore.cli.common import failing
from lore.cli.render import fail
from lore.config import Settings, load_settings
from lore.engine import Lore
from lore.errors import LoreError
from lore.owners import backfill, backfill_line

T = TypeVar("T")
console = Console()
db_app = typer.Typer(
    help="The catalog database: migrate its schema, show its revision.", no_args_is_help=True
)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the catalog to this version's schema (once, under a database-wide lock; safe to repeat)."""
    settings = load_settings()
    url = settings.resolved_catalog_url
    before, after = _on_catalog(settings, "migrate", upgrade)
    if before == after:
        console.print(f"catalog {mask_url(url)} is at revision {after} (head); nothing to do")
    else:
        console.print(f"catalog {mask_url(url)} migrated from {before or 'empty'} to {after}")
    with failing():  # owners of KBs from before 0005 (0007 leaves them without one), read from their content
        lore = Lore(settings)
        try:
            for b in backfill(lore):
                console.print(backfill_line(b))
            imported = lore.import_file_state()  # console state older Lore kept in files
            if any(imported.values()):
                console.print(
                    "imported into the catalog: " + ", ".join(f"{n} {k}" for k, n in imported.items())
                )
        finally:
            lore.close()


@db_app.command("current")
def db_current(
    check: Annotated[bool, typer.Option("--check", help="Exit 1 unless the schema is at head.")] = False,
) -> None:
    """Print the catalog's schema revision and this version's head revision."""
    settings = load_settings()
    url = settings.resolved_catalog_url
    current = _on_catalog(settings, "read", current_revision)
    head = head_revision()
    state = "at head" if current == head else "behind: run `lore db upgrade`"
    console.print(f"catalog {mask_url(url)}: revision {current or 'none'}, head {head} ({state})")
    if check and current != head:
        raise typer.Exit(1)


def _on_catalog(settings: Settings, doing: str, step: Callable[[Engine], T]) -> T:
    """`step` on an engine of the configured catalog, disposed after; a failure fails the command
    ("cannot `doing` catalog URL: reason")."""
    url = settings.resolved_catalog_url
    try:
        engine = open_engine(url, settings.catalog)
        try:
            return step(engine)
        finally:
            engine.dispose()
    except SQLAlchemyError as exc:
        fail(LoreError(f"cannot {doing} catalog {mask_url(url)}: {getattr(exc, 'orig', None) or exc}"))
    except LoreError as exc:
        fail(exc)
