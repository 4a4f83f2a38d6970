"""The `rerank` request option of /api/search and /api/ask with an `http` reranker configured (a local
server speaking the rerank protocol): on, off, refused when none is configured, and in the trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api.app import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import Keys, auth, sse_events
from tests.retrieve.rerank_server import RerankServer, serve


@pytest.fixture(scope="module")
def server() -> Iterator[RerankServer]:
    with serve() as s:
        yield s


@pytest.fixture(scope="module")
def client(api_home: Path, keys: Keys, server: RerankServer) -> Iterator[TestClient]:
    lore = Lore(
        load_settings(
            home=api_home,
            api={"rate_limit_per_minute": 0},
            rerank={"provider": "http", "base_url": server.base + "/v1", "rerank_k": 10},
        )
    )
    with TestClient(create_app(lore), headers=auth(keys.staff)) as c:
        yield c
    lore.close()


def test_search_reranks_by_default_and_not_when_asked_not_to(
    client: TestClient, server: RerankServer
) -> None:
    body = {"kb": "hb", "query": "How many days of annual leave?", "top_k": 5}
    on = client.post("/api/search", json=body).json()
    assert on["rerank"]["provider"] == "http" and on["rerank"]["candidates"] == 10
    assert all(h["rerank_score"] is not None for h in on["hits"])
    assert server.requests[-1][0] == "/v1/rerank"
    seen = len(server.requests)
    off = client.post("/api/search", json={**body, "rerank": False}).json()
    assert off["rerank"] is None and all(h["rerank_score"] is None for h in off["hits"])
    assert len(server.requests) == seen


def test_rerank_true_without_a_reranker_is_a_400(api_home: Path, keys: Keys) -> None:
    lore = Lore(load_settings(home=api_home, api={"rate_limit_per_minute": 0}, rerank={"provider": "none"}))
    try:
        with TestClient(create_app(lore), headers=auth(keys.staff)) as c:
            r = c.post("/api/search", json={"kb": "hb", "query": "annual leave", "rerank": True})
            assert r.status_code == 400 and "no reranker" in r.json()["detail"]
            assert c.post("/api/search", json={"kb": "hb", "query": "annual leave"}).status_code == 200
    finally:
        lore.close()


def test_ask_streams_a_rerank_status_and_keeps_it_in_the_trace(
    client: TestClient, server: RerankServer
) -> None:
    server.faults.extend(["500", "500"])  # the reranker fails: the answer still comes, in first-stage order
    events = sse_events(client.post("/api/ask", json={"kb": "hb", "question": "报销需要什么材料？"}).text)
    status = [d for k, d in events if k == "status" and d.get("stage") == "rerank"]
    end = events[-1][1]
    assert events[-1][0] == "end" and status and "first-stage order kept" in status[0]["note"]
    assert end["rerank"][0]["provider"] == "http"
    trace = client.get(f"/api/traces/{end['trace_id']}").json()
    stage = next(s for s in trace["data"]["stages"] if s["stage"] == "rerank")
    assert (
        stage["provider"] == "http" and stage["candidates"] > 0 and stage["rerank_ms"] >= 0 and stage["note"]
    )
    off = sse_events(
        client.post("/api/ask", json={"kb": "hb", "question": "报销需要什么材料？", "rerank": False}).text
    )
    assert not [d for k, d in off if k == "status" and d.get("stage") == "rerank"]
