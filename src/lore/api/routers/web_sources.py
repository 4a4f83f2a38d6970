"""Web pages as sources through the API: crawl a URL (or a sitemap) on the server, inside the
configured allow-list (`api.web_sources`), and index the pages into an unversioned KB for the caller's
tenant (a tenant the KB is shared with stores its pages as `<tenant>|<url>`, as its uploads).

A crawl is a catalog job of kind "crawl" (202 + the job; `?wait=true` answers with its result instead):
a worker runs it in threads of its own (`api.web_crawl_threads`), its pages as progress events. A tenant
has at most `api.web_crawls_per_tenant` crawls queued or running, counted in the catalog across replicas
(more: 429), and each page and the whole crawl end at their `[ingest] web_*` deadlines."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from lore.api.deps import Caller, State
from lore.api.routers.ingest import report_json
from lore.app.access import audit, check_file_writes, own_name, require_kb
from lore.app.content_results import CrawlQueued, CrawlResult, JobInfo
from lore.app.fields import NAME_CHARS
from lore.catalog import Job, JobStatus, KnowledgeBase
from lore.catalog.job_records import CANCELLED_STATUS, JobCapError
from lore.engine import Lore
from lore.errors import ConflictError, LoreError, NotFoundError
from lore.grant import Grant
from lore.ingest.files import SourceFile
from lore.ingest.pipeline import Progress
from lore.ingest.web import Crawl, WebCrawler, cache_dir, fetch_pages
from lore.ingest.web_budget import WebBudget
from lore.ingest.web_guard import WebGuard
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])
_locks: dict[str, threading.Lock] = {}  # one crawl per KB at a time: they share its page cache
_locks_guard = threading.Lock()
RETRY_AFTER_S = 30
HELD = "another tenant of this knowledge base holds this page"
OFF = (
    "web sources are off on this server: an operator lists the URL prefixes or hosts it may fetch in "
    "api.web_sources"
)
CRAWL_QUEUED = threading.Event()  # set when this process queues a crawl: its worker claims it at once
Note = Callable[[dict[str, Any]], None]  # records one progress event of the job


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


class CrawlFailed(LoreError):
    """A crawl that ended without pages to index, with the HTTP status its job reports."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def versioned(kb: str) -> str:
    """Why a versioned KB takes no crawl."""
    return f"knowledge base {kb!r} is versioned: its content changes only through builds"


def _queue(lore: Lore, kb: str, body: WebSourceBody, scope: Grant) -> Job:
    """Check the request (policy, allow-list, limits, an unversioned KB), then queue the crawl as a job."""
    record = require_kb(lore, scope, kb, Action.UPLOAD)
    stamp = scope.chunk_stamp(body.dataset)
    settings = lore.settings.api
    guard = WebGuard(settings.web_sources)
    if not guard.enabled:
        raise HTTPException(403, OFF)
    for label, url in (("url", body.url), ("prefix", body.prefix)):
        if url is not None and (reason := guard.refusal(url)):
            raise HTTPException(403, f"{label} {url}: {reason}")
    max_pages = body.max_pages or min(100, settings.web_max_pages)
    if max_pages > settings.web_max_pages:
        raise HTTPException(422, f"max_pages: at most {settings.web_max_pages} (api.web_max_pages)")
    if lore.catalog.has_versions(record.id):
        raise HTTPException(409, versioned(kb))
    payload = {
        "kb": kb,
        "tenant": scope.tenant,  # the job is this tenant's: its crawls count, its admins read the job
        "key_id": scope.key_id,
        "roles": list(scope.roles),
        "chunk_stamp": stamp,
        **body.model_dump(include={"url", "sitemap", "prefix"}),
        "max_pages": max_pages,
    }
    cap = settings.web_crawls_per_tenant
    try:
        job = lore.catalog.enqueue_crawl(
            record.id, payload, cap=cap, kb_name=kb, lease_s=lore.settings.worker.lease_s
        )
    except JobCapError as exc:
        raise HTTPException(
            429,
            f"{exc} (api.web_crawls_per_tenant); try again later",
            headers={"Retry-After": str(RETRY_AFTER_S)},
        ) from exc
    audit(lore, scope, "crawl", kb=kb, target=job.id, url=body.url, sitemap=body.sitemap, max_pages=max_pages)
    CRAWL_QUEUED.set()
    return job


