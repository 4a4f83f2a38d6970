"""`lore kb share/unshare` and `lore audit`: who may see a knowledge base, and who changed what; when an API
key expires (`lore keys create --expires`)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.common import JsonOption, failing, kb_change, new_lore

console = Console()


def kb_share(name: str, tenant: Annotated[str, typer.Argument(help="Tenant to share the KB with.")]) -> None:
    """Let another tenant read the KB and add its own files (its owner tenant keeps it)."""
    with kb_change(name) as change:
        added = change.lore.catalog.share_kb(change.kb.id, tenant)
        change.audit("share", tenant)
    console.print(f"{name}: shared with {tenant}" if added else f"{name}: {tenant} already reads it")


def kb_owner(name: str, tenant: Annotated[str, typer.Argument(help="The new owner tenant.")]) -> None:
    """Give the KB an owner tenant (one without owner is seen only here); a previous owner keeps a share."""
    with kb_change(name) as change:
        before = change.lore.catalog.set_kb_owner(change.kb.id, tenant)
        change.audit("owner", tenant, tenant=tenant)
    console.print(
        f"{name}: owned by {tenant}" + (f" ({before} keeps a share)" if before not in (None, tenant) else "")
    )


def kb_unshare(
    name: str, tenant: Annotated[str, typer.Argument(help="Tenant to stop sharing with.")]
) -> None:
    """Stop sharing the KB with a tenant and remove that tenant's files from it (audited)."""
    with failing():
        removed = new_lore().unshare_kb(name, tenant, via="cli")
    gone = f"; removed its {len(removed)} file(s)" if removed else ""
    console.print(f"{name}: no longer shared with {tenant}{gone}")


def audit(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's entries.")] = None,
    kb: Annotated[str | None, typer.Option("--kb", help="Only this knowledge base.")] = None,
    limit: Annotated[int, typer.Option(help="Newest entries to show.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """The audit log: activations, rollbacks, builds, deletes, shares and key changes, newest first."""
    with failing():
        entries = new_lore().catalog.audit_log(tenant, kb, limit)
    if as_json:
        print(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    table = Table("at", "action", "kb", "target", "tenant", "key")
    for e in entries:
        table.add_row(
            e.at.strftime("%Y-%m-%d %H:%M:%S"), e.action, e.kb or "", e.target, e.tenant_id, e.key_id or "cli"
        )
    console.print(table)


MAX_KEY_DAYS = 3650  # as the API's `expires_in_days`
_DURATION = re.compile(r"(?P<n>\d+)\s*(?P<unit>[hdw])", re.IGNORECASE)
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}


def key_expiry(value: str, now: datetime | None = None) -> datetime:
    """When a key given `--expires VALUE` stops working (UTC): a duration ("12h", "30d", "8w") from now, a
    date (valid through that day, UTC) or an ISO date and time (UTC unless it names its offset)."""
    now = now or datetime.now(UTC)
    text = value.strip()
    if m := _DURATION.fullmatch(text):
        at = now + timedelta(hours=int(m["n"]) * _UNIT_HOURS[m["unit"].lower()])
    else:
        try:
            at = (
                datetime.combine(date.fromisoformat(text) + timedelta(days=1), time(), UTC)
                if len(text) == 10
                else datetime.fromisoformat(text)
            )
        except ValueError:
            raise typer.BadParameter(
                f"{value!r}: give a duration (12h, 30d, 8w), a date (2026-12-31) or an ISO date and time"
            ) from None
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
    if at <= now:
        raise typer.BadParameter(f"{value!r}: {at:%Y-%m-%d %H:%M} UTC has passed")
    if at > now + timedelta(days=MAX_KEY_DAYS):
        raise typer.BadParameter(f"{value!r}: at most {MAX_KEY_DAYS} days from now")
    return at.astimezone(UTC)
