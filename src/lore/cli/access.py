"""`lore kb share/unshare` and `lore audit`: who may see a knowledge base, and who changed what."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.render import fail
from lore.engine import Lore
from lore.errors import LoreError, NotFoundError

console = Console()


def kb_share(name: str, tenant: Annotated[str, typer.Argument(help="Tenant to share the KB with.")]) -> None:
    """Let another tenant read the KB and add its own files (its owner tenant keeps it)."""
    try:
        lore = Lore()
        kb = lore.catalog.get_kb(name)
        with lore.catalog.transaction():
            added = lore.catalog.share_kb(kb.id, tenant)
            lore.catalog.audit(
                "share", tenant=kb.owner_tenant or "", key_id=None, kb=name, target=tenant, via="cli"
            )
    except LoreError as exc:
        fail(exc)
    console.print(f"{name}: shared with {tenant}" if added else f"{name}: {tenant} already reads it")


def kb_owner(name: str, tenant: Annotated[str, typer.Argument(help="The new owner tenant.")]) -> None:
    """Give the KB an owner tenant (one without owner is seen only here); a previous owner keeps a share."""
    try:
        lore = Lore()
        kb = lore.catalog.get_kb(name)
        with lore.catalog.transaction():
            before = lore.catalog.set_kb_owner(kb.id, tenant)
            lore.catalog.audit("owner", tenant=tenant, key_id=None, kb=name, target=tenant, via="cli")
    except LoreError as exc:
        fail(exc)
    console.print(
        f"{name}: owned by {tenant}" + (f" ({before} keeps a share)" if before not in (None, tenant) else "")
    )


def kb_unshare(
    name: str, tenant: Annotated[str, typer.Argument(help="Tenant to stop sharing with.")]
) -> None:
    """Stop sharing the KB with a tenant (its files stay in the KB, owned by it)."""
    try:
        lore = Lore()
        kb = lore.catalog.get_kb(name)
        with lore.catalog.transaction():
            if not lore.catalog.unshare_kb(kb.id, tenant):
                raise NotFoundError(f"knowledge base '{name}' is not shared with tenant '{tenant}'")
            lore.catalog.audit(
                "unshare", tenant=kb.owner_tenant or "", key_id=None, kb=name, target=tenant, via="cli"
            )
    except LoreError as exc:
        fail(exc)
    console.print(f"{name}: no longer shared with {tenant}")


def audit(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's entries.")] = None,
    kb: Annotated[str | None, typer.Option("--kb", help="Only this knowledge base.")] = None,
    limit: Annotated[int, typer.Option(help="Newest entries to show.")] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The audit log: activations, rollbacks, builds, deletes, shares and key changes, newest first."""
    try:
        entries = Lore().catalog.audit_log(tenant, kb, limit)
    except LoreError as exc:
        fail(exc)
    if as_json:
        print(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    table = Table("at", "action", "kb", "target", "tenant", "key")
    for e in entries:
        table.add_row(
            e.at.strftime("%Y-%m-%d %H:%M:%S"), e.action, e.kb or "", e.target, e.tenant_id, e.key_id or "cli"
        )
    console.print(table)
