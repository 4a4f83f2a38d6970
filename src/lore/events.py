"""One event stream per request: any stage `emit`s what it did (a rerank, a cache lookup, a pipeline
event) once, and each subscriber of the request's `EventStream` — the trace, the stream sent to the caller,
the Prometheus metrics, an OTLP exporter — takes what it needs.

The stream of the request being handled is the one context variable; with none bound, `emit` does nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StageEvent:
    """One thing a request did: its kind, its data, when (`perf_counter` and wall clock) and whose it was."""

    kind: str
    data: dict[str, Any]
    trace_id: str | None = None
    at: float = field(default_factory=time.perf_counter)
    wall_ns: int = field(default_factory=time.time_ns)


Subscriber = Callable[[StageEvent], None]


class EventStream:
    """A request's dispatcher: `emit` hands each event to every subscriber, in the order they subscribed."""

    def __init__(self, trace_id: str | None = None) -> None:
        self.trace_id = trace_id
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()  # a stage may report from a worker thread of the same request

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns what removes it."""
        with self._lock:
            self._subscribers.append(subscriber)
        return lambda: self._unsubscribe(subscriber)

    def _unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def emit(self, kind: str, data: dict[str, Any]) -> StageEvent:
        """Deliver one event to every subscriber; returns it."""
        event = StageEvent(kind, data, self.trace_id)
        with self._lock:
            for subscriber in list(self._subscribers):
                subscriber(event)
        return event

    def bind(self) -> Token[EventStream | None]:
        """Make this the current stream of the running context (for a context that ends with it)."""
        return _CURRENT.set(self)

    @contextmanager
    def bound(self) -> Iterator[EventStream]:
        """The current stream inside the block (stages called there report to it)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


_CURRENT: ContextVar[EventStream | None] = ContextVar("lore_event_stream", default=None)


def current() -> EventStream | None:
    """The stream of the request being handled, if any."""
    return _CURRENT.get()


def trace_id() -> str | None:
    """The trace id of the request being handled (log lines carry it)."""
    stream = _CURRENT.get()
    return stream.trace_id if stream is not None else None


def emit(kind: str, **data: Any) -> None:
    """Report one event to the current request's stream (nothing happens outside a request)."""
    stream = _CURRENT.get()
    if stream is not None:
        stream.emit(kind, data)


@contextmanager
def collecting(*kinds: str) -> Iterator[list[StageEvent]]:
    """The events of `kinds` emitted inside the block, in order. They still reach the current stream's
    other subscribers; with no stream bound, a private one collects them."""
    stream = _CURRENT.get()
    token = None
    if stream is None:
        stream = EventStream()
        token = _CURRENT.set(stream)
    got: list[StageEvent] = []
    unsubscribe = stream.subscribe(lambda e: got.append(e) if e.kind in kinds else None)
    try:
        yield got
    finally:
        unsubscribe()
        if token is not None:
            _CURRENT.reset(token)
