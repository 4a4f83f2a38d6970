"""A real local HTTP server speaking the OpenAI chat-completions protocol, scripted per test.

It stands in for a paid LLM endpoint so Lore's real client code (streaming, retries, timeouts)
runs against the real protocol.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Action = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class FakeServer:
    """Test server state: the requests it saw and the scripted replies to play, one per request."""

    url: str = ""
    script: list[Action] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)  # lets a test hold the stream
    notes: list[str] = field(default_factory=list)


def _chunk(content: str | None = None, finish: str | None = None) -> str:
    delta = {"content": content} if content is not None else {"role": "assistant"}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})


def _head(h: BaseHTTPRequestHandler, status: int, content_type: str, **headers: str) -> None:
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    for name, value in headers.items():
        h.send_header(name.replace("_", "-"), value)
    h.end_headers()


def reply(status: int, body: Any, **headers: str) -> Action:
    """A plain JSON reply (an error, or a server that ignores "stream")."""

    def act(h: BaseHTTPRequestHandler) -> None:
        raw = json.dumps(body).encode()
        _head(h, status, "application/json", Content_Length=str(len(raw)), **headers)
        h.wfile.write(raw)

    return act


def events(*data: str, gate_after: int | None = None, state: FakeServer | None = None) -> Action:
    """An SSE stream of the given `data:` payloads; optionally waits on `state.gate` after some."""

    def act(h: BaseHTTPRequestHandler) -> None:
        _head(h, 200, "text/event-stream", Cache_Control="no-cache")
        for i, payload in enumerate(data):
            if i == gate_after and state is not None and not state.gate.wait(5):
                state.notes.append("gate timed out")
            h.wfile.write(f"data: {payload}\n\n".encode())

    return act


def answer(*pieces: str, **kwargs: Any) -> Action:
    """A well-formed streamed answer: role chunk, content chunks, finish chunk, [DONE]."""
    data = [_chunk(), *(_chunk(p) for p in pieces), _chunk(finish="stop"), "[DONE]"]
    gate_after = kwargs.pop("gate_after", None)
    return events(*data, gate_after=None if gate_after is None else gate_after + 1, **kwargs)


@contextmanager
def serve() -> Iterator[FakeServer]:
    """Run a scripted chat-completions server on 127.0.0.1 for the duration of a `with` block."""
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            state.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            state.headers.append(dict(self.headers))
            action = state.script.pop(0) if state.script else reply(500, {"error": "script exhausted"})
            with contextlib.suppress(OSError):  # the client hung up (timeout tests)
                action(self)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    state.gate.set()
    httpd.shutdown()
    httpd.server_close()
