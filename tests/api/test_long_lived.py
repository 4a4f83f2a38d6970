"""Long-lived connections against a real uvicorn: a revoked key ends an open WebSocket, SSE answer and job
event stream; a deleted KB ends its job's stream; streams have a deadline and a per-tenant cap; a stream's
`error` event carries its status and no server address."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.grant import PLATFORM_ADMIN_ROLE
from tests.answer.chat_server import answer, reply, serve
from tests.api.conftest import Keys, LiveServer, auth, iter_sse

QUESTION = {"kb": "hb", "question": "What is the refund window?"}


@contextmanager
def server(home: Path, llm_url: str | None = None, **api: Any) -> Iterator[LiveServer]:
    """A real uvicorn over `home` with `[api]` settings; builds stay queued (no worker runs them)."""
    answer_cfg = {"generator": "openai", "llm_model": "m", "llm_base_url": llm_url} if llm_url else {}
    settings = load_settings(
        home=home,
        api={"rate_limit_per_minute": 0, **api},
        worker={"in_process": False},
        answer=answer_cfg,
    )
    lore = Lore(settings)
    try:
        with LiveServer(create_app(lore)) as live:
            yield live
    finally:
        lore.close()


@pytest.fixture(scope="module")
def root(api_home: Path) -> str:
    """A key of tenant "default" that manages keys and KBs."""
    lore = Lore(load_settings(home=api_home))
    try:
        return lore.catalog.create_api_key("default", ["admin", PLATFORM_ADMIN_ROLE])[1]
    finally:
        lore.close()


def new_key(live: LiveServer, root: str, roles: list[str]) -> tuple[str, str]:
    """(id, secret) of a new key of tenant "default", made through the API."""
    r = httpx.post(f"{live.url}/api/keys", json={"roles": roles}, headers=auth(root), timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["id"], r.json()["secret"]


def revoke(live: LiveServer, root: str, key_id: str) -> None:
    r = httpx.delete(f"{live.url}/api/keys/{key_id}", headers=auth(root), timeout=30)
    assert r.status_code == 204, r.text


def open_streams(live: LiveServer) -> dict[str, int]:
    return dict(live.server.config.app.state.service.tenant_streams)  # type: ignore[union-attr]


def until(what: str, done: Any, timeout: float = 15.0) -> None:
    """Poll `done()` until true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"still not {what} after {timeout} s"
        time.sleep(0.05)


def ws_url(live: LiveServer) -> str:
    return live.url.replace("http", "ws") + "/api/stream"


def ws_answer(ws: ClientConnection) -> list[dict[str, Any]]:
    events = []
    while not events or events[-1]["event"] not in ("end", "error"):
        events.append(json.loads(ws.recv(timeout=120)))
    return events


def ws_until_closed(ws: ClientConnection, timeout: float = 15.0) -> tuple[list[dict[str, Any]], Any]:
    """Messages received until the server closes the socket, and the close frame."""
    received, deadline = [], time.monotonic() + timeout
    try:
        while True:
            received.append(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))))
    except ConnectionClosed as closed:
        return received, closed.rcvd
    except TimeoutError:
        raise AssertionError(f"the socket is still open after {timeout} s; received {received}") from None


def queued_job(live: LiveServer, root: str, kb: str) -> str:
    """A KB with one upload and a build job that stays queued (no worker here); returns the job id."""
    with httpx.Client(base_url=live.url, headers=auth(root), timeout=30) as http:
        assert http.post("/api/kbs", json={"name": kb}).status_code == 201
        files = {"file": ("leave.md", b"# Leave\n\nAnnual leave is 5 days.\n")}
        assert http.post(f"/api/kbs/{kb}/files", files=files).status_code == 201
        r = http.post(f"/api/kbs/{kb}/builds", json={"activate": True})
        assert r.status_code == 202, r.text
        return str(r.json()["job"]["id"])


