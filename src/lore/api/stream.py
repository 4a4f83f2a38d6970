"""The one answer stream behind SSE, WebSocket and the OpenAI-compatible endpoint: the application
layer's ask (`lore.app.conversation`) stepped in the threadpool over the request's event stream, counted
among the service's streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool

from lore.api.deps import ServiceState
from lore.app.conversation import answer_events
from lore.app.plan import AskPlan
from lore.events import EventStream


async def ask_events(state: ServiceState, plan: AskPlan) -> AsyncIterator[dict[str, Any]]:
    """`{"event": type, "data": {...}}` dicts for one question; the trace is saved when it finishes."""
    events = EventStream(plan.trace_id)
    run = answer_events(state.lore, plan, events)
    token = object()
    state.streams.add(token)
    events.bind()  # the current stream here and in each step: log lines carry the trace id the client sees
    try:
        # A step is never abandoned mid-call (the threadpool call waits for it), so closing is safe.
        while (event := await run_in_threadpool(next, run, None)) is not None:
            yield event
    finally:
        state.streams.discard(token)
        with anyio.CancelScope(shield=True):
            await run_in_threadpool(run.close)  # closes the pipeline and saves the trace
