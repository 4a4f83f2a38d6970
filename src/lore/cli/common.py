"""What several `lore` commands share: their option types, a Lore error as the command's failure, a change
to a knowledge base under audit, and a failed quality gate's verdict."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

import typer

from lore.catalog import KnowledgeBase
from lore.cli.render import err, fail
from lore.engine import Lore
from lore.errors import LoreError

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
        return f"cli@{self.kb.owner_tenant or ''}"[:64]

    def audit(self, action: str, target: str, tenant: str | None = None) -> None:
        """The change in the audit log, by the KB's owner tenant unless `tenant` is given."""
        by = self.kb.owner_tenant or "" if tenant is None else tenant
        self.lore.catalog.audit(action, tenant=by, key_id=None, kb=self.name, target=target, via="cli")


@contextmanager
def kb_change(name: str) -> Iterator[KbChange]:
    """The KB `name`, changed in one catalog transaction; a LoreError fails the command."""
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
