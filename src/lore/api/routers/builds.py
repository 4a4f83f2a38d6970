"""Versioned builds over HTTP: queued as jobs (202 + job id) that a worker runs; progress and the result
stream from the job's events, from any replica."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from lore.api.deps import Caller, ServiceState, State, bearer
from lore.api.jobs import cancel_job as cancel_build
from lore.api.jobs import job_events as job_event_stream
from lore.api.jobs import queue_build, readable_job
from lore.api.live import LiveResponse, Watch, open_slot
from lore.api.routers.ingest import BuildBody, _sources, check_sources_write
from lore.api.routers.versions import ReasonBody
from lore.app.access import audit, own_name, require_kb
from lore.app.content_results import JobInfo, JobQueued
from lore.catalog import Job
from lore.grant import Grant
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])


def _queue(state: ServiceState, kb: str, body: BuildBody, scope: Grant) -> Job:
    """Check the build's sources (403/409), its dataset stamp (400) and the KB's lock (409), then queue it."""
    lore = state.lore
    record = require_kb(lore, scope, kb, Action.BUILD)  # foreign or unknown: 404 before anything else
    remove = [own_name(lore, record, scope, n) for n in body.remove]
    known = {f.path for f in lore.catalog.list_files(record.id)}
    if missing := [n for n, stored in zip(body.remove, remove, strict=True) if stored not in known]:
        raise HTTPException(400, f"remove: not files of knowledge base '{kb}': {', '.join(missing[:10])}")
    pending = lore.pending_removals(record)  # uploads deleted since the last build: asked for
    remove += sorted((pending & known) - set(remove))
    if pending - known:  # dropped by an earlier build
        lore.mark_removals(record, drop=pending - known)
    inputs = _sources(lore, kb, body, scope, allow_empty=body.mode == "add" and bool(remove))
    check_sources_write(lore, kb, inputs, scope, replaces_all=True)
    stamp = scope.chunk_stamp(body.dataset)
    job = queue_build(lore, kb, inputs, {**body.model_dump(), "remove": remove}, stamp, by=scope)
    audit(lore, scope, "build", kb=kb, target=job.id, activate=body.activate)
    return job


@router.post(
    "/builds",
    status_code=202,
    response_model=JobQueued,
    responses={
        202: {"description": "The build is queued: `job` (poll `GET .../jobs/{id}` or stream its events)."},
        409: {"description": "Another build of the knowledge base is running or queued."},
    },
)
async def build(kb: str, body: BuildBody, scope: Caller, state: State, response: Response) -> dict[str, Any]:
    """Queue a build of a new STAGED version of exactly the given sources, optionally gated and activated
    (admin).

    New and changed files' chunks belong to the key's tenant (and its dataset, if it has exactly one).
    """
    job = await run_in_threadpool(_queue, state, kb, body, scope)
    response.headers["Location"] = f"/api/kbs/{kb}/jobs/{job.id}"
    return {"kb": kb, "job": job.to_json()}


def _job(state: ServiceState, kb: str, job_id: str, scope: Grant) -> Job:
    return readable_job(state.lore, scope, kb, job_id)  # builds: the KB's builders; crawls: their tenant's


@router.get("/jobs/{job_id}", response_model=JobInfo)
async def get_job(kb: str, job_id: str, scope: Caller, state: State) -> dict[str, Any]:
    """A build job's status, and its result once it has finished (admin)."""
    return (await run_in_threadpool(_job, state, kb, job_id, scope)).to_json()


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobInfo,
    responses={409: {"description": "The job has finished already."}},
)
async def cancel_job(
    kb: str, job_id: str, scope: Caller, state: State, body: ReasonBody | None = None
) -> dict[str, Any]:
    """Cancel a build (whoever may start it) or a web crawl (its tenant's and the KB owner's admins): a
    queued one at once; a running build before its next file (its staged version fails; the active version
    is unchanged), a running crawl before its next page (pages it had indexed stay)."""
    reason = body.reason if body else ""
    return (await run_in_threadpool(cancel_build, state.lore, scope, kb, job_id, reason)).to_json()


def _live_job(state: ServiceState, request: Request, scope: Grant, kb: str, job_id: str) -> Watch:
    """The job stream's guard: the key, and the job and its KB still there and the caller's (else 404)."""
    secret = bearer(request.headers.get("authorization"))
    return Watch(state, secret, alive=partial(run_in_threadpool, _job, state, kb, job_id, scope))


@router.get(
    "/jobs/{job_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "`status` per file, then `end` or `error`.",
        }
    },
)
async def job_events(
    kb: str, job_id: str, request: Request, scope: Caller, state: State
) -> StreamingResponse:
    """A build job's progress as SSE, from its start (any replica can serve it)."""
    slot = open_slot(state, scope)  # 429 over the tenant's open streams
    with slot.until_opened():
        await run_in_threadpool(_job, state, kb, job_id, scope)
        watch = _live_job(state, request, scope, kb, job_id)
        return LiveResponse.sse(job_event_stream(state, kb, job_id), watch, slot)


@router.post(
    "/builds/stream",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "`status` per file, then `end` or `error`.",
        }
    },
)
async def build_stream(
    kb: str, body: BuildBody, request: Request, scope: Caller, state: State
) -> StreamingResponse:
    """Queue the same build and stream its progress as SSE; a client that leaves does not stop the build."""
    slot = open_slot(state, scope)  # 429 over the tenant's open streams, before anything is queued
    with slot.until_opened():
        job = await run_in_threadpool(_queue, state, kb, body, scope)  # bad input is a 4xx before streaming
        watch = _live_job(state, request, scope, kb, job.id)
        return LiveResponse.sse(
            job_event_stream(state, kb, job.id), watch, slot, headers={"X-Lore-Job": job.id}
        )
