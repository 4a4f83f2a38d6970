"""`lore` commands: knowledge bases, ingest, search, demo."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from lore.cli import remote
from lore.cli.common import catalog_missing, new_lore, no_kbs_yet, require_catalog
from lore.cli.lazy import SERVER_HINT, lazy_group, server_missing, subcommand_args
from lore.cli.render import fail, print_report, where
from lore.errors import LoreError
from lore.ingest.files import discover

if TYPE_CHECKING:
    from lore.app.searching import SearchResult
    from lore.engine import Lore
    from lore.ingest.pipeline import IngestReport

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
    **{
        name: f"lore.cli.versions:{name}"
        for name in (
            "build",
            "versions",
            "diff",
            "activate",
            "rollback",
            "report",
            "gc",
            "unlock",
            "calibrate",
        )
    },
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
    if remote.connection.server or ctx.invoked_subcommand in ("create", "list") or not _runs(ctx):
        return
    require_catalog()


def _runs(ctx: typer.Context) -> bool:
    """Whether the subcommand will run (not just print its help or complete a word)."""
    return not ctx.resilient_parsing and not {"--help", "-h"} & set(subcommand_args(ctx))


def _lore() -> Lore:
    return new_lore()


@kb_app.command("create")
def kb_create(
    name: str,
    description: Annotated[str, typer.Option(help="What the KB holds.")] = "",
    tenant: Annotated[
        str, typer.Option(help="Tenant that owns the KB (others see it only when shared: lore kb share).")
    ] = "default",
) -> None:
    """Create a knowledge base owned by a tenant, bound to the configured embedder and store."""
    try:
        if (c := remote.client()) is not None:
            kb_remote = c.create_kb(name, description)
            console.print(f"created [bold]{kb_remote.name}[/] ({kb_remote.embedding_model}) on {c.base_url}")
            return
        kb = _lore().create_kb(name, description, owner_tenant=tenant)
    except LoreError as exc:
        fail(exc)
    console.print(
        f"created [bold]{kb.name}[/] ({kb.embedding_model}, {kb.embedding_dim}-d, {kb.store_backend}), "
        f"owned by tenant {kb.owner_tenant!r}"
    )


@kb_app.command("list")
def kb_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List knowledge bases."""
    if (c := remote.client()) is not None:
        try:
            return remote.kb_list(c, as_json)
        except LoreError as exc:
            fail(exc)
    from lore.config import load_settings

    try:
        settings = load_settings()
    except LoreError as exc:
        fail(exc)
    if catalog_missing(settings):  # nothing to list, and listing creates nothing
        if as_json:
            print("[]")
        err.print(no_kbs_yet(settings), soft_wrap=True)
        return
    lore = _lore()
    kbs = lore.catalog.list_kbs()
    if as_json:
        rows = [
            {
                "name": k.name,
                "owner": k.owner_tenant,
                "embedding_model": k.embedding_model,
                "embedding_dim": k.embedding_dim,
                "store_backend": k.store_backend,
                "chunks": lore.catalog.count_chunks(k.id),
                "created_at": k.created_at.isoformat(),
            }
            for k in kbs
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table("name", "owner", "embedding model", "store", "files", "chunks", "created")
    for k in kbs:
        files = len(lore.catalog.list_files(k.id, "ingested"))
        table.add_row(
            k.name,
            k.owner_tenant or "(none: lore kb owner)",
            k.embedding_model,
            k.store_backend,
            str(files),
            str(lore.catalog.count_chunks(k.id)),
            k.created_at.strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)


@kb_app.command("delete")
def kb_delete(name: str, yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False) -> None:
    """Delete a knowledge base with everything it holds: index, uploads, reports, edits, jobs."""
    if not yes and not typer.confirm(f"Delete knowledge base {name!r} and its index?"):
        raise typer.Exit(1)
    try:
        if (c := remote.client()) is not None:
            c.delete_kb(name)
        else:
            _lore().delete_kb(name, via="cli")  # everything it holds, audited as its owner tenant
    except LoreError as exc:
        fail(exc)
    console.print(f"deleted {name}")


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
    from lore.cli.web import fetch_sources, is_url
    from lore.ingest.pipeline import IngestReport

    inputs = paths or []
    files = [Path(p) for p in inputs if not is_url(p)]
    try:
        if not inputs and not sitemap:
            raise LoreError("give files, folders or URLs to ingest, or --sitemap URL")
        if (
            c := remote.client()
        ) is not None:  # files uploaded, then indexed; web pages crawled by the server
            report = remote.ingest(c, kb, files) if files else IngestReport()
            urls = [p for p in inputs if is_url(p)]
            report.files += remote.ingest_web(c, kb, urls, sitemap, prefix, max_pages).files
        else:
            from lore.cli.progress import ingest_progress, stop_on_signals

            lore = _lore()
            lore.catalog.get_kb(kb)
            urls = [p for p in inputs if is_url(p)]
            sources = (
                fetch_sources(lore, kb, urls, sitemap, prefix, max_pages, console) if urls or sitemap else []
            )
            found = [*discover(files), *sources]
            with stop_on_signals() as stop, ingest_progress(console, len(found), stop) as progress:
                try:
                    report = lore.ingest(kb, [], progress, sources=found)
                finally:
                    lore.close()  # every finished file is committed; a Milvus Lite store flushes
            if report.stopped:
                _stopped(report, stop.code)
    except LoreError as exc:
        fail(exc)
    print_report(report)
    if report.count("failed"):
        raise typer.Exit(1)


def _stopped(report: IngestReport, code: int) -> NoReturn:
    """Say what a stopped ingest kept and how to resume, then exit at once with `code` (130 on Ctrl-C)."""
    print_report(report)
    kept = report.count("ingested") + report.count("skipped")
    console.print(
        f"[yellow]interrupted[/]: {kept} files are in the knowledge base ({report.chunks} chunks, searchable "
        f"now); {len(report.unfinished)} not ingested, {report.unfinished[0]!r} was in progress and is "
        "redone next time.\nTo resume, run the same `lore ingest` again: files already ingested and "
        "unchanged are skipped."
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not waiting for the abandoned worker threads (a batch inside the embedding engine)


@app.command()
def search(
    query: str,
    kb: KbOption,
    mode: Annotated[
        str | None, typer.Option(help="dense | bm25 | hybrid (default: [retrieve] mode).")
    ] = None,
    k: Annotated[int, typer.Option("-k", help="Hits to return.")] = 10,
    recall_k: Annotated[
        int | None, typer.Option(help="Candidates recalled before rerank/cut (default: [retrieve]).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    version: Annotated[
        int | None, typer.Option("--version", help="Search this version (default: active).")
    ] = None,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Re-score candidates with [rerank] provider (default: as configured).",
        ),
    ] = None,
    rerank_k: Annotated[
        int | None, typer.Option(help="Candidates re-scored (default: [rerank] rerank_k).")
    ] = None,
) -> None:
    """Search a knowledge base (dense, BM25 or hybrid), then rerank the top candidates."""
    if mode not in (None, "dense", "bm25", "hybrid"):
        fail(LoreError(f"--mode: must be dense, bm25 or hybrid, not {mode!r}"))
    asked: dict[str, Any] = {"mode": mode, "top_k": k, "version": version, "rerank": rerank}
    asked["recall_k"] = recall_k
    asked["rerank_k"] = rerank_k
    try:
        if (c := remote.client()) is not None:
            found = c.search(kb, query, **asked)
            shown: dict[str, Any] = {"version": found.version, "mode": found.mode, "rerank": found.rerank}
            hits = [h.raw for h in found.hits]
        else:
            result = _search_locally(kb, query, asked)
            shown = {"version": result.version, "mode": result.mode, "rerank": result.rerank}
            hits = [h.model_dump() for h in result.hits]
    except LoreError as exc:
        fail(exc)
    if as_json:
        print(json.dumps({"query": query, "kb": kb, **shown, "hits": hits}, ensure_ascii=False, indent=2))
        return
    table = Table("#", "score", "where", "text")
    for i, h in enumerate(hits, 1):
        table.add_row(str(i), f"{h['score']:.4f}", where(h), str(h["text"])[:160].replace("\n", " "))
    console.print(table)
    if info := shown["rerank"]:
        console.print(
            f"rerank: {info['provider']}, {info['candidates']} candidates, {info['ms']} ms"
            + (f" ({info['note']})" if info.get("note") else "")
        )


def _search_locally(kb: str, query: str, asked: dict[str, Any]) -> SearchResult:
    """The application layer's search as the local operator (options are checked as the API checks them)."""
    from pydantic import ValidationError

    from lore.app import searching
    from lore.app.requests import SearchRequest

    try:
        request = SearchRequest(kb=kb, query=query, **asked)
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise LoreError(problems.replace("_", "-").replace("--top-k", "-k")) from None
    return searching.search(_lore(), None, request)


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
