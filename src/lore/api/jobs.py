"""Jobs: the API queues a build or a web crawl in the catalog; a worker (`lore worker`, or the service
itself when `worker.in_process`) claims it, heartbeats, runs it and records progress events and the result.
Builds run one at a time; crawls beside them, up to `api.web_crawl_threads` at once."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool

from lore.api.deps import ServiceState
from lore.api.routers.ingest import report_json
from lore.api.routers.versions import version_json
from lore.api.routers.web_sources import CRAWL_QUEUED, CrawlFailed, run_crawl
from lore.app.access import audit, require_kb
from lore.catalog import BuildLockedError, Job, VersionStatus
from lore.catalog.job_records import CANCELLED_STATUS, CRAWL
from lore.engine import Lore
from lore.errors import (
    ConflictError,
    ForbiddenError,
    LoreError,
    NotFoundError,
    error_status,
    internal_message,
)
from lore.grant import ADMIN_ROLE, Grant
from lore.ingest.build import Removal
from lore.ingest.pipeline import FileResult, Progress
from lore.policy import Action
from lore.storage.layout import uploads_key

log = logging.getLogger("lore.worker")
BUILD_OPTIONS = ("description", "activate", "quality_gate", "incremental_from", "force")
REMOVAL_OPTIONS = ("mode", "remove", "allow_removal")  # absent from jobs queued before they existed
KINDS = ("build", CRAWL)


def queue_build(
    lore: Lore, kb: str, inputs: list[Path], options: dict[str, Any], stamp: dict[str, str], *, by: Grant
) -> Job:
    """Queue a build of exactly `inputs` for the caller `by` (who activates it, if asked); `BuildLockedError`
    (409) while another build holds or awaits the KB."""
    record = lore.catalog.get_kb(kb)
    holder = lore.catalog.build_lock_holder(record.id)
    if holder is not None and not (holder.lease_expired() or holder.held_by_dead_local_process()):
        raise BuildLockedError(
            f"another build of knowledge base {kb!r} is running (host {holder.host}, "
            f"pid {holder.pid}, since {holder.acquired_at:%Y-%m-%d %H:%M:%S} UTC)"
        )
    payload = {
        "kb": kb,
        "inputs": [_input_ref(lore, p) for p in inputs],
        "chunk_stamp": stamp,
        "actor": by.actor,
        "tenant": by.tenant,
        "key_id": by.key_id,
        **{name: options[name] for name in BUILD_OPTIONS + REMOVAL_OPTIONS if name in options},
    }
    return lore.catalog.enqueue_job(
        "build", record.id, payload, kb_name=kb, lease_s=lore.settings.worker.lease_s
    )


def readable_job(lore: Lore, scope: Grant, kb: str, job_id: str) -> Job:
    """A job of the KB that the caller may follow, else 404 (403 for a caller who may not build or crawl).

    A build is followed by the KB's builders; a crawl by its tenant's admins and the KB owner's admins only
    (another tenant the KB is shared with gets the 404 of an unknown job)."""
    record = require_kb(lore, scope, kb, Action.READ)  # a KB the caller does not see: 404 first
    try:
        job: Job | None = lore.catalog.get_job(job_id)
    except NotFoundError:
        job = None
    if job is None or job.kind != CRAWL:
        require_kb(lore, scope, kb, Action.BUILD)
    elif scope.key_id is not None and not scope.is_admin:
        raise ForbiddenError(f"this needs an API key with the '{ADMIN_ROLE}' role")
    elif scope.key_id is not None and scope.tenant not in (job.payload.get("tenant"), record.owner_tenant):
        job = None
    if job is None or job.kb_id != record.id:
        raise NotFoundError(f"job '{job_id}' not found in knowledge base '{kb}'")
    return job


def cancel_job(lore: Lore, scope: Grant, kb: str, job_id: str, reason: str) -> Job:
    """Cancel a build or a crawl of the KB for a caller who may read it (a build: whoever may start one; a
    crawl: its tenant's and the KB owner's admins; else 404/403; 409 once it has ended); audited."""
    job = readable_job(lore, scope, kb, job_id)
    if job.kind not in KINDS:
        raise ConflictError(f"job {job_id} is a {job.kind}; only a build or a crawl can be cancelled")
    with lore.catalog.transaction():
        cancelled = lore.catalog.cancel_job(job_id, scope.actor[:255])
        audit(lore, scope, "cancel", kb=kb, target=job_id, reason=reason, was=job.status.value)
    return cancelled


async def job_events(state: ServiceState, kb: str, job_id: str) -> AsyncIterator[dict[str, Any] | None]:
    """`start`, the job's `status` events as they are recorded, then `end` (the result) or `error`; None
    while idle (a tick, so the stream's guard can check the key and that the job is still there)."""
    yield {"event": "start", "data": {"kb": kb, "job": job_id}}
    after, idle_s = 0, 0.25
    while True:
        events = await run_in_threadpool(state.lore.catalog.job_events, job_id, after)
        for seq, event in events:
            after = seq
            yield event
            if event["event"] in ("end", "error"):
                return
        if events:
            idle_s = 0.25
            continue
        yield None
        await asyncio.sleep(idle_s)
        idle_s = min(idle_s * 2, 1.0)  # a long idle job is polled once a second, not four times


class JobProgress(Progress):
    """Per-file build progress written as the job's events, which any replica can stream."""

    def __init__(self, lore: Lore, job_id: str) -> None:
        self.catalog, self.job_id = lore.catalog, job_id

    def put(self, data: dict[str, Any]) -> None:
        """Record one `status` event (best effort)."""
        try:
            self.catalog.add_job_event(self.job_id, {"event": "status", "data": data})
        except Exception:  # progress is best effort; the build itself goes on
            log.warning("could not record progress of job %s", self.job_id, exc_info=True)

    def file_reading(self, name: str) -> None:
        self.put({"stage": "reading", "file": name})

    def file_started(self, name: str, chunks: int, pages: int | None = None) -> None:
        self.put(_known({"stage": "file", "file": name, "chunks": chunks, "pages": pages}))

    def embedded(self, n: int, eta_s: float | None = None) -> None:
        self.put(_known({"stage": "embedded", "chunks": n, "eta_s": eta_s}))

    def stop_requested(self) -> bool:
        """Whether someone cancelled the job (a build stops before its next file, a crawl its next page)."""
        try:
            return self.catalog.job_cancelled_by(self.job_id) is not None
        except Exception:  # a database hiccup: go on, the next check asks again
            log.warning("could not check job %s for a cancel", self.job_id, exc_info=True)
            return False

    def file_done(self, result: FileResult, eta_s: float | None = None) -> None:
        done = {"stage": "file_done", "file": result.name, "status": result.status, "chunks": result.chunks}
        self.put({**done, "error": result.error, **_known({"eta_s": eta_s})})


def _known(data: dict[str, Any]) -> dict[str, Any]:
    """The event without its optional fields that are unknown (`pages` of a file without pages, `eta_s`)."""
    return {k: v for k, v in data.items() if v is not None or k not in ("pages", "eta_s")}


_STORED = "storage:"  # an input in the shared storage (an upload), by key: any worker can fetch it


def _input_ref(lore: Lore, path: Path) -> str:
    key = lore.storage.key_of(path)
    return _STORED + key if key is not None else str(path)


def _input_path(lore: Lore, kb: str, ref: str) -> Path:
    """The local path of a queued input: a stored upload fetched to this worker, or a server path."""
    if not ref.startswith(_STORED):
        return Path(ref)
    key = ref.removeprefix(_STORED)
    found = lore.storage.fetch(key)
    if found is None and key.startswith(f"uploads/{kb}/"):  # queued before uploads moved to the KB's id
        key = f"{uploads_key(lore.catalog.get_kb(kb))}/{key.removeprefix(f'uploads/{kb}/')}"
        found = lore.storage.fetch(key)
    return found or lore.storage.path(key)  # deleted since: the build says "no such file"


def run_build(lore: Lore, job: Job) -> dict[str, Any]:
    """Run a queued build in this process; returns the result the API reports."""
    p, stamp = job.payload, job.payload["chunk_stamp"]
    result = lore.build(
        p["kb"],
        [_input_path(lore, p["kb"], x) for x in p["inputs"]],
        progress=JobProgress(lore, job.id),
        chunk_metadata=lambda _source: stamp,
        removal=Removal(
            keep_unlisted=p.get("mode", "exact") == "add",
            named=frozenset(p.get("remove", ())),
            allowed=p.get("allow_removal", True),
        ),
        actor=_build_actor(p),
        **{name: p[name] for name in BUILD_OPTIONS},
    )
    if p["activate"] and result.version.status is VersionStatus.ACTIVE and "tenant" in p:
        lore.catalog.audit(
            "activate",
            tenant=p["tenant"],
            key_id=p.get("key_id"),
            kb=p["kb"],
            target=str(result.version.seq),
            via="build",
            job=job.id,
            **({"reason": p["description"]} if p["description"] else {}),
        )
    return {
        "kb": p["kb"],
        "version": version_json(lore, p["kb"], result.version.seq),
        "removed": result.removed,
        "gate_reasons": result.gate_reasons,
        **report_json(result.report),
    }


def _build_actor(payload: dict[str, Any]) -> str:
    """Who queued the build (`key:<id>@<tenant>`); a job queued before jobs carried it: its tenant's API."""
    return str(payload.get("actor") or f"api@{payload['chunk_stamp'].get('tenant_id', '')}")


class Worker:
    """Claims queued jobs and runs them (builds one at a time, crawls in threads of their own beside them);
    fails jobs whose worker stopped heartbeating."""

    def __init__(self, lore: Lore, name: str | None = None) -> None:
        self.lore = lore
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.lease_s = lore.settings.worker.lease_s

    def run_once(self, kinds: tuple[str, ...] = KINDS) -> Job | None:
        """Reap stale jobs, then claim and run the oldest queued one; None when nothing is queued."""
        self.lore.catalog.reap_jobs(self.lease_s)
        job = self.lore.catalog.claim_job(self.name, kinds)
        return None if job is None else self.run(job)

    def run(self, job: Job) -> Job:
        """Run a claimed job to its end, heartbeating meanwhile; returns it finished."""
        catalog = self.lore.catalog
        log.info("job %s: %s of %s", job.id, job.kind, job.payload.get("kb"))
        catalog.add_job_event(job.id, {"event": "status", "data": {"stage": "started", "worker": self.name}})
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job.id, stop), daemon=True)
        beat.start()
        try:
            if job.kind == CRAWL:
                progress = JobProgress(self.lore, job.id)
                return catalog.finish_job(job.id, result=run_crawl(self.lore, job, progress, progress.put))
            return catalog.finish_job(job.id, result=run_build(self.lore, job))
        except CrawlFailed as exc:
            return catalog.finish_job(job.id, error=str(exc), error_status=exc.status)
        except LoreError as exc:
            if by := catalog.job_cancelled_by(job.id):
                return catalog.finish_job(
                    job.id, error=f"cancelled by {by}: {exc}", error_status=CANCELLED_STATUS
                )
            return catalog.finish_job(job.id, error=str(exc), error_status=error_status(exc))
        except Exception:
            log.exception("error %s: %s job failed", job.id, job.kind)  # the details stay in the server log
            return catalog.finish_job(job.id, error=internal_message(job.id), error_status=500)
        finally:
            stop.set()
            beat.join()

    def _heartbeat(self, job_id: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            try:
                self.lore.catalog.heartbeat_job(job_id, self.name)
            except Exception:  # a database hiccup: the next beat tries again
                log.warning("job %s: heartbeat failed", job_id, exc_info=True)

    def loop(self, stop: threading.Event) -> None:
        """Run jobs until `stop` is set (running ones finish first); idle, poll every `worker.poll_s`."""
        crawls = threading.Thread(target=self._crawls, args=(stop,), name="lore-crawls", daemon=True)
        crawls.start()
        try:
            while not stop.is_set():
                job = self._claim_and_run(("build",))
                if job is None:
                    stop.wait(self.lore.settings.worker.poll_s)
        finally:
            crawls.join()

    def _crawls(self, stop: threading.Event) -> None:
        """Claim crawls while fewer than `api.web_crawl_threads` run here, each in a thread of its own."""
        slots = threading.BoundedSemaphore(self.lore.settings.api.web_crawl_threads)
        poll_s, running = self.lore.settings.worker.poll_s, list[threading.Thread]()

        def run(job: Job) -> None:
            try:
                self.run(job)
            except Exception:  # e.g. its KB (and with it the job) deleted meanwhile: nothing to record
                log.warning("job %s: could not record its end", job.id, exc_info=True)
            finally:
                slots.release()

        while not stop.is_set():
            running = [t for t in running if t.is_alive()]
            if not slots.acquire(timeout=poll_s):
                continue
            CRAWL_QUEUED.clear()  # a crawl queued from here on wakes the wait below
            try:
                job = self.lore.catalog.claim_job(self.name, (CRAWL,))
            except Exception:  # the catalog is unreachable for now: keep serving, try again
                log.warning("worker %s: could not look for crawls", self.name, exc_info=True)
                job = None
            if job is None:
                slots.release()
                CRAWL_QUEUED.wait(poll_s)
                continue
            running.append(threading.Thread(target=run, args=(job,), name=f"lore-crawl-{job.id[:8]}"))
            running[-1].start()
        for thread in running:
            thread.join()

    def _claim_and_run(self, kinds: tuple[str, ...]) -> Job | None:
        try:
            return self.run_once(kinds)
        except Exception:  # the catalog is unreachable for now: keep serving, try again
            log.warning("worker %s: could not look for jobs", self.name, exc_info=True)
            return None
