"""Long-lived connections of the stateful world: a key revoked while its WebSocket and a job's event
stream (SSE) are open. Every frame received passes the world's canary check."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.api.conftest import iter_sse
from tests.api.stateful_world import BUDGET_S, Violation, World, expect

REVOKED = {"message": "the API key was revoked or has expired", "status": 401}


def socket_until(w: World, ws: ClientConnection, secret: str, last: tuple[str, ...]) -> list[Any]:
    """Frames until one of kind `last` (none: until the socket closes, `ConnectionClosed`)."""
    events: list[Any] = []
    deadline = time.monotonic() + BUDGET_S
    while not events or events[-1]["event"] not in last:
        text = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
        w.record(secret, "WS /api/stream", 200, str(text), 0.0)
        events.append(json.loads(text))
        if events[-1]["event"] == "error" and int(events[-1]["data"].get("status", 500)) >= 500:
            raise Violation(f"WS /api/stream: error event {events[-1]}")
    return events


def revoke_with_streams_open(
    w: World, tenant: str, key: tuple[str, str], question: dict[str, Any], job: tuple[str, str] | None
) -> None:
    """`key` (id, secret) of `tenant` has answered on a WebSocket and, given `job` (kb, id), holds the job's
    event stream open; it is revoked. The socket then answers nothing (a question sent after is refused)
    and closes 4401; the event stream's only further frame is its 401 `error`, and it ends."""
    key_id, secret = key
    url = w.url.replace("http", "ws") + "/api/stream"
    headers = {"Authorization": f"Bearer {secret}"}
    rest: list[tuple[str, Any]] = []
    with ExitStack() as stack:
        ws = stack.enter_context(connect(url, additional_headers=headers, open_timeout=10))
        ws.send(json.dumps(question))
        socket_until(w, ws, secret, ("end", "error"))
        events = None
        if job is not None:
            kb, job_id = job
            r = stack.enter_context(
                w.http.stream("GET", f"/api/kbs/{kb}/jobs/{job_id}/events", headers=headers)
            )
            expect(r.status_code == 200, f"job events of {kb}: {r.status_code}")
            events = iter_sse(r.iter_lines())
            first = next(events)
            w.record(secret, "GET job events", 200, json.dumps(first), 0.0)
            expect(first[0] == "start", f"job events of {kb} begin with {first}")
        revoked = w.call(w.admin[tenant], "DELETE", f"/api/keys/{key_id}")
        expect(revoked.status_code == 204, f"DELETE /api/keys: {revoked.status_code}")
        try:  # the server may close the socket (4401) before the question is sent: its re-check ran first
            ws.send(json.dumps(question))
            after = socket_until(w, ws, secret, ())
            code = 1000
        except ConnectionClosed as closed:
            after, code = [], closed.rcvd.code if closed.rcvd else 1006
        except TimeoutError:
            raise Violation(f"the socket of a revoked key is still open after {BUDGET_S} s") from None
        expect(after == [] and code == 4401, f"WS after revocation: {after[:3]}, close code {code}")
        if events is not None:
            try:
                for kind, data in events:  # ends by itself: the stream's re-check finds the key revoked
                    w.record(secret, "GET job events", 200, json.dumps(data), 0.0)
                    rest.append((kind, data))
            except httpx.ReadTimeout:
                raise Violation(f"the job stream of a revoked key still open after {BUDGET_S} s") from None
            expect(rest == [("error", REVOKED)], f"job events after revocation: {rest[:3]}")
    r = w.call(secret, "GET", "/api/kbs")
    expect(r.status_code == 401, f"GET /api/kbs with a revoked key: {r.status_code}")
