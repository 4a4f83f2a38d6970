"""What several `lore` commands share: their option types, a Lore error as the command's failure, a change
to a knowledge base under audit, and a failed quality gate's verdict."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lore.cli.render import err, fail
from lore.errors import LoreError

if TYPE_CHECKING:  # the engine loads only when a command runs
    from lore.catalog import KnowledgeBase
    from lore.config import Settings
    from lore.engine import Lore

KbOption = Annotated[str, typer.Option("--kb", help="Knowledge base name.")]
JsonOption = Annotated[bool, typer.Option("--json")]
MessageOption = Annotated[str, typer.Option("-m", "--message", help="What this version is.")]
ActivateOption = Annotated[bool, typer.Option("--activate", help="Activate the version when built.")]
QualityGateOption = Annotated[bool, typer.Option("--quality-gate", help="Fail the version on a bad report.")]


@contextmanager
def failing() -> Iterator[None]:
    """A LoreError inside fails the command (red on stderr, exit code 2)."""
    try:
        yield
    except LoreError as exc:
        fail(exc)


@dataclass
class KbChange:
    """A knowledge base being changed from the command line, as its owner tenant."""

    lore: Lore
    name: str
    kb: KnowledgeBase

    @property
    def actor(self) -> str:
        return f"cli@{self.kb.owner_tenant or ''}"

    def audit(self, action: str, target: str, tenant: str | None = None) -> None:
        """The change in the audit log, by the KB's owner tenant unless `tenant` is given."""
        by = self.kb.owner_tenant or "" if tenant is None else tenant
        self.lore.catalog.audit(action, tenant=by, key_id=None, kb=self.name, target=target, via="cli")


def new_lore() -> Lore:
    """A `Lore`, importing the engine only now (a command's module stays light for `--help`)."""
    from lore.engine import Lore

    return Lore()


@contextmanager
def kb_change(name: str) -> Iterator[KbChange]:
    """The KB `name`, changed in one catalog transaction; a LoreError fails the command."""
    from lore.engine import Lore

    with failing():
        lore = Lore()
        kb = lore.catalog.get_kb(name)
        with lore.catalog.transaction():
            yield KbChange(lore, name, kb)


def gate_failed(reasons: list[str], note: str | None = None) -> None:
    """A failed quality gate (any `reasons`): them and `note` on stderr, exit code 1."""
    if reasons:
        for reason in reasons:
            err.print(f"[bold red]quality gate:[/] {reason}")
        if note is not None:
            err.print(note)
        raise typer.Exit(1)


def catalog_missing(settings: Settings) -> bool:
    """Whether the catalog is a SQLite file not created yet (a database server's catalog counts as there)."""
    url = settings.resolved_catalog_url
    if not url.startswith("sqlite:///"):
        return False
    path = url.removeprefix("sqlite:///").partition("?")[0]
    return path not in ("", ":memory:") and not Path(path).exists()


def no_kbs_yet(settings: Settings) -> str:
    return f"no knowledge bases yet in {settings.home}; create one with: lore kb create NAME"


def require_catalog() -> None:
    """Fail (exit code 2, creating nothing) when there is no catalog yet: nothing to read or change."""
    from lore.config import load_settings

    with failing():
        settings = load_settings()
        if catalog_missing(settings):
            raise LoreError(no_kbs_yet(settings))
