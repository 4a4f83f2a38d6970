"""`lore` commands: knowledge bases, ingest, search, demo."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli import remote
from lore.cli.backend import IngestOptions, SearchOptions
from lore.cli.backends import running
from lore.cli.common import require_catalog
from lore.cli.lazy import SERVER_HINT, lazy_group, server_missing, subcommand_args
from lore.cli.render import fail, print_report, where
from lore.errors import LoreError

# Commands whose modules load the engine (PyMuPDF, ONNX Runtime, LightGBM, LangGraph…) are imported only
# when they run; `lore --help` reads their help from the source.
_COMMANDS = {
    "ask": "lore.cli.ask:ask",
    "serve": "lore.cli.service:serve",
    "worker": "lore.cli.service:worker",
    "eval": "lore.cli.evaluate:eval_command",
    "mcp": "lore.cli.mcp:mcp",
    "demo": "lore.cli.demo:demo",
    "info": "lore.cli.info:info",
    "plugins": "lore.cli.plugins:plugins",
    "backup": "lore.cli.backup:backup",
    "restore": "lore.cli.backup:restore",
    "audit": "lore.cli.access:audit",
    **{name: f"lore.cli.releases:{name}" for name in ("build", "versions", "activate", "rollback")},
    **{name: f"lore.cli.versions:{name}" for name in ("diff", "report", "gc", "unlock", "calibrate")},
    "scenario": "lore.cli.scenario:scenario_app",
    "keys": "lore.cli.service:keys_app",
    "db": "lore.cli.db:db_app",
    "badcases": "lore.cli.service:badcases_app",
    "files": "lore.cli.files:files_app",
}
_KB_COMMANDS = {
    "share": "lore.cli.access:kb_share",
    "unshare": "lore.cli.access:kb_unshare",
    "owner": "lore.cli.access:kb_owner",
}
# Local commands that read or change existing knowledge bases: without a catalog they say so and create
# nothing (every `kb` command but `create` too).
NEEDS_CATALOG = {
    "ask",
    "search",
    "ingest",
    "build",
    "versions",
    "activate",
    "rollback",
    "diff",
    "report",
    "gc",
    "unlock",
    "calibrate",
    "audit",
    "eval",
    "files",
    "backup",
}

app = typer.Typer(
    cls=lazy_group(_COMMANDS),
    help="Lore: enterprise knowledge-base search and answers, offline by default.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
kb_app = typer.Typer(
    cls=lazy_group(_KB_COMMANDS), help="Create, list and delete knowledge bases.", no_args_is_help=True
)
app.add_typer(kb_app, name="kb")
console = Console()
err = Console(stderr=True)

KbOption = Annotated[str, typer.Option("--kb", help="Knowledge base name.")]


@app.callback()
def _connection(
    ctx: typer.Context,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            envvar="LORE_SERVER",
            show_envvar=True,
            help="Run against this `lore serve` (URL) instead of locally.",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", envvar="LORE_API_KEY", show_envvar=True, help="API key for --server."),
    ] = None,
) -> None:
    """Lore: enterprise knowledge-base search and answers, offline by default."""
    remote.connection.server, remote.connection.key = server, key
    if server and ctx.invoked_subcommand not in remote.COMMANDS:
        fail(
            LoreError(
                f"lore {ctx.invoked_subcommand}: runs locally only; drop --server (or unset LORE_SERVER)"
            )
        )
    if not server and ctx.invoked_subcommand in NEEDS_CATALOG and _runs(ctx):
        require_catalog()


@kb_app.callback()
def _kb(ctx: typer.Context) -> None:
    """Create, list and delete knowledge bases."""
    if remote.connection.server and ctx.invoked_subcommand in _KB_COMMANDS and _runs(ctx):
        name = f"lore kb {ctx.invoked_subcommand}"
        fail(LoreError(f"{name}: runs locally only; drop --server (or unset LORE_SERVER)"))
    if remote.connection.server or ctx.invoked_subcommand in ("create", "list") or not _runs(ctx):
        return
    require_catalog()


def _runs(ctx: typer.Context) -> bool:
    """Whether the subcommand will run (not just print its help or complete a word)."""
    return not ctx.resilient_parsing and not {"--help", "-h"} & set(subcommand_args(ctx))


@kb_app.command("create")
def kb_create(
    name: str,
    description: Annotated[str, typer.Option(help="What the KB holds.")] = "",
    tenant: Annotated[
        str | None,
        typer.Option(
            help="Tenant that owns the KB (others see it only when shared: lore kb share); default: "
            "'default' (against a server: the key's tenant)."
        ),
    ] = None,
) -> None:
    """Create a knowledge base owned by a tenant, bound to the configured embedder and store."""
    with running() as backend:
        kb = backend.create_kb(name, description, tenant)
    console.print(
        f"created [bold]{kb.name}[/] ({kb.embedding_model}, {kb.embedding_dim}-d, {kb.store_backend}), "
        f"owned by tenant {kb.owner!r}{backend.where}"
    )


@kb_app.command("list")
def kb_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List knowledge bases."""
    with running() as backend:
        kbs, note = backend.list_kbs()
    if as_json:
        print(json.dumps([asdict(k) for k in kbs], ensure_ascii=False, indent=2))
    elif kbs or not note:
        table = Table("name", "owner", "embedding model", "store", "files", "chunks", "active", "created")
        for k in kbs:
            table.add_row(
                k.name,
                k.owner or "(none: lore kb owner)",
                k.embedding_model,
                k.store_backend,
                str(k.files),
                str(k.chunks),
                "-" if k.active_version is None else str(k.active_version),
                k.created_at[:16].replace("T", " "),
            )
        console.print(table)
    if note:
        err.print(note, soft_wrap=True)


