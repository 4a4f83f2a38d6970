"""A real local HTTP server speaking the rerank protocol of TEI (`POST /rerank`, `texts` ->
`[{"index", "score"}]`) and of Cohere/Jina/vLLM/Xinference (`POST /v1/rerank`, `documents` ->
`{"results": [{"index", "relevance_score"}]}`). It scores by shared words (so its order is real and
checkable) and can be scripted to fail: slow replies, 5xx, malformed bodies."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Share of the query's words found in the text (0-1)."""
    q = set(WORD.findall(query.lower()))
    return len(q & set(WORD.findall(text.lower()))) / max(1, len(q))


@dataclass
class RerankServer:
    """Server state: requests seen (path, body) and faults to play first, one per request."""

    base: str = ""
    faults: list[str] = field(default_factory=list)  # "slow", "500", "not-json", "short", "bad-index", "nan"
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    logits: bool = False  # TEI with raw_scores: scores outside [0, 1]


def _reply(path: str, body: dict[str, Any], state: RerankServer) -> Any:
    docs = (
        body.get("texts")
        if path.endswith("/rerank") and not path.startswith("/v1")
        else body.get("documents")
    )
    scores = [overlap(body["query"], d) for d in docs]
    if state.logits:
        scores = [8 * s - 4 for s in scores]
    order = sorted(range(len(docs)), key=lambda i: -scores[i])
    if path.startswith("/v1"):
        top = order[: body.get("top_n") or len(docs)]
        return {
            "id": "r1",
            "results": [{"index": i, "relevance_score": scores[i]} for i in top],
            "meta": {"billed_units": {"search_units": 1}},
        }
    return [{"index": i, "score": scores[i]} for i in order]


@contextmanager
def serve() -> Iterator[RerankServer]:
    """Run the server on 127.0.0.1 for the duration of a `with` block."""
    state = RerankServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, raw: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, body))
            if self.path not in ("/rerank", "/v1/rerank"):
                return self._send(404, b'{"error": "not found"}')
            fault = state.faults.pop(0) if state.faults else ""
            try:
                if fault == "slow":
                    time.sleep(1.0)
                if fault == "500":
                    return self._send(503, b'{"error": "model loading"}')
                if fault == "not-json":
                    return self._send(200, b"<html>gateway</html>")
                reply = _reply(self.path, body, state)
                items = reply["results"] if isinstance(reply, dict) else reply
                if fault == "short":
                    items.pop()
                elif fault == "bad-index":
                    items[0]["index"] = 999
                elif fault == "nan":
                    items[0]["relevance_score" if isinstance(reply, dict) else "score"] = "high"
                self._send(200, json.dumps(reply).encode())
            except OSError:  # the client hung up (timeout tests)
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
