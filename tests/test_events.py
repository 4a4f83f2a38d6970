"""The request's event stream: a stage emits once, every subscriber takes it; outside a request nothing
happens; `collecting` sees a block's events whether or not a stream is bound."""

from __future__ import annotations

import contextvars
import threading

from lore import events
from lore.events import EventStream, StageEvent, collecting, emit


def test_one_emit_reaches_every_subscriber_in_order_with_the_trace_id() -> None:
    stream = EventStream("t1")
    seen: list[tuple[str, str, dict[str, object]]] = []
    stream.subscribe(lambda e: seen.append(("a", e.kind, e.data)))
    unsubscribe = stream.subscribe(lambda e: seen.append(("b", e.kind, e.data)))
    with stream.bound():
        assert events.current() is stream and events.trace_id() == "t1"
        emit("cache", hit=True)
        unsubscribe()
        emit("rerank", ms=1.0)
    assert events.current() is None and events.trace_id() is None
    assert seen == [
        ("a", "cache", {"hit": True}),
        ("b", "cache", {"hit": True}),
        ("a", "rerank", {"ms": 1.0}),
    ]


def test_emit_outside_a_request_does_nothing_and_collecting_makes_a_private_stream() -> None:
    emit("cache", hit=False)  # no stream bound: no error, no one told
    with collecting("rerank") as got:
        emit("rerank", provider="ltr")
        emit("cache", hit=True)
    assert [(e.kind, e.data) for e in got] == [("rerank", {"provider": "ltr"})]
    assert events.current() is None


def test_collecting_inside_a_request_leaves_the_events_to_the_other_subscribers() -> None:
    stream = EventStream("t2")
    everything: list[StageEvent] = []
    stream.subscribe(everything.append)
    with stream.bound(), collecting("rerank") as got:
        emit("rerank", provider="http")
    emit("rerank", provider="after")  # unbound again
    assert [e.data["provider"] for e in got] == ["http"]
    assert [(e.kind, e.trace_id) for e in everything] == [("rerank", "t2")]


def test_a_worker_thread_given_the_context_reports_to_the_same_stream() -> None:
    stream = EventStream("t3")
    got: list[StageEvent] = []
    stream.subscribe(got.append)
    with stream.bound():
        context = contextvars.copy_context()
    threads = [
        threading.Thread(target=context.copy().run, args=(emit, "cache"), kwargs={"n": i}) for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.data["n"] for e in got) == [0, 1, 2, 3]
