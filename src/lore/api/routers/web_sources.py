"""Web pages as sources through the API: crawl a URL (or a sitemap) on the server, inside the
configured allow-list (`api.web_sources`), and index the pages into an unversioned KB for the caller's
tenant (a tenant the KB is shared with stores its pages as `<tenant>|<url>`, as its uploads).

A crawl runs in threads of its own (`api.web_crawl_threads`), never in the pool every other request
needs, a tenant runs at most `api.web_crawls_per_tenant` at once (more: 429), and each page and the whole
crawl end at their `[ingest] web_*` deadlines."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from lore.api.access import check_file_writes, own_name, require_kb
from lore.api.deps import Caller, State
from lore.api.limits import NAME_CHARS
from lore.api.routers.ingest import report_json
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.errors import ConflictError, LoreError
from lore.grant import Grant
from lore.ingest.files import SourceFile
from lore.ingest.web import Crawl, WebCrawler, cache_dir, fetch_pages
from lore.ingest.web_budget import WebBudget
from lore.ingest.web_guard import WebGuard
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])
_locks: dict[str, threading.Lock] = {}  # one crawl per KB at a time: they share its page cache
_locks_guard = threading.Lock()
_running: Counter[str] = Counter()  # crawls running per tenant (this process)
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CapacityLimiter] = weakref.WeakKeyDictionary()
RETRY_AFTER_S = 30
HELD = "another tenant of this knowledge base holds this page"


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
    dataset: str | None = Field(
        default=None, max_length=NAME_CHARS, description="Dataset the chunks go to (as in ingest)."
    )


@router.post("/sources")
async def add_web_source(kb: str, body: WebSourceBody, scope: Caller, state: State) -> dict[str, Any]:
    """Crawl and index web pages into an unversioned KB (admin; the same policy as ingest).

    403 when web sources are off (`api.web_sources` empty) or the URL is outside them; every request
    and redirect of the crawl must stay inside. robots.txt, the prefix and the page limit hold as in
    `lore ingest URL`, and a re-crawl asks with ETag / Last-Modified and skips unchanged text. 429 (with
    Retry-After) while the caller's tenant already runs `api.web_crawls_per_tenant` crawls.
    """
    lore = state.lore

    def run() -> dict[str, Any]:
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
                _cache(lore, record, scope),
                max_pages=max_pages,
                max_bytes=int(lore.settings.ingest.max_file_mb * 1e6),
                guard=guard,
                budget=WebBudget.from_settings(lore.settings.ingest),
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
            sources = _own_pages(lore, record, scope, crawl)
            refused = [{"url": u, "reason": r} for u, r in crawl.refused]
            if not sources:
                why = "; ".join(f"{u}: {r}" for u, r in crawl.refused[:5])
                raise HTTPException(422, "no web page could be fetched" + (f" ({why})" if why else ""))
            report = lore.ingest(kb, [], sources=sources, chunk_metadata=lambda _source: stamp)
        return {
            "kb": kb,
            "pages": len(sources),
            "unchanged": crawl.unchanged,
            "refused": refused,
            **report_json(report),
        }

    with _slot(scope.tenant, lore.settings.api.web_crawls_per_tenant):
        return await anyio.to_thread.run_sync(run, limiter=_limiter(lore.settings.api.web_crawl_threads))


@contextmanager
def _slot(tenant: str, cap: int) -> Iterator[None]:
    """One of the tenant's `cap` concurrent crawls, or 429 with Retry-After."""
    with _locks_guard:
        if _running[tenant] >= cap:
            raise HTTPException(
                429,
                f"this tenant already runs {cap} web crawls (api.web_crawls_per_tenant); try again later",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        _running[tenant] += 1
    try:
        yield
    finally:
        with _locks_guard:
            _running[tenant] -= 1


def _limiter(threads: int) -> CapacityLimiter:
    """The crawls' own thread limit for this event loop (requests waiting for it hold no thread)."""
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None or limiter.total_tokens != threads:
        limiter = _limiters[loop] = CapacityLimiter(threads)
    return limiter


def _cache(lore: Lore, record: KnowledgeBase, scope: Grant) -> Path:
    """The page cache of the caller's tenant: the KB's own for its owner, a folder of its own for a sharee."""
    folder = cache_dir(lore.settings.home, record.name)
    if scope.key_id is None or record.owner_tenant == scope.tenant:
        return folder
    return folder / "tenants" / hashlib.sha256(scope.tenant.encode("utf-8")).hexdigest()[:24]


def _own_pages(lore: Lore, record: KnowledgeBase, scope: Grant, crawl: Crawl) -> list[SourceFile]:
    """The crawled pages under the caller's own names (`access.own_name`); a name another tenant holds
    (from before names were per tenant) is refused, without naming who."""
    pages = []
    for source in crawl.sources:
        name = own_name(lore, record, scope, source.name)
        try:
            check_file_writes(lore, record, [name], scope)
        except ConflictError:
            crawl.refused.append((source.name, HELD))
            continue
        pages.append(SourceFile(source.path, name))
    return pages


def _lock(kb_id: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(kb_id, threading.Lock())