@kb_app.command("delete")
def kb_delete(name: str, yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False) -> None:
    """Delete a knowledge base with everything it holds: index, uploads, reports, edits, jobs."""
    if not yes and not typer.confirm(f"Delete knowledge base {name!r} and its index?"):
        raise typer.Exit(1)
    with running() as backend:
        backend.delete_kb(name)
    console.print(f"deleted {name}")


def is_url(value: str) -> bool:
    """Whether a command-line input names a web page rather than a path."""
    return value.startswith(("http://", "https://"))


@app.command()
def ingest(
    kb: KbOption,
    paths: Annotated[list[str] | None, typer.Argument(help="Files, folders and http(s) URLs.")] = None,
    sitemap: Annotated[str | None, typer.Option(help="Ingest the pages this sitemap lists.")] = None,
    prefix: Annotated[
        str | None, typer.Option(help="Follow only links starting with this (default: the URL's folder).")
    ] = None,
    max_pages: Annotated[int, typer.Option(help="Stop a crawl after this many pages.")] = 100,
) -> None:
    """Ingest files, folders and web pages into a knowledge base (bad ones are reported, the rest go in)."""
    inputs = paths or []
    if not inputs and not sitemap:
        fail(LoreError("give files, folders or URLs to ingest, or --sitemap URL"))
    files = [Path(p) for p in inputs if not is_url(p)]
    urls = [p for p in inputs if is_url(p)]
    with running() as backend:
        done = backend.ingest(IngestOptions(kb, files, urls, sitemap, prefix, max_pages))
    if done.refused:
        table = Table("URL not fetched", "reason", title="web")
        for url, reason in done.refused:
            table.add_row(url, reason)
        console.print(table)
    if done.web:
        console.print(f"web: {done.web}")
    print_report(done)
    if done.count("failed"):
        raise typer.Exit(1)


@app.command()
def search(
    query: str,
    kb: KbOption,
    mode: Annotated[
        str | None, typer.Option(help="dense | bm25 | hybrid (default: \\[retrieve] mode).")
    ] = None,
    k: Annotated[int, typer.Option("-k", help="Hits to return.")] = 10,
    recall_k: Annotated[
        int | None, typer.Option(help="Candidates recalled before rerank/cut (default: \\[retrieve]).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    version: Annotated[
        int | None, typer.Option("--version", help="Search this version (default: active).")
    ] = None,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Re-score candidates with \\[rerank] provider (default: as configured).",
        ),
    ] = None,
    rerank_k: Annotated[
        int | None, typer.Option(help="Candidates re-scored (default: \\[rerank] rerank_k).")
    ] = None,
) -> None:
    """Search a knowledge base (dense, BM25 or hybrid), then rerank the top candidates."""
    if mode not in (None, "dense", "bm25", "hybrid"):
        fail(LoreError(f"--mode: must be dense, bm25 or hybrid, not {mode!r}"))
    asked = SearchOptions(kb, query, k, mode, version, rerank, recall_k, rerank_k)
    with running() as backend:
        found = backend.search(asked)
    if as_json:
        shown = {"version": found.version, "mode": found.mode, "rerank": found.rerank}
        print(
            json.dumps({"query": query, "kb": kb, **shown, "hits": found.hits}, ensure_ascii=False, indent=2)
        )
        return
    table = Table("#", "score", "where", "text")
    for i, h in enumerate(found.hits, 1):
        table.add_row(str(i), f"{h['score']:.4f}", where(h), str(h["text"])[:160].replace("\n", " "))
    console.print(table)
    if info := found.rerank:
        console.print(
            f"rerank: {info['provider']}, {info['candidates']} candidates, {info['ms']} ms"
            + (f" ({info['note']})" if info.get("note") else "")
        )


def main() -> None:
    """Entry point that turns unexpected errors into a short message."""
    try:
        app()
    except LoreError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except ModuleNotFoundError:
        if not server_missing():
            raise
        err.print(f"error: {SERVER_HINT}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