def sse_after_start(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events of an open SSE response; the first must be `start`."""
    events = iter_sse(response.iter_lines())
    assert next(events)[0] == "start"
    return events


def test_revoked_key_gets_no_answer_on_an_open_websocket(api_home: Path, root: str) -> None:
    with server(api_home, stream_recheck_s=60) as live:  # only the per-question check can catch it
        key_id, secret = new_key(live, root, ["staff"])
        with connect(ws_url(live), additional_headers=auth(secret), open_timeout=10) as ws:
            ws.send(json.dumps(QUESTION))
            assert ws_answer(ws)[-1]["event"] == "end"
            revoke(live, root, key_id)
            ws.send(json.dumps(QUESTION))
            received, close = ws_until_closed(ws)
        assert received == [] and close.code == 4401 and "revoked" in close.reason
        until("released", lambda: not open_streams(live))


def test_idle_websocket_ends_when_its_key_is_revoked_and_at_its_deadline(api_home: Path, root: str) -> None:
    with server(api_home, stream_recheck_s=0.2, stream_max_s=4) as live:
        key_id, secret = new_key(live, root, ["staff"])
        with connect(ws_url(live), additional_headers=auth(secret), open_timeout=10) as ws:
            revoke(live, root, key_id)
            received, close = ws_until_closed(ws, timeout=10)  # nothing sent: the periodic check ends it
        assert received == [] and close.code == 4401 and "revoked" in close.reason
        _, secret = new_key(live, root, ["staff"])
        with connect(ws_url(live), additional_headers=auth(secret), open_timeout=10) as ws:
            received, close = ws_until_closed(ws, timeout=15)
        assert received == [] and close.code == 4408 and "limit of 4 s" in close.reason
        until("released", lambda: not open_streams(live))


def test_revoked_key_ends_an_open_sse_answer(api_home: Path, root: str) -> None:
    with serve() as llm:
        llm.script.append(answer("Refunds are possible ", "within 30 days [1].", gate_after=1, state=llm))
        with server(api_home, llm.url, stream_recheck_s=0.2) as live:
            key_id, secret = new_key(live, root, ["staff"])
            with (
                httpx.Client(base_url=live.url, headers=auth(secret), timeout=120) as http,
                http.stream("POST", "/api/ask", json=QUESTION) as r,
            ):
                events = sse_after_start(r)
                assert next(kind for kind, _ in events if kind == "token")  # the LLM is now held mid-answer
                revoke(live, root, key_id)
                rest = list(events)  # the stream must end by itself, while the LLM still holds the answer
            llm.gate.set()
            assert rest[-1] == ("error", {"message": "the API key was revoked or has expired", "status": 401})
            assert "end" not in [kind for kind, _ in rest]
            until("released", lambda: not open_streams(live))


def test_revoked_key_and_deleted_kb_end_an_open_job_event_stream(api_home: Path, root: str) -> None:
    with server(api_home, stream_recheck_s=0.2) as live:
        key_id, secret = new_key(live, root, ["admin"])
        job = queued_job(live, root, "jobkb")
        with (
            httpx.Client(base_url=live.url, headers=auth(secret), timeout=30) as http,
            http.stream("GET", f"/api/kbs/jobkb/jobs/{job}/events") as r,
        ):
            events = sse_after_start(r)
            revoke(live, root, key_id)
            assert list(events) == [
                ("error", {"message": "the API key was revoked or has expired", "status": 401})
            ]
        with (
            httpx.Client(base_url=live.url, headers=auth(root), timeout=30) as http,
            http.stream("GET", f"/api/kbs/jobkb/jobs/{job}/events") as r,
        ):
            events = sse_after_start(r)
            assert http.delete("/api/kbs/jobkb").status_code == 204
            rest = list(events)  # before the fix: a stream that never ends (the read times out)
        assert len(rest) == 1 and rest[0][0] == "error" and rest[0][1]["status"] == 404
        until("released", lambda: not open_streams(live))


def test_per_tenant_cap_on_open_streams_is_429_and_released(api_home: Path, root: str, keys: Keys) -> None:
    with server(api_home, max_streams_per_tenant=2) as live:
        _, secret = new_key(live, root, ["staff"])
        url = ws_url(live)
        with (
            connect(url, additional_headers=auth(secret), open_timeout=10) as first,
            connect(url, additional_headers=auth(secret), open_timeout=10),
        ):
            with pytest.raises(InvalidStatus) as info:
                connect(url, additional_headers=auth(secret), open_timeout=10)
            refused = info.value.response
            assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
            r = httpx.post(f"{live.url}/api/ask", json=QUESTION, headers=auth(secret), timeout=30)
            assert r.status_code == 429 and "max_streams_per_tenant" in r.json()["detail"]
            assert r.headers["Retry-After"]
            # Another tenant is not held back by this one's streams.
            r = httpx.post(f"{live.url}/api/ask", json=QUESTION, headers=auth(keys.tenant_b), timeout=120)
            assert r.status_code == 200 and "event: end" in r.text
            first.close()
            until("released", lambda: open_streams(live) == {"default": 1})
            with connect(url, additional_headers=auth(secret), open_timeout=10) as ws:
                ws.send(json.dumps(QUESTION))
                assert ws_answer(ws)[-1]["event"] == "end"
        until("released", lambda: not open_streams(live))
        r = httpx.post(f"{live.url}/api/ask", json=QUESTION, headers=auth(secret), timeout=120)
        assert r.status_code == 200 and "event: end" in r.text


def test_stream_error_events_carry_a_status_and_no_address(api_home: Path, root: str) -> None:
    with serve() as llm:
        llm.script.append(reply(400, {"error": {"message": "context length exceeded"}}))
        with server(api_home, llm.url) as live:
            _, secret = new_key(live, root, ["staff"])
            r = httpx.post(f"{live.url}/api/ask", json=QUESTION, headers=auth(secret), timeout=120)
            kind, data = list(iter_sse(r.text.splitlines()))[-1]
            assert kind == "error" and data["status"] == 502 and data["trace_id"] in data["message"]
            assert "127.0.0.1" not in r.text and str(llm.url) not in r.text
            r = httpx.post(
                f"{live.url}/api/ask", json={**QUESTION, "question": "   "}, headers=auth(secret), timeout=120
            )
            kind, data = list(iter_sse(r.text.splitlines()))[-1]
            assert kind == "error" and data["status"] == 400
