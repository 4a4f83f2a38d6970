"""Long-lived connections (SSE answers, job events, WebSockets): a per-tenant cap on open ones, the key
checked again every few seconds while open, an overall deadline, and an end when the object is gone."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi import HTTPException
from sse_starlette import ServerSentEvent
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from lore.api.deps import ServiceState, authenticate
from lore.errors import UNAVAILABLE, LoreError, error_status
from lore.grant import Grant

log = logging.getLogger("lore.api")
REVOKED = "the API key was revoked or has expired"
SLOT_RETRY_S = 5  # Retry-After of a refused stream: other streams of the tenant end by then, or not
_END = object()
_PUMPS: set[asyncio.Task[None]] = set()  # pumps still finishing after their stream ended


class StreamEnded(Exception):
    """Why an open stream ends early: an HTTP-like status and a message fit for the caller."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = UNAVAILABLE if status >= 500 else message  # never a server's address or exception

    def event(self) -> dict[str, Any]:
        """The stream's last event."""
        return {"event": "error", "data": {"message": self.message, "status": self.status}}


@dataclass
class Slot:
    """One of a tenant's open streams; `release` (idempotent) when it ends, however it ends."""

    state: ServiceState
    tenant: str
    released: bool = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        held = self.state.tenant_streams.get(self.tenant, 1) - 1
        if held > 0:
            self.state.tenant_streams[self.tenant] = held
        else:
            self.state.tenant_streams.pop(self.tenant, None)

    @contextmanager
    def until_opened(self) -> Iterator[Slot]:
        """Release the slot if opening the stream fails (a 4xx before anything streams)."""
        try:
            yield self
        except BaseException:
            self.release()
            raise


def open_slot(state: ServiceState, grant: Grant) -> Slot:
    """Count one more open stream of the caller's tenant; 429 with Retry-After over the tenant's cap."""
    cap = state.lore.settings.api.max_streams_per_tenant
    held = state.tenant_streams.get(grant.tenant, 0)
    if cap and held >= cap:
        raise HTTPException(
            429,
            f"this tenant has {held} streams open, the limit is {cap} ([api] max_streams_per_tenant); "
            "close one or try again later",
            headers={"Retry-After": str(SLOT_RETRY_S)},
        )
    state.tenant_streams[grant.tenant] = held + 1
    return Slot(state, grant.tenant)


class Watch:
    """Checks an open stream's key (and that its object still exists) every `stream_recheck_s`, and its
    overall deadline (`stream_max_s`); a failed check raises `StreamEnded`."""

    def __init__(
        self, state: ServiceState, secret: str | None, alive: Callable[[], Awaitable[object]] | None = None
    ) -> None:
        settings = state.lore.settings.api
        self.state, self.secret, self.alive = state, secret, alive
        self.every, self.max_s = settings.stream_recheck_s, settings.stream_max_s
        self.checked = time.monotonic()  # the key was authenticated as the stream opened
        self.deadline = self.checked + self.max_s
        self.ended: StreamEnded | None = None

    def wait_s(self) -> float:
        """How long to wait for the next message before checking again."""
        now = time.monotonic()
        return max(0.0, min(self.checked + self.every, self.deadline) - now)

    async def check(self, force: bool = False) -> None:
        """Check if `force` or the last check is `stream_recheck_s` old; `StreamEnded` on failure."""
        if self.ended is not None:
            raise self.ended
        try:
            await self._check(force)
        except StreamEnded as ended:
            self.ended = ended
            raise

    async def _check(self, force: bool) -> None:
        now = time.monotonic()
        if now >= self.deadline:
            raise StreamEnded(408, f"the stream was open for its limit of {self.max_s:g} s; reconnect")
        if not force and now - self.checked < self.every:
            return
        try:
            await authenticate(self.state, self.secret, count=False)
            if self.alive is not None:
                await self.alive()
        except HTTPException as exc:
            raise StreamEnded(
                exc.status_code, REVOKED if exc.status_code == 401 else str(exc.detail)
            ) from exc
        except LoreError as exc:  # the object streamed is gone (404) or no longer the caller's
            raise StreamEnded(error_status(exc), str(exc)) from exc
        except Exception as exc:  # the catalog is unreachable: the key cannot be vouched for
            log.warning("could not re-check a stream's key", exc_info=True)
            raise StreamEnded(503, UNAVAILABLE) from exc
        self.checked = time.monotonic()


async def guarded(
    events: AsyncIterator[dict[str, Any] | None], watch: Watch
) -> AsyncIterator[dict[str, Any]]:
    """`events` (None items are idle ticks), checked by `watch` before each one is passed on and every few
    seconds while none comes; a failed check ends the stream with its `error` event.

    The source runs in its own task, so a check is never late behind a slow step (an LLM that stalls); it
    is advanced one event at a time as the consumer asks, and closed there once the stream has ended.
    """
    queue: asyncio.Queue[object] = asyncio.Queue()
    demand, stop = asyncio.Event(), asyncio.Event()
    pump = asyncio.create_task(_pump(events, queue, demand, stop))
    _PUMPS.add(pump)
    pump.add_done_callback(_PUMPS.discard)
    asked = False
    try:
        while True:
            if not asked:  # one event at a time: the source never runs ahead of what is sent
                demand.set()
                asked = True
            try:
                item = await asyncio.wait_for(queue.get(), watch.wait_s())
                asked = False
            except TimeoutError:
                item = None
            try:
                await watch.check()
            except StreamEnded as ended:
                yield ended.event()
                return
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            if item is not None:
                yield item  # type: ignore[misc]
    finally:
        stop.set()
        demand.set()


async def _pump(
    events: AsyncIterator[dict[str, Any] | None],
    queue: asyncio.Queue[object],
    demand: asyncio.Event,
    stop: asyncio.Event,
) -> None:
    try:
        while True:
            await demand.wait()
            demand.clear()
            if stop.is_set():
                return
            try:
                event = await anext(events)
            except StopAsyncIteration:
                queue.put_nowait(_END)
                return
            queue.put_nowait(event)
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, which raises it
        queue.put_nowait(exc)
    finally:
        with anyio.CancelScope(shield=True):
            await events.aclose()  # type: ignore[attr-defined]


def sse_frame(kind: str, data: str) -> str:
    """One server-sent event, framed by sse-starlette's encoder: `event: <kind>`, a `data:` line per line
    of `data`, a blank line; lines end in LF (the console's reader splits events on a blank line)."""
    return ServerSentEvent(data, event=kind, sep="\n").encode().decode("utf-8")


def sse(event: dict[str, Any]) -> str:
    """An `{"event": type, "data": {...}}` dict as a server-sent event, its data as JSON."""
    return sse_frame(event["event"], json.dumps(event["data"], ensure_ascii=False))


async def _sse_lines(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    try:
        async for event in events:
            yield sse(event)
    finally:
        await events.aclose()  # type: ignore[attr-defined]


class LiveResponse(StreamingResponse):
    """A long-lived stream: closes its body generator when the client goes away, and frees its slot."""

    def __init__(self, body: AsyncIterator[str], slot: Slot, headers: dict[str, str] | None = None) -> None:
        super().__init__(
            body,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
        )
        self.slot = slot

    @classmethod
    def sse(
        cls,
        events: AsyncIterator[dict[str, Any] | None],
        watch: Watch,
        slot: Slot,
        headers: dict[str, str] | None = None,
    ) -> LiveResponse:
        """`events` as Server-Sent Events, guarded by `watch`."""
        return cls(_sse_lines(guarded(events, watch)), slot, headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slot.release()
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()  # type: ignore[attr-defined]
