"""A call as data (its request, and how its reply becomes a result) and what both clients share."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from httpx_sse import EventSource, ServerSentEvent

from lore.client.models import AskEvent, LoreAPIError

T = TypeVar("T")


@dataclass
class Events:
    """A reply of server-sent events, read to its end or to the first event of an `until` kind; `each` sees
    the events before that one."""

    until: tuple[str, ...] = ()
    each: Callable[[AskEvent], None] | None = None

    def take(self, event: AskEvent, seen: list[AskEvent]) -> bool:
        """Keep `event`; True when the reading stops here."""
        seen.append(event)
        if event.event in self.until:
            return True
        if self.each is not None:
            self.each(event)
        return False


@dataclass
class Call(Generic[T]):
    """One request and how its reply becomes a typed result: `parse` gets the reply's JSON, or, when
    `events` is set, the list of its server-sent events."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] | None = None
    files: list[tuple[str, tuple[str, Any, str]]] = field(default_factory=list)
    events: Events | None = None

    def read(self, response: httpx.Response) -> T:
        """The result of a JSON reply (LoreAPIError when the server refused)."""
        raise_for(response)
        return self.parse(response.json() if response.content else None)

    def close(self) -> None:
        for _field, (_name, fh, _type) in self.files:
            fh.close()


# Several calls in a row: each yielded call's result is sent back in, the flow returns the last result.
Flow = Generator[Call[Any], Any, T]


@contextmanager
def sending(call: Call[Any], base_url: str) -> Iterator[dict[str, Any]]:
    """The call's request arguments for httpx; an unreachable server as LoreAPIError; files closed after."""
    try:
        yield {
            "method": call.method,
            "url": call.path,
            "json": call.json,
            "params": call.params,
            "files": call.files or None,
        }
    except httpx.TransportError as exc:
        raise LoreAPIError(0, f"cannot reach the Lore server at {base_url}: {transport_cause(exc)}") from exc
    finally:
        call.close()


def transport_cause(exc: httpx.TransportError) -> str:
    """Why no reply came, in words ("connection refused", "timed out"), without errno codes."""
    text = re.sub(r"\[Errno -?\d+\]\s*", "", str(exc)).strip()
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if "refused" in text.lower():
        return "connection refused"
    if re.search(r"name or service not known|nodename nor servname|getaddrinfo|name resolution", text, re.I):
        return "unknown host"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server closed the connection"
    return text.lower() or type(exc).__name__


def settings_from_env(base_url: str | None, api_key: str | None) -> tuple[str, str | None]:
    """The server URL and key: arguments first, then LORE_SERVER / LORE_API_KEY."""
    url = base_url or os.environ.get("LORE_SERVER")
    if not url:
        raise LoreAPIError(0, "no server: pass base_url or set LORE_SERVER (e.g. http://127.0.0.1:8000)")
    return url.rstrip("/"), api_key or os.environ.get("LORE_API_KEY") or None


def headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def raise_for(response: httpx.Response, body: bytes | None = None) -> None:
    """A non-2xx reply as LoreAPIError carrying the server's `detail` (or OpenAI-style error message)."""
    if response.is_success:
        return
    raw = body if body is not None else response.content
    try:
        data = json.loads(raw)
        detail = data.get("detail", data.get("error", {}).get("message") if isinstance(data, dict) else data)
    except (ValueError, AttributeError):
        detail = raw.decode("utf-8", "replace").strip() or response.reason_phrase
    message = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
    raise LoreAPIError(
        response.status_code, message, method=response.request.method, url=str(response.request.url)
    )


def event_source(response: httpx.Response) -> EventSource:
    """The reply's server-sent events (httpx-sse: multi-line `data:`, comments and CR/LF line ends as the
    spec has them); a reply that is not an event stream is a LoreAPIError."""
    kind = response.headers.get("content-type", "").partition(";")[0].strip()
    if kind != "text/event-stream":
        raise LoreAPIError(
            response.status_code,
            f"expected server-sent events (text/event-stream), got {kind or 'no content type'!r}",
            method=response.request.method,
            url=str(response.request.url),
        )
    return EventSource(response)


def ask_event(sse: ServerSentEvent) -> AskEvent | None:
    """A server-sent event as an `AskEvent`, its data (every `data:` line, joined) read as JSON; None for
    an event without data."""
    return AskEvent(sse.event, json.loads(sse.data)) if sse.data else None


class Steps(Generic[T]):
    """A call, or a flow of calls, stepped through by a client: run `call` (None once done) and hand its
    result to `give`; `value` is the final result."""

    def __init__(self, step: Call[T] | Flow[T]) -> None:
        self._flow = _single(step) if isinstance(step, Call) else step
        self.value: Any = None
        self.call: Call[Any] | None = None
        self.give(None)

    def give(self, result: Any) -> None:
        try:
            self.call = self._flow.send(result)
        except StopIteration as done:
            self.call, self.value = None, done.value


def _single(call: Call[T]) -> Flow[T]:
    result: T = yield call
    return result
