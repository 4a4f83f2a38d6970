"""`lore serve`, `lore keys create/revoke/list`, `lore badcases export`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.common import JsonOption, new_lore
from lore.cli.render import fail, split_list
from lore.errors import LoreError

if TYPE_CHECKING:
    pass

console = Console()
keys_app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)
badcases_app = typer.Typer(help="Answers people marked thumbs-down, as an eval set.", no_args_is_help=True)


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: api.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: api.port).")] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Worker processes (default: api.workers). More than one "
            "needs \\[redis] url for global rate limits and shared caches."
        ),
    ] = None,
) -> None:
    """Run the HTTP service and web UI after the preflight checks (no degraded mode).

    SIGTERM stops accepting connections and gives open answer streams `api.shutdown_grace_s` to finish.
    """
    import uvicorn

    from lore.api import create_app
    from lore.api.logs import configure_logging
    from lore.api.preflight import preflight

    lore = new_lore()
    try:
        for line in preflight(lore):
            if line.startswith("warning:"):
                console.print(f"[yellow]warning[/] {line.removeprefix('warning:').strip()}")
            else:
                console.print(f"[green]ok[/] {line}")
    except LoreError as exc:
        fail(exc)
    settings = lore.settings
    api, n = settings.api, workers or settings.api.workers
    if n > 1 and not settings.redis.url:
        console.print(
            f"[yellow]warning[/] {n} workers without [redis] url: rate limits, caches and deep-mode "
            "sessions are per process"
        )
    log_config = (
        configure_logging(settings.log.json_lines, settings.log.level) or uvicorn.config.LOGGING_CONFIG
    )
    options: dict[str, Any] = {
        "host": host or api.host,
        "port": port or api.port,
        "log_level": settings.log.level.lower(),
        "log_config": log_config,
        "timeout_graceful_shutdown": api.shutdown_grace_s,
    }
    console.print(
        f"serving on http://{options['host']}:{options['port']}/" + (f" ({n} workers)" if n > 1 else "")
    )
    if n > 1:  # each worker makes its own app from the same settings; preflight already passed here
        lore.close()
        _multiprocess_metrics()
        # A worker loads the models before it answers the supervisor's health pings: give it time.
        uvicorn.run(
            "lore.api.app:serve_app", factory=True, workers=n, timeout_worker_healthcheck=120, **options
        )
        return
    app = create_app(lore, run_preflight=False)  # just ran
    try:
        uvicorn.run(app, **options)
    finally:
        lore.close()


def worker(
    once: Annotated[bool, typer.Option("--once", help="Run at most one queued job, then exit.")] = False,
) -> None:
    """Run the build and crawl jobs the API queues (set worker.in_process = false on the API then); SIGTERM or
    Ctrl-C stops after the running build."""
    import signal
    import threading

    from lore.api.jobs import Worker

    try:
        lore = new_lore()
        runner = Worker(lore)
        lore.catalog.list_kbs()  # the catalog opens and its schema is at head, or say why not
    except LoreError as exc:
        fail(exc)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    console.print(f"worker {runner.name}: waiting for build and crawl jobs (lease {runner.lease_s:g} s)")
    try:
        if once:
            job = runner.run_once()
            console.print("no job queued" if job is None else f"job {job.id}: {job.status.value}")
        else:
            runner.loop(stop)
    finally:
        lore.close()


def _multiprocess_metrics() -> None:
    """Workers write Prometheus samples to a shared folder so /metrics adds up every process."""
    import os
    import tempfile

    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="lore-metrics-")


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="Tenant the key's requests are bound to.")],
    roles: Annotated[
        str,
        typer.Option(
            help="Comma-separated roles (e.g. admin,staff). 'admin' changes KBs "
            "holding only its tenant's documents and reads 'restricted' chunks; "
            "'platform-admin' (with 'admin') also changes KBs shared with other "
            "tenants, never another tenant's files."
        ),
    ] = "",
    datasets: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated datasets (default: all of the tenant's); a key with several "
            "names the one each write goes to."
        ),
    ] = None,
    name: Annotated[str, typer.Option(help="A label to recognise the key by.")] = "",
    expires: Annotated[
        str | None,
        typer.Option(
            help="When the key stops working: a duration (12h, 30d, 8w), a date (valid through it, UTC) "
            "or an ISO date and time (default: never)."
        ),
    ] = None,
) -> None:
    """Create an API key; the key itself is printed alone on the last line (it is stored hashed)."""
    from lore.cli.access import key_expiry

    until = None if expires is None else key_expiry(expires)
    try:
        catalog = new_lore().catalog
        with catalog.transaction():
            key, secret = catalog.create_api_key(
                tenant, split_list(roles) or [], split_list(datasets), name, until
            )
            catalog.audit(
                "key_create",
                tenant=key.tenant_id,
                key_id=None,
                target=key.id,
                roles=key.roles,
                datasets=key.datasets,
                expires_at=key.expires_at.isoformat() if key.expires_at else None,
                via="cli",
            )
    except LoreError as exc:
        fail(exc)
    console.print(
        f"created key {key.id} for tenant {key.tenant_id!r}, roles {key.roles}, "
        f"datasets {key.datasets or 'all'}, expires {_stamp(key.expires_at) or 'never'}; "
        "store it now, it is not shown again:"
    )
    print(secret)


@keys_app.command("revoke")
def keys_revoke(key: Annotated[str, typer.Argument(help="Key id, prefix or the key itself.")]) -> None:
    """Revoke an API key: its requests get 401 from now on."""
    try:
        catalog = new_lore().catalog
        with catalog.transaction():
            revoked = catalog.revoke_api_key(key)
            catalog.audit("key_revoke", tenant=revoked.tenant_id, key_id=None, target=revoked.id, via="cli")
    except LoreError as exc:
        fail(exc)
    console.print(f"revoked key {revoked.id} ({revoked.prefix}…, tenant {revoked.tenant_id!r})")


@keys_app.command("list")
def keys_list(as_json: JsonOption = False) -> None:
    """List API keys (never the keys themselves) with when each expires and was last used (UTC)."""
    keys = new_lore().catalog.list_api_keys()
    if as_json:
        from lore.app.results import ApiKeyInfo

        print(json.dumps([ApiKeyInfo.of(k).model_dump() for k in keys], ensure_ascii=False, indent=2))
        return
    table = Table("id", "prefix", "tenant", "roles", "datasets", "created", "expires", "last used", "revoked")
    now = datetime.now(UTC)
    for k in keys:
        expired = " (expired)" if k.expired(now) else ""
        table.add_row(
            k.id,
            k.prefix + "…",
            k.tenant_id,
            ",".join(k.roles),
            ",".join(k.datasets or ["*"]),
            _stamp(k.created_at),
            (_stamp(k.expires_at) + expired) if k.expires_at else "never",
            _stamp(k.last_used_at) or "-",
            _stamp(k.revoked_at),
        )
    console.print(table)


def _stamp(at: datetime | None) -> str:
    """A time as "YYYY-MM-DD hh:mm" UTC ("" for none)."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if at else ""


@badcases_app.command("export")
def badcases_export(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")] = Path("badcases.jsonl"),
    kb: Annotated[str | None, typer.Option("--kb", help="Only this knowledge base.")] = None,
) -> None:
    """Write thumbs-down answers as JSONL: question, the answer given, files it cited, the note."""
    rows = new_lore().catalog.list_feedback(rating=-1, kb=kb)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for f in rows:
            fh.write(json.dumps(f.as_badcase(), ensure_ascii=False) + "\n")
    console.print(f"wrote {len(rows)} bad case(s) to {out}")
