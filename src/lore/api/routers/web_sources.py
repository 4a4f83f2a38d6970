"""Web pages as sources through the API: crawl a URL (or a sitemap) on the server, inside the
configured allow-list (`api.web_sources`), and index the pages into an unversioned KB for the caller's
tenant."""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.access import check_file_writes, require_kb
from lore.api.deps import Caller, State
from lore.api.routers.ingest import report_json
from lore.errors import LoreError
from lore.ingest.web import WebCrawler, cache_dir, fetch_pages
from lore.ingest.web_guard import WebGuard
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])
_locks: dict[str, threading.Lock] = {}  # one crawl per KB at a time: they share its page cache
_locks_guard = threading.Lock()


class WebSourceBody(BaseModel):
    """A page to crawl from (links followed under `prefix`), or a sitemap whose pages to fetch."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2000, description="Start page, or the sitemap's URL.")
    sitemap: bool = Field(default=False, description="`url` is a sitemap (or sitemap index).")
    prefix: str | None = Field(
        default=None, max_length=2000, description="Follow/keep only URLs starting with this."
    )
    max_pages: int | None = Field(
        default=None, ge=1, description="Stop after this many pages (default 100; ≤ api.web_max_pages)."
    )
    dataset: str | None = Field(default=None, description="Dataset the chunks go to (as in ingest).")


@router.post("/sources")
async def add_web_source(kb: str, body: WebSourceBody, scope: Caller, state: State) -> dict[str, Any]:
    """Crawl and index web pages into an unversioned KB (admin; the same policy as ingest).

    403 when web sources are off (`api.web_sources` empty) or the URL is outside them; every request
    and redirect of the crawl must stay inside. robots.txt, the prefix and the page limit hold as in
    `lore ingest URL`, and a re-crawl asks with ETag / Last-Modified and skips unchanged text.
    """

    def run() -> dict[str, Any]:
        lore = state.lore
        record = require_kb(lore, scope, kb, Action.UPLOAD)
        stamp = scope.chunk_stamp(body.dataset)
        settings = lore.settings.api
        guard = WebGuard(settings.web_sources)
        if not guard.enabled:
            raise HTTPException(
                403,
                "web sources are off on this server: an operator lists the URL prefixes or hosts "
                "it may fetch in api.web_sources",
            )
        for label, url in (("url", body.url), ("prefix", body.prefix)):
            if url is not None and (reason := guard.refusal(url)):
                raise HTTPException(403, f"{label} {url}: {reason}")
        max_pages = body.max_pages or min(100, settings.web_max_pages)
        if max_pages > settings.web_max_pages:
            raise HTTPException(422, f"max_pages: at most {settings.web_max_pages} (api.web_max_pages)")
        if lore.catalog.has_versions(record.id):
            raise HTTPException(
                409,
                f"knowledge base {kb!r} is versioned: its content changes only through builds",
            )
        with _lock(record.id):
            crawler = WebCrawler(
                cache_dir(lore.settings.home, kb),
                max_pages=max_pages,
                max_bytes=int(lore.settings.ingest.max_file_mb * 1e6),
                guard=guard,
            )
            try:
                crawl = fetch_pages(
                    crawler,
                    [] if body.sitemap else [body.url],
                    body.url if body.sitemap else None,
                    body.prefix,
                )
            except LoreError as exc:  # the sitemap itself could not be read
                raise HTTPException(422, str(exc)) from exc
            finally:
                crawler.close()
            refused = [{"url": u, "reason": r} for u, r in crawl.refused]
            if not crawl.sources:
                why = "; ".join(f"{u}: {r}" for u, r in crawl.refused[:5])
                raise HTTPException(422, "no web page could be fetched" + (f" ({why})" if why else ""))
            check_file_writes(lore, record, [s.name for s in crawl.sources], scope)
            report = lore.ingest(kb, [], sources=crawl.sources, chunk_metadata=lambda _source: stamp)
        return {
            "kb": kb,
            "pages": len(crawl.sources),
            "unchanged": crawl.unchanged,
            "refused": refused,
            **report_json(report),
        }

    return await run_in_threadpool(run)


def _lock(kb_id: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(kb_id, threading.Lock())
