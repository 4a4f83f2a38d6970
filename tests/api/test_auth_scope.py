"""Auth and scope through the real app: every request's tenant, datasets and roles come from its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import Keys, auth, sse_events


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}])
def test_missing_or_bad_key_is_401(client: TestClient, headers: dict[str, str]) -> None:
    for method, path, body in (
        ("get", "/api/kbs", None),
        ("post", "/api/ask", {"kb": "hb", "question": "hi"}),
        ("post", "/v1/chat/completions", {"model": "hb", "messages": []}),
        ("get", "/v1/models", None),
    ):
        r = client.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (path, r.text)
        assert r.headers["www-authenticate"] == "Bearer"


def test_revoked_key_is_401(client: TestClient, keys: Keys) -> None:
    r = client.get("/api/kbs", headers=auth(keys.revoked))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]


def test_admin_role_needed_for_changes(client: TestClient, keys: Keys) -> None:
    r = client.post("/api/kbs", json={"name": "x"}, headers=auth(keys.staff))
    assert r.status_code == 403 and "admin" in r.json()["detail"]
    r = client.post(
        "/api/ask", json={"kb": "hb", "question": "refund?", "version": 1}, headers=auth(keys.staff)
    )
    assert r.status_code == 403


def test_scope_in_body_is_refused(client: TestClient, keys: Keys) -> None:
    r = client.post(
        "/api/search",
        json={"kb": "hb", "query": "launch code", "tenant_id": "tenant-b"},
        headers=auth(keys.staff),
    )
    assert r.status_code == 422 and "tenant_id" in r.text


def _search_files(client: TestClient, secret: str, query: str) -> list[str]:
    r = client.post("/api/search", json={"kb": "hb", "query": query, "top_k": 20}, headers=auth(secret))
    assert r.status_code == 200, r.text
    return [h["file"] for h in r.json()["hits"]]


def test_tenants_never_see_each_others_chunks(client: TestClient, keys: Keys) -> None:
    files_b = _search_files(client, keys.tenant_b, "Project Nightingale launch code")
    assert files_b and set(files_b) == {"nightingale.md"}  # tenant B sees only its own document
    files_a = _search_files(client, keys.staff, "Project Nightingale launch code NG-7731")
    assert files_a and "nightingale.md" not in files_a

    r = client.post(
        "/api/ask",
        json={"kb": "hb", "question": "What is the launch code of Project Nightingale?"},
        headers=auth(keys.tenant_b),
    )
    end = sse_events(r.text)[-1]
    assert end[0] == "end" and "NG-7731" in end[1]["answer"]
    assert {c["file"] for c in end[1]["citations"]} == {"nightingale.md"}
    r = client.post(
        "/api/ask",
        json={"kb": "hb", "question": "What is the launch code of Project Nightingale?"},
        headers=auth(keys.staff),
    )
    end = sse_events(r.text)[-1][1]
    assert "NG-7731" not in end["answer"] and all(c["file"] != "nightingale.md" for c in end["citations"])
    r = client.post(
        "/api/ask", json={"kb": "hb", "question": "What is the refund window?"}, headers=auth(keys.tenant_b)
    )
    end = sse_events(r.text)[-1][1]
    assert end["refused"] and "30 days" not in end["answer"]  # tenant B has no handbook


def test_dataset_restriction_from_key(client: TestClient, lore: Lore) -> None:
    _, secret = lore.catalog.create_api_key("default", ["staff"], datasets=["other-dataset"])
    assert _search_files(client, secret, "refund window") == []  # handbook chunks are in dataset "default"
    _, secret = lore.catalog.create_api_key("default", ["staff"], datasets=["default"])
    assert _search_files(client, secret, "refund window")


def test_traces_and_sessions_are_tenant_bound(client: TestClient, keys: Keys) -> None:
    r = client.post(
        "/api/ask", json={"kb": "hb", "question": "What is the refund window?"}, headers=auth(keys.staff)
    )
    start, end = sse_events(r.text)[0][1], sse_events(r.text)[-1][1]
    assert client.get(f"/api/traces/{end['trace_id']}", headers=auth(keys.staff)).status_code == 200
    assert client.get(f"/api/traces/{end['trace_id']}", headers=auth(keys.tenant_b)).status_code == 404
    assert client.get(f"/api/sessions/{start['session_id']}", headers=auth(keys.tenant_b)).status_code == 404
    r = client.post(
        "/api/ask",
        json={"kb": "hb", "question": "and LF-200?", "session_id": start["session_id"]},
        headers=auth(keys.tenant_b),
    )
    assert r.status_code == 404 and "session" in r.json()["detail"]


def test_rate_limit_per_key(api_home: Path, keys: Keys) -> None:
    lore = Lore(load_settings(home=api_home, api={"rate_limit_per_minute": 3}))
    try:
        with TestClient(create_app(lore, run_preflight=False)) as c:
            codes = [c.get("/api/kbs", headers=auth(keys.staff)).status_code for _ in range(4)]
            assert codes == [200, 200, 200, 429]
            r = c.get("/api/kbs", headers=auth(keys.staff))
            assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
            assert c.get("/api/kbs", headers=auth(keys.admin)).status_code == 200  # other keys unaffected
            with c.websocket_connect(
                "/api/stream", headers=auth(keys.tenant_b)
            ) as ws:  # questions count, not the handshake
                answers = []
                for _ in range(4):
                    ws.send_text(json.dumps({"kb": "hb", "question": "launch code of Project Nightingale?"}))
                    while (msg := ws.receive_json())["event"] not in ("end", "error"):
                        pass
                    answers.append(msg["data"])
                assert [a.get("status") for a in answers] == [None, None, None, 429]
                assert "NG-7731" in answers[0]["answer"]
    finally:
        lore.close()


def test_cors_from_settings(api_home: Path, keys: Keys) -> None:
    lore = Lore(load_settings(home=api_home, api={"cors_origins": ["https://kb.example.com"]}))
    try:
        with TestClient(create_app(lore, run_preflight=False)) as c:
            r = c.options(
                "/api/kbs",
                headers={"Origin": "https://kb.example.com", "Access-Control-Request-Method": "GET"},
            )
            assert r.headers["access-control-allow-origin"] == "https://kb.example.com"
            r = c.options(
                "/api/kbs",
                headers={"Origin": "https://evil.example.com", "Access-Control-Request-Method": "GET"},
            )
            assert "access-control-allow-origin" not in r.headers
    finally:
        lore.close()


def test_openapi_and_web_ui_are_served(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {
        "/api/ask",
        "/api/search",
        "/v1/chat/completions",
        "/v1/models",
        "/api/kbs/{kb}/files",
        "/api/traces/{trace_id}",
        "/api/feedback",
    } <= set(spec["paths"])
    page = client.get("/")
    assert page.status_code == 200 and "<title>Lore</title>" in page.text
    assert client.get("/app.js").status_code == 200 and client.get("/api/health").json() == {"status": "ok"}
