"""Questions as a stream: `POST /api/ask` (Server-Sent Events) and `ws /api/stream` (WebSocket)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Request, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from lore.api.deps import Caller, ServiceState, State, bearer, websocket_scope, websocket_secret
from lore.api.limits import text_problem
from lore.api.live import LiveResponse, StreamEnded, Watch, guarded, open_slot
from lore.api.stream import ask_events
from lore.app.conversation import AskResult, prepare_ask
from lore.app.requests import AskRequest
from lore.errors import LoreError, error_status, internal_message
from lore.grant import Grant

router = APIRouter(tags=["ask"])
log = logging.getLogger("lore.api")


async def start_stream(
    state: ServiceState, scope: Grant, body: AskRequest, transport: str, history: list[str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Resolve the question (4xx errors raise here) and return its event stream."""
    try:
        plan = await run_in_threadpool(prepare_ask, state.lore, scope, body, transport, history)
    except LoreError as exc:
        raise HTTPException(error_status(exc), str(exc)) from exc
    return ask_events(state, plan)


async def ask_result(
    state: ServiceState, scope: Grant, body: AskRequest, transport: str, history: list[str] | None = None
) -> AskResult:
    """The answer as one result, for callers that do not stream (4xx errors raise, as in `start_stream`)."""
    events = await start_stream(state, scope, body, transport, history)
    result = AskResult()
    try:
        async for event in events:
            result.record(event)
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    return result


class ClosingStream(StreamingResponse):
    """A streaming response that always closes its generator, also when the client goes away."""

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()  # type: ignore[attr-defined]


@router.post(
    "/api/ask",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Events `start`, `status`, `token`, then `end` or `error`, as SSE.",
        }
    },
)
async def ask(body: AskRequest, request: Request, scope: Caller, state: State) -> StreamingResponse:
    """Answer a question as Server-Sent Events (the key is checked again while the answer streams)."""
    slot = open_slot(state, scope)  # 429 over the tenant's open streams
    with slot.until_opened():
        events = await start_stream(state, scope, body, "sse")
        return LiveResponse.sse(events, Watch(state, bearer(request.headers.get("authorization"))), slot)


@router.websocket("/api/stream")
async def stream(websocket: WebSocket) -> None:
    """WebSocket: send `{"kb" or "scenario", "question", ...}` messages; each gets the events of
    `/api/ask`."""
    state: ServiceState = websocket.app.state.service
    try:
        scope = await websocket_scope(websocket, state)
        slot = open_slot(state, scope)  # 429 over the tenant's open streams
    except HTTPException as exc:
        if "websocket.http.response" in websocket.scope.get("extensions", {}):
            response = JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)
            await websocket.send_denial_response(response)
        else:
            await websocket.close(code=4000 + exc.status_code, reason=str(exc.detail)[:120])
        return
    try:
        await websocket.accept()
        await _serve(websocket, state, scope, Watch(state, websocket_secret(websocket)))
    finally:
        slot.release()


async def _serve(websocket: WebSocket, state: ServiceState, scope: Grant, watch: Watch) -> None:
    """Answer the socket's questions; the key is checked on each one and every few seconds in between."""
    try:
        while True:
            try:
                message = await asyncio.wait_for(websocket.receive(), watch.wait_s())
            except TimeoutError:
                message = None
            if message is not None and message["type"] == "websocket.disconnect":
                return
            try:
                await watch.check(force=message is not None)  # every question: a revoked key gets no answer
            except StreamEnded as ended:
                await websocket.close(code=4000 + ended.status, reason=ended.message[:120])
                return
            if message is None:
                continue
            if message.get("text") is None:  # a binary frame: say so, and keep the socket
                await websocket.send_json(
                    {
                        "event": "error",
                        "data": {
                            "message": "send each question as a JSON text frame, not a binary frame",
                            "status": 400,
                        },
                    }
                )
                continue
            await _answer_one(websocket, state, scope, message["text"], watch)
            if watch.ended is not None:  # ended mid-answer: its error event is sent, now the socket ends
                await websocket.close(code=4000 + watch.ended.status, reason=watch.ended.message[:120])
                return
    except WebSocketDisconnect:
        return


async def _answer_one(
    websocket: WebSocket, state: ServiceState, scope: Grant, raw: str, watch: Watch
) -> None:
    wait = state.limiter.check(scope.key_id or "")  # every question counts, not only the handshake
    if wait > 0:
        await websocket.send_json(
            {
                "event": "error",
                "data": {
                    "message": (
                        f"rate limit of {state.limiter.per_minute} requests/minute exceeded for this key"
                    ),
                    "status": 429,
                    "retry_after": round(wait, 1),
                },
            }
        )
        return
    if problem := text_problem(raw.encode("utf-8", "surrogatepass")):
        await websocket.send_json({"event": "error", "data": {"message": problem, "status": 422}})
        return
    try:
        body = AskRequest.model_validate_json(raw)
        events = await start_stream(state, scope, body, "websocket")
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}" for e in exc.errors())
        await websocket.send_json(
            {"event": "error", "data": {"message": f"bad request ({problems})", "status": 422}}
        )
        return
    except HTTPException as exc:
        await websocket.send_json(
            {"event": "error", "data": {"message": exc.detail, "status": exc.status_code}}
        )
        return
    except Exception:  # an unexpected fault answers this message; the socket stays usable
        error_id = uuid.uuid4().hex
        log.exception("error %s: websocket question failed", error_id)
        await websocket.send_json(
            {
                "event": "error",
                "data": {"message": internal_message(error_id), "status": 500, "trace_id": error_id},
            }
        )
        return
    answer = guarded(events, watch)
    try:
        async for event in answer:
            await websocket.send_json(event)
    finally:
        with anyio.CancelScope(shield=True):
            await answer.aclose()  # type: ignore[attr-defined]
