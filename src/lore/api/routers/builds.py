"""Versioned builds over HTTP: one request that returns the result, or the same as a progress stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from lore.api.access import require_kb
from lore.api.deps import Caller, ServiceState, State
from lore.api.routers.ask import sse
from lore.api.routers.ingest import BuildBody, _sources, check_sources_write, report_json
from lore.api.routers.versions import version_json
from lore.errors import LoreError
from lore.grant import Grant
from lore.ingest.pipeline import FileResult, Progress
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["ingest"])


def _run_build(state: ServiceState, kb: str, body: BuildBody, scope: Grant, inputs: list[Path],
               progress: Progress | None = None) -> dict[str, Any]:
    lore, stamp = state.lore, scope.chunk_stamp(body.dataset)
    result = lore.build(kb, inputs, description=body.description, activate=body.activate,
                        quality_gate=body.quality_gate, incremental_from=body.incremental_from, force=body.force,
                        progress=progress, chunk_metadata=lambda _source: stamp)
    lore.catalog.audit("build", tenant=scope.tenant, key_id=scope.key_id, kb=kb, target=str(result.version.seq),
                       activated=body.activate)
    return {"kb": kb, "version": version_json(lore, kb, result.version.seq), "removed": result.removed,
            "gate_reasons": result.gate_reasons, **report_json(result.report)}


@router.post("/builds")
async def build(kb: str, body: BuildBody, scope: Caller, state: State) -> dict[str, Any]:
    """Build a new STAGED version of exactly the given sources, optionally gate and activate it (admin).

    New and changed files' chunks belong to the key's tenant (and its dataset, if it has exactly one).
    """
    inputs = await run_in_threadpool(_inputs, state, kb, body, scope)
    return await run_in_threadpool(_run_build, state, kb, body, scope, inputs)


def _inputs(state: ServiceState, kb: str, body: BuildBody, scope: Grant) -> list[Path]:
    """The build's sources, once the caller may write them (403/409) and its dataset stamp is valid (400)."""
    require_kb(state.lore, scope, kb, Action.BUILD)  # foreign or unknown: 404 before anything else
    inputs = _sources(state.lore, kb, body)
    check_sources_write(state.lore, kb, inputs, scope, replaces_all=True)
    scope.chunk_stamp(body.dataset)
    return inputs


class _QueueProgress(Progress):
    """Build progress callbacks (worker thread) turned into events on the event loop's queue."""

    def __init__(self, put: Callable[[dict[str, Any]], None]) -> None:
        self.put = put

    def file_started(self, name: str, chunks: int) -> None:
        self.put({"event": "status", "data": {"stage": "file", "file": name, "chunks": chunks}})

    def embedded(self, n: int) -> None:
        self.put({"event": "status", "data": {"stage": "embedded", "chunks": n}})

    def file_done(self, result: FileResult) -> None:
        self.put({"event": "status", "data": {"stage": "file_done", "file": result.name, "status": result.status,
                                              "chunks": result.chunks, "error": result.error}})


@router.post("/builds/stream", response_class=StreamingResponse, responses={
    200: {"content": {"text/event-stream": {}}, "description": "`status` per file, then `end` or `error`."}})
async def build_stream(kb: str, body: BuildBody, scope: Caller, state: State) -> StreamingResponse:
    """The same build, streaming per-file progress as SSE; a client that leaves does not stop the build."""
    inputs = await run_in_threadpool(_inputs, state, kb, body, scope)  # bad input is a 4xx before streaming
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def put(event: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    async def work() -> None:
        try:
            put({"event": "end", "data": await run_in_threadpool(
                _run_build, state, kb, body, scope, inputs, _QueueProgress(put))})
        except LoreError as exc:
            put({"event": "error", "data": {"message": str(exc)}})
        except Exception as exc:  # noqa: BLE001 - reported to the client as an error event
            put({"event": "error", "data": {"message": f"internal error ({type(exc).__name__}): {exc}"}})

    task = asyncio.create_task(work())
    state.builds.add(task)  # a strong reference: the build finishes even if the client leaves
    task.add_done_callback(state.builds.discard)

    async def events() -> AsyncIterator[str]:
        yield sse({"event": "start", "data": {"kb": kb}})
        while True:
            event = await queue.get()
            yield sse(event)
            if event["event"] in ("end", "error"):
                return

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
