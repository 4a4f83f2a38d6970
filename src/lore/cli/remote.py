"""Remote mode: `lore --server URL --key KEY …` (or LORE_SERVER / LORE_API_KEY) runs the commands through
`lore.client.LoreClient` against a `lore serve`, printing what the local commands print."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from lore.cli.render import where
from lore.errors import LoreError

if TYPE_CHECKING:  # loaded by the functions that use them: `lore --help` imports none of this
    from lore.client import AskEvent, IngestResult, LoreClient
    from lore.ingest.pipeline import IngestReport

console = Console()


@dataclass
class Connection:
    """The server and key given to `lore` (None: run locally)."""

    server: str | None = None
    key: str | None = None


connection = Connection()
# What runs against a server; `serve`, `mcp` and `keys` run where the service's data is, the rest only
# locally.
COMMANDS = {
    "kb",
    "files",
    "ingest",
    "build",
    "search",
    "ask",
    "versions",
    "activate",
    "rollback",
    "serve",
    "mcp",
    "keys",
}


def client() -> LoreClient | None:
    """A client for the configured server, or None in local mode."""
    if not connection.server:
        return None
    from lore.client import LoreClient

    return LoreClient(connection.server, connection.key)


def local_only(option: str) -> LoreError:
    return LoreError(
        f"{option}: not available against a server (the API key sets tenant, roles and datasets)"
    )


def kb_list(c: LoreClient, as_json: bool) -> None:
    kbs = c.list_kbs()
    if as_json:
        print(json.dumps([k.raw for k in kbs], ensure_ascii=False, indent=2))
        return
    table = Table("name", "embedding model", "files", "chunks", "active version", "description")
    for k in kbs:
        table.add_row(
            k.name,
            k.embedding_model,
            str(k.files),
            str(k.chunks),
            "-" if k.active_version is None else str(k.active_version),
            k.description,
        )
    console.print(table)


def report_of(result: IngestResult) -> IngestReport:
    """The server's per-file outcomes as the local report type (one table for both modes)."""
    from lore.ingest.pipeline import FileResult, IngestReport

    names = {f.name for f in fields(FileResult)}
    return IngestReport([FileResult(**{k: v for k, v in f.raw.items() if k in names}) for f in result.files])


def upload(c: LoreClient, kb: str, paths: list[Path]) -> list[str]:
    """Upload local files with a byte progress bar; the names the server stored."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    from lore.client.calls import local_files

    files = local_files(list(paths))
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=console) as bars:
        task = bars.add_task("uploading", total=sum(f.stat().st_size for f in files))
        done: dict[str, int] = {}

        def progress(name: str, sent: int, _size: int) -> None:
            done[name] = sent
            bars.update(task, completed=sum(done.values()), description=f"uploading {name[-40:]}")

        uploaded = c.upload(kb, list(files), progress)
    return [u.name for u in uploaded]


def ingest(c: LoreClient, kb: str, paths: list[Path]) -> IngestReport:
    names = upload(c, kb, paths)
    with console.status(f"indexing {len(names)} file(s) on the server…"):
        return report_of(c.ingest(kb, names))


def ingest_web(
    c: LoreClient, kb: str, urls: list[str], sitemap: str | None, prefix: str | None, max_pages: int
) -> IngestReport:
    """Have the server crawl each URL (and the sitemap) inside its `api.web_sources`; refusals printed."""
    from lore.ingest.pipeline import IngestReport

    report = IngestReport()
    refused: list[tuple[str, str]] = []
    targets = [(u, False) for u in urls] + ([(sitemap, True)] if sitemap else [])
    for url, is_sitemap in targets:
        with console.status(f"the server is crawling {url[-60:]}…"):
            result = c.ingest_url(kb, url, sitemap=is_sitemap, prefix=prefix, max_pages=max_pages)
        report.files += report_of(result).files
        refused += result.refused
    if refused:
        table = Table("URL not fetched", "reason", title="web")
        for url, reason in refused:
            table.add_row(url, reason)
        console.print(table)
    return report


def build(c: LoreClient, kb: str, sources: list[Path], **options: Any) -> IngestResult:
    names = upload(c, kb, sources)
    with console.status("building…") as status:

        def progress(event: AskEvent) -> None:
            d = event.data
            if d.get("stage") == "file":
                status.update(f"embedding {d['file'][-40:]} ({d['chunks']} chunks)")
            elif d.get("stage") == "file_done":
                console.print(f"[dim]{d['file']}: {d['status']}[/]")

        return c.build(kb, names, progress=progress, **options)


def search(c: LoreClient, kb: str, query: str, mode: str, k: int, version: int | None, as_json: bool) -> None:
    result = c.search(kb, query, top_k=k, mode=mode, version=version)
    if as_json:
        print(
            json.dumps(
                {
                    "query": query,
                    "kb": kb,
                    "mode": mode,
                    "version": result.version,
                    "hits": [h.raw for h in result.hits],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    table = Table("#", "score", "where", "text")
    for i, h in enumerate(result.hits, 1):
        table.add_row(str(i), f"{h.score:.4f}", where(h.raw), h.text[:160].replace("\n", " "))
    console.print(table)


def ask_events(c: LoreClient, question: str, **options: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server's answer stream as (event, data) pairs, as the local ask gives them (`start` left out)."""
    for e in c.ask_stream(question, **{k: v for k, v in options.items() if v is not None}):
        if e.event != "start":
            yield e.event, e.data


def version_rows(c: LoreClient, kb: str) -> list[dict[str, Any]]:
    """Versions in the shape `lore versions --json` prints locally."""
    skip = {"status", "created_at", "finished_at", "activated_at", "embedding_model", "chunk_schema"}
    return [
        {
            "seq": v.seq,
            "status": v.status.upper(),
            "active": v.active,
            "created": v.created_at[:19],
            **{k: x for k, x in v.raw.items() if k not in skip and k != "seq" and k != "active"},
        }
        for v in c.versions(kb)
    ]
