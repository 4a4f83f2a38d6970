"""`lore serve`, `lore keys create/revoke/list`, `lore badcases export`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.render import fail, split_list
from lore.engine import Lore
from lore.errors import LoreError

console = Console()
keys_app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)
badcases_app = typer.Typer(help="Answers people marked thumbs-down, as an eval set.", no_args_is_help=True)


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: api.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: api.port).")] = None,
) -> None:
    """Run the HTTP service and web UI after the preflight checks (no degraded mode)."""
    import uvicorn

    from lore.api import create_app
    from lore.api.preflight import preflight

    lore = Lore()
    try:
        for line in preflight(lore):
            if line.startswith("warning:"):
                console.print(f"[yellow]warning[/] {line.removeprefix('warning:').strip()}")
            else:
                console.print(f"[green]ok[/] {line}")
    except LoreError as exc:
        fail(exc)
    api = lore.settings.api
    app = create_app(lore, run_preflight=False)  # just ran
    console.print(f"serving on http://{host or api.host}:{port or api.port}/")
    try:
        uvicorn.run(app, host=host or api.host, port=port or api.port, log_level="info")
    finally:
        lore.close()


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="Tenant the key's requests are bound to.")],
    roles: Annotated[str, typer.Option(help="Comma-separated roles (e.g. admin,staff). 'admin' changes KBs "
                                       "holding only its tenant's documents and reads 'restricted' chunks; "
                                       "'platform-admin' (with 'admin') also changes KBs shared with other "
                                       "tenants, never another tenant's files.")] = "",
    datasets: Annotated[str | None, typer.Option(help="Comma-separated datasets (default: all of the tenant's); a key with several "
                                                "names the one each write goes to.")]
    = None,
    name: Annotated[str, typer.Option(help="A label to recognise the key by.")] = "",
) -> None:
    """Create an API key; the key itself is printed alone on the last line (it is stored hashed)."""
    try:
        key, secret = Lore().catalog.create_api_key(tenant, split_list(roles) or [], split_list(datasets), name)
    except LoreError as exc:
        fail(exc)
    console.print(f"created key {key.id} for tenant {key.tenant_id!r}, roles {key.roles}, "
                  f"datasets {key.datasets or 'all'}; store it now, it is not shown again:")
    print(secret)


@keys_app.command("revoke")
def keys_revoke(key: Annotated[str, typer.Argument(help="Key id, prefix or the key itself.")]) -> None:
    """Revoke an API key: its requests get 401 from now on."""
    try:
        revoked = Lore().catalog.revoke_api_key(key)
    except LoreError as exc:
        fail(exc)
    console.print(f"revoked key {revoked.id} ({revoked.prefix}…, tenant {revoked.tenant_id!r})")


@keys_app.command("list")
def keys_list() -> None:
    """List API keys (never the keys themselves)."""
    table = Table("id", "prefix", "tenant", "roles", "datasets", "created", "revoked")
    for k in Lore().catalog.list_api_keys():
        table.add_row(k.id, k.prefix + "…", k.tenant_id, ",".join(k.roles), ",".join(k.datasets or ["*"]),
                      k.created_at.strftime("%Y-%m-%d %H:%M"),
                      k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else "")
    console.print(table)


@badcases_app.command("export")
def badcases_export(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")] = Path("badcases.jsonl"),
    kb: Annotated[str | None, typer.Option("--kb", help="Only this knowledge base.")] = None,
) -> None:
    """Write thumbs-down answers as JSONL: question, the answer given, files it cited, the note."""
    rows = Lore().catalog.list_feedback(rating=-1, kb=kb)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for f in rows:
            fh.write(json.dumps(f.as_badcase(), ensure_ascii=False) + "\n")
    console.print(f"wrote {len(rows)} bad case(s) to {out}")
