"""The `Backend` over a `lore serve` (`lore --server URL --key KEY …`, or LORE_SERVER / LORE_API_KEY): every
call through `lore.client.LoreClient`, bounded by the key as the API bounds it. Imports no engine (a
client-only install runs it)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from lore.cli import remote
from lore.cli.backend import (
    AskOptions,
    BuildOptions,
    Built,
    Events,
    FileDeletion,
    FileListing,
    FileOutcome,
    Found,
    IngestOptions,
    KbRow,
    Outcome,
    SearchOptions,
    VersionRow,
    not_on_server,
)
from lore.cli.texts import pages_text, time_left
from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.client import AskEvent, IngestResult, KnowledgeBase, LoreClient, Version

console = Console()
_FILE_FIELDS = ("name", "status", "chunks", "documents", "ocr_pages", "error", "note")


def outcome(result: IngestResult) -> Outcome:
    """The server's per-file outcomes as the CLI's result type."""
    files = [
        FileOutcome(**{k: f.raw[k] for k in _FILE_FIELDS if f.raw.get(k) is not None}) for f in result.files
    ]
    return Outcome(files, list(result.refused))


def _version(v: Version, active: bool | None = None) -> VersionRow:
    return VersionRow.of(v.raw, v.status, v.active if active is None else active, v.created_at)


class HttpBackend:
    """Commands run by a `lore serve`, as its API key."""

    def __init__(self, client: LoreClient) -> None:
        self.client = client
        self.where = f" on {client.base_url}"

    def close(self) -> None:
        self.client.close()

    @functools.cached_property
    def tenant(self) -> str:
        """The key's tenant (it owns what the key creates)."""
        return str(self.client.me()["tenant"])

    # --- knowledge bases and files ----------------------------------------------------------------------

    def _row(self, kb: KnowledgeBase) -> KbRow:
        raw = kb.raw
        return KbRow(
            kb.name,
            kb.description,
            self.tenant if raw.get("owner") else None,  # a KB shared with the key's tenant: not said
            kb.embedding_model,
            int(raw.get("embedding_dim", 0)),
            str(raw.get("store_backend", "")),
            kb.files,
            kb.chunks,
            kb.versioned,
            kb.active_version,
            str(raw.get("created_at", "")),
        )

    def create_kb(self, name: str, description: str, tenant: str | None) -> KbRow:
        if tenant is not None:
            raise not_on_server("--tenant", "a server creates the knowledge base for the API key's tenant")
        return self._row(self.client.create_kb(name, description))

    def list_kbs(self) -> tuple[list[KbRow], str | None]:
        return [self._row(kb) for kb in self.client.list_kbs()], None

    def delete_kb(self, name: str) -> None:
        self.client.delete_kb(name)

    def list_files(self, kb: str) -> FileListing:
        listed = self.client.list_files(kb)
        return FileListing(list(listed["uploads"]), list(listed["indexed"]))

    def delete_file(self, kb: str, name: str) -> FileDeletion:
        done = self.client.delete_file(kb, name)
        return FileDeletion(done["file"], done["upload"], done["indexed"], done.get("note"))

    # --- ingest and builds ------------------------------------------------------------------------------

    def _upload(self, kb: str, paths: list[Path]) -> list[str]:
        """Upload local files with a byte progress bar; the names the server stored."""
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

        from lore.client.calls import local_files

        files = local_files(list(paths))
        columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn())
        with Progress(*columns, console=console) as bars:
            task = bars.add_task("uploading", total=sum(f.stat().st_size for f in files))
            done: dict[str, int] = {}

            def progress(name: str, sent: int, _size: int) -> None:
                done[name] = sent
                bars.update(task, completed=sum(done.values()), description=f"uploading {name[-40:]}")

            uploaded = self.client.upload(kb, list(files), progress)
        return [u.name for u in uploaded]

    def ingest(self, options: IngestOptions) -> Outcome:
        """Files uploaded, then indexed; web pages crawled by the server (inside its `api.web_sources`)."""
        done = Outcome()
        if options.files:
            names = self._upload(options.kb, options.files)
            with console.status(f"indexing {len(names)} file(s) on the server…"):
                done.files += outcome(self.client.ingest(options.kb, names)).files
        targets = [(u, False) for u in options.urls] + ([(options.sitemap, True)] if options.sitemap else [])
        pages = unchanged = 0
        for url, is_sitemap in targets:
            with console.status(f"the server is crawling {url[-60:]}…"):
                result = self.client.ingest_url(
                    options.kb, url, sitemap=is_sitemap, prefix=options.prefix, max_pages=options.max_pages
                )
            crawl = outcome(result)
            done.files += crawl.files
            done.refused += crawl.refused
            pages, unchanged = pages + len(crawl.files), unchanged + result.unchanged
        if targets:
            done.web = f"{pages} pages fetched ({unchanged} not modified since the last crawl)"
        return done

    def build(self, options: BuildOptions) -> Built:
        """The sources uploaded, then built on the server (a job, followed to its end)."""
        names = self._upload(options.kb, options.sources)
        with console.status("building…") as status:
            now = {"file": "building…"}

            def progress(event: AskEvent) -> None:
                d = event.data
                if d.get("stage") == "file":
                    of = f"{pages_text(d['pages'])}, " if d.get("pages") else ""
                    now["file"] = f"embedding {d['file'][-40:]} ({of}{d['chunks']} chunks)"
                if d.get("stage") in ("file", "embedded", "file_done"):  # the server's time left, when known
                    status.update(now["file"] + (f", {time_left(d['eta_s'])}" if d.get("eta_s") else ""))
                if d.get("stage") == "file_done":
                    console.print(f"[dim]{d['file']}: {d['status']}[/]")

            built = self.client.build(
                options.kb,
                names,
                description=options.description,
                activate=options.activate,
                quality_gate=options.quality_gate,
                force=options.force,
                incremental_from=options.incremental_from,
                mode="exact",
                allow_removal=options.remove_missing,
                progress=progress,
            )
        if built.version is None:
            raise LoreError("the server's build result names no version")
        return Built(outcome(built), _version(built.version), None, built.gate_reasons, None)

    # --- versions ---------------------------------------------------------------------------------------

    def versions(self, kb: str) -> list[VersionRow]:
        return [_version(v) for v in self.client.versions(kb)]

    def activate(self, kb: str, seq: int, reason: str) -> VersionRow:
        return _version(self.client.activate(kb, seq, reason), active=True)

    def rollback(self, kb: str, reason: str) -> VersionRow:
        return _version(self.client.rollback(kb, reason), active=True)

    # --- search and answers -----------------------------------------------------------------------------

    def search(self, options: SearchOptions) -> Found:
        o = options
        found = self.client.search(
            o.kb,
            o.query,
            top_k=o.top_k,
            mode=o.mode,
            version=o.version,
            rerank=o.rerank,
            recall_k=o.recall_k,
            rerank_k=o.rerank_k,
        )
        return Found(found.version, found.mode, found.rerank, [h.raw for h in found.hits])

    def ask(self, options: AskOptions) -> Events:
        """The server's answer stream as (event, data) pairs, as the in-process ask gives them."""
        o = options
        if o.tenant is not None or o.roles is not None or o.datasets is not None:
            raise remote.local_only("--tenant/--roles/--datasets")
        if o.kb is None and o.scenario is None:
            raise LoreError("--kb: required unless --scenario is given")
        asked: dict[str, Any] = {"kb": None if o.scenario else o.kb, "scenario": o.scenario, "top_k": o.top_k}
        asked |= {"version": o.version, "source": o.source, "mode": o.mode, "rewrite": o.rewrite}
        asked["session_id"] = o.session
        stream = self.client.ask_stream(o.question, **{k: v for k, v in asked.items() if v is not None})
        try:
            for e in stream:
                if e.event != "start":
                    yield e.event, e.data
                elif o.kb is not None and (target := e.data.get("kb")) != o.kb:
                    raise LoreError(
                        f"scenario {o.scenario!r} answers from knowledge base {target!r}, not {o.kb!r}"
                    )
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
