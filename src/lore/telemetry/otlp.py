"""The OTLP/HTTP exporter (imported only when an endpoint is configured): a request becomes a span carrying
the request's trace id, each pipeline stage a child span, and the other events (cache lookups, reranks)
span events of the stage they happened in."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Status, StatusCode

from lore.events import StageEvent, Subscriber

CALLER_KINDS = ("start", "status", "token", "end", "error")
PRIVATE = frozenset({"question", "query", "answer", "sub_question", "text"})  # user text stays out of spans


class _RequestIds(RandomIdGenerator):
    """Random ids, except that a request's span takes the request's own trace id when it is 32 hex digits."""

    def __init__(self) -> None:
        self.pending = threading.local()

    def generate_trace_id(self) -> int:
        wanted: int | None = getattr(self.pending, "trace_id", None)
        self.pending.trace_id = None
        return wanted if wanted else super().generate_trace_id()


def _attributes(data: dict[str, Any], prefix: str = "lore.") -> dict[str, str | bool | int | float]:
    return {
        prefix + k: v for k, v in data.items() if isinstance(v, str | bool | int | float) and k not in PRIVATE
    }


def _trace_int(trace_id: str | None) -> int | None:
    if trace_id and len(trace_id) == 32:
        try:
            return int(trace_id, 16) or None
        except ValueError:
            return None
    return None


class OtlpExporter:
    """One tracer provider exporting in batches to `endpoint` (a traces URL)."""

    def __init__(self, endpoint: str, service_name: str) -> None:
        self.ids = _RequestIds()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), id_generator=self.ids
        )
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.tracer = self.provider.get_tracer("lore")

    def subscriber(self, name: str) -> Subscriber:
        """A subscriber for one request: its spans are exported when the request's `done` event arrives."""
        return _RequestSpans(self, name)

    def flush(self, timeout_ms: int = 30000) -> bool:
        return self.provider.force_flush(timeout_ms)

    def export(self, name: str, events: list[StageEvent], tokens: int) -> None:
        """The request's span and its stages' child spans, with the times the events were emitted."""
        first, last = events[0], events[-1]
        self.ids.pending.trace_id = _trace_int(first.trace_id)  # this thread's next root span takes it
        root = self.tracer.start_span(name, start_time=first.wall_ns)
        root.set_attribute("lore.trace_id", first.trace_id or "")
        root.set_attribute("lore.tokens", tokens)
        parent = trace.set_span_in_context(root)
        stage: Any = None
        for event in events:
            if event.kind == "start":
                root.set_attributes(_attributes(event.data))
            elif event.kind == "status":
                if stage is not None:
                    stage.end(end_time=event.wall_ns)
                label = str(event.data.get("stage") or "stage")
                stage = self.tracer.start_span(label, context=parent, start_time=event.wall_ns)
                stage.set_attributes(_attributes(event.data))
            elif event.kind in ("end", "error", "done"):
                if stage is not None:
                    stage.end(end_time=event.wall_ns)
                    stage = None
                root.set_attributes(_attributes(event.data, f"lore.{event.kind}."))
                if event.kind == "error":
                    root.set_status(Status(StatusCode.ERROR, str(event.data.get("message", ""))))
            elif event.kind not in CALLER_KINDS:
                (stage or root).add_event(event.kind, _attributes(event.data, ""), timestamp=event.wall_ns)
        root.end(end_time=last.wall_ns)


class _RequestSpans:
    """Keeps one request's events until its `done` event, then exports them."""

    def __init__(self, exporter: OtlpExporter, name: str) -> None:
        self.exporter, self.name = exporter, name
        self.events: list[StageEvent] = []
        self.tokens = 0

    def __call__(self, event: StageEvent) -> None:
        if event.kind == "token":
            self.tokens += 1
            return
        self.events.append(event)
        if event.kind == "done":
            events, self.events = self.events, []
            self.exporter.export(self.name, events, self.tokens)