@router.post(
    "/sources",
    status_code=202,
    response_model=CrawlQueued,
    responses={
        200: {
            "model": CrawlResult,
            "description": "With `wait`: the crawl's result (pages, refused URLs, per-file outcomes).",
        },
        202: {"description": "The crawl is queued: `job` (poll `GET .../jobs/{id}` or stream its events)."},
        429: {"description": "The tenant already has `api.web_crawls_per_tenant` crawls queued or running."},
    },
)
async def add_web_source(
    kb: str,
    body: WebSourceBody,
    scope: Caller,
    state: State,
    wait: Annotated[
        bool, Query(description="Answer when the crawl has ended (its result or error), not with the job.")
    ] = False,
) -> JSONResponse:
    """Queue a crawl that indexes web pages into an unversioned KB (admin; the same policy as ingest).

    403 when web sources are off (`api.web_sources` empty) or the URL is outside them; every request
    and redirect of the crawl must stay inside. robots.txt, the prefix and the page limit hold as in
    `lore ingest URL`, and a re-crawl asks with ETag / Last-Modified and skips unchanged text. 429 (with
    Retry-After) while the caller's tenant already has `api.web_crawls_per_tenant` crawls queued or running.
    With `wait`, the reply is the crawl's result (or its error's status) once the job ends, or the 202 if it
    has not ended by the crawl deadline (`[ingest] web_crawl_timeout_s`, plus `worker.lease_s`).
    """
    lore = state.lore
    job = await run_in_threadpool(_queue, lore, kb, body, scope)
    headers = {"Location": f"/api/kbs/{kb}/jobs/{job.id}", "X-Lore-Job": job.id}
    if wait:
        seconds = lore.settings.ingest.web_crawl_timeout_s + lore.settings.worker.lease_s
        job = await _ended(lore, job.id, seconds)
        if job.status is JobStatus.SUCCEEDED:
            return JSONResponse(job.result, 200, headers=headers)
        if job.status is JobStatus.FAILED:
            raise HTTPException(job.error_status or 500, job.error, headers=headers)
    reply = CrawlQueued(kb=kb, job=JobInfo(**job.to_json()), events=f"/api/kbs/{kb}/jobs/{job.id}/events")
    return JSONResponse(reply.model_dump(mode="json"), 202, headers=headers)


async def _ended(lore: Lore, job_id: str, seconds: float) -> Job:
    """The job once it has ended, or as it is after `seconds` (polled; the wait holds no thread)."""
    deadline, idle_s = time.monotonic() + seconds, 0.05
    while True:
        job = await run_in_threadpool(lore.catalog.get_job, job_id)
        if job.done or time.monotonic() >= deadline:
            return job
        await asyncio.sleep(idle_s)
        idle_s = min(idle_s * 2, 1.0)


def run_crawl(lore: Lore, job: Job, progress: Progress, note: Note) -> dict[str, Any]:
    """Run a queued crawl in this process (a worker): fetch the pages, noting each, then index them with
    `progress`; returns the report the API gives. A crawl without pages is a `CrawlFailed`."""
    p = job.payload
    record = lore.catalog.get_kb(p["kb"])
    if record.id != job.kb_id:  # deleted (and its name taken again) since the crawl was queued
        raise NotFoundError(f"knowledge base '{p['kb']}' not found")
    if lore.catalog.has_versions(record.id):  # a build made it versioned meanwhile
        raise CrawlFailed(409, versioned(p["kb"]))
    guard = WebGuard(lore.settings.api.web_sources)  # this worker's allow-list holds too
    if not guard.enabled:
        raise CrawlFailed(403, OFF)
    scope = Grant(p["tenant"], roles=tuple(p["roles"]), key_id=p["key_id"])
    stamp = p["chunk_stamp"]
    with _lock(record.id):
        crawler = NotingCrawler(
            note,
            _cache(lore, record, scope),
            max_pages=p["max_pages"],
            max_bytes=int(lore.settings.ingest.max_file_mb * 1e6),
            guard=guard,
            budget=WebBudget.from_settings(lore.settings.ingest),
            stop=progress.stop_requested,  # a cancelled crawl stops before its next page
        )
        try:
            crawl = fetch_pages(
                crawler, [] if p["sitemap"] else [p["url"]], p["url"] if p["sitemap"] else None, p["prefix"]
            )
        except LoreError as exc:  # the sitemap itself could not be read
            raise CrawlFailed(422, str(exc)) from exc
        finally:
            crawler.close()
        if crawler.stopped:
            raise _cancelled(lore, job, f"after {len(crawl.sources)} page(s); nothing indexed")
        sources = _own_pages(lore, record, scope, crawl)
        refused = [{"url": u, "reason": r} for u, r in crawl.refused]
        if not sources:
            why = "; ".join(f"{u}: {r}" for u, r in crawl.refused[:5])
            raise CrawlFailed(422, "no web page could be fetched" + (f" ({why})" if why else ""))
        note(
            {"stage": "crawled", "pages": len(sources), "unchanged": crawl.unchanged, "refused": len(refused)}
        )
        report = lore.ingest(p["kb"], [], progress, sources=sources, chunk_metadata=lambda _source: stamp)
    if report.stopped:  # cancelled while indexing: the pages indexed so far stay (an unversioned KB)
        done = report.count("ingested")
        raise _cancelled(lore, job, f"while indexing: {done} of {len(sources)} page(s) indexed")
    return {
        "kb": p["kb"],
        "pages": len(sources),
        "unchanged": crawl.unchanged,
        "refused": refused,
        **report_json(report),
    }


def _cancelled(lore: Lore, job: Job, when: str) -> CrawlFailed:
    """The end of a crawl someone cancelled (the job fails with the cancel status, as a cancelled build)."""
    by = lore.catalog.job_cancelled_by(job.id) or "someone"
    return CrawlFailed(CANCELLED_STATUS, f"cancelled by {by} {when}")


class NotingCrawler(WebCrawler):
    """A crawler that notes each sitemap file it reads and each page's outcome as it goes, with the counts
    so far: `fetched` (new or changed), `unchanged` (304), `skipped` (noindex) or `refused` (the reason)."""

    def __init__(self, note: Note, cache: Path, **options: Any) -> None:
        super().__init__(cache, **options)
        self.note, self.counts = note, Counter[str]()

    def _page(self, url: str, crawl: Crawl) -> tuple[SourceFile | None, list[str]]:
        unchanged = crawl.unchanged
        try:
            source, links = super()._page(url, crawl)
        except LoreError as exc:
            self._tell(url, "refused", str(exc))
            raise
        outcome = "skipped" if source is None else "unchanged" if crawl.unchanged > unchanged else "fetched"
        self._tell(url, outcome)
        return source, links

    def sitemap_locs(self, url: str) -> tuple[bool, list[str], bool]:
        """The sitemap file's entries (as the crawler reads them), noted as a `sitemap` event."""
        index, locs, more = super().sitemap_locs(url)
        self.note({"stage": "sitemap", "url": url, "index": index, "entries": len(locs), "more": more})
        return index, locs, more

    def _tell(self, url: str, outcome: str, reason: str | None = None) -> None:
        self.counts[outcome] += 1
        event = {"stage": "page", "url": url, "outcome": outcome, "counts": dict(self.counts)}
        self.note(event if reason is None else {**event, "reason": reason})


def _cache(lore: Lore, record: KnowledgeBase, scope: Grant) -> Path:
    """The page cache of the caller's tenant: the KB's own for its owner, a folder of its own for a sharee."""
    folder = cache_dir(lore.settings.home, record)
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
