"""SSE and WebSocket streams against a real uvicorn: event protocol, traces, sessions, disconnects."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.answer.chat_server import answer, reply, serve
from tests.api.conftest import Keys, LiveServer, auth, iter_sse, sse_events


def read_sse(response: httpx.Response) -> list[tuple[str, dict]]:
    return list(iter_sse(response.iter_lines()))


def check_protocol(events: list[tuple[str, dict]]) -> dict:
    kinds = [k for k, _ in events]
    assert (
        kinds[0] == "start"
        and kinds[-1] in ("end", "error")
        and kinds.count("end") + kinds.count("error") == 1
    )
    assert set(kinds[1:-1]) <= {"status", "token"}
    start, last = events[0][1], events[-1][1]
    assert start["trace_id"] == last["trace_id"] and start["session_id"] == last["session_id"]
    assert {"kb", "kb_version", "scenario"} <= set(start)
    return last


def test_sse_stream_through_uvicorn_then_trace(live: LiveServer, keys: Keys) -> None:
    with httpx.Client(base_url=live.url, headers=auth(keys.staff), timeout=60) as http:
        with http.stream("POST", "/api/ask", json={"kb": "hb", "question": "报销需要什么材料？"}) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = read_sse(r)
        end = check_protocol(events)
        assert "发票原件" in end["answer"] and end["citations"] and not end["refused"]
        tokens = "".join(d["text"] for k, d in events if k == "token")
        assert "发票原件" in tokens
        stages = [d["stage"] for k, d in events if k == "status"]
        # the shipped default reranker (`ltr`) runs as its own stage, with its candidates and time
        assert stages[:5] == ["prepare", "retrieve", "rerank", "context", "evidence"]
        rerank = next(d for k, d in events if k == "status" and d["stage"] == "rerank")
        assert rerank["provider"] == "ltr" and rerank["candidates"] > 0 and rerank["ms"] >= 0
        assert end["rerank"] == [{k: v for k, v in rerank.items() if k != "stage"}]

        trace = http.get(f"/api/traces/{end['trace_id']}").json()
        assert trace["status"] == "ok" and trace["route"] == "retrieval" and trace["transport"] == "sse"
        assert trace["first_token_ms"] > 0 and trace["total_ms"] >= trace["first_token_ms"]
        assert [s["stage"] for s in trace["data"]["stages"]] == stages
        assert all(s["ms"] >= 0 for s in trace["data"]["stages"])
        assert trace["data"]["confidences"]["evidence"] == end["evidence_confidence"]
        assert trace["data"]["plan"]["top_k"] > 0 and trace["data"]["hits"]["citations"] == len(
            end["citations"]
        )
        assert trace["data"]["filter"] == {
            "tenant_ids": ["default"],
            "dataset_ids": None,
            "roles": ["staff"],
            "sources": None,
        }


def test_unknown_kb_and_malformed_json(live: LiveServer, keys: Keys) -> None:
    with httpx.Client(base_url=live.url, headers=auth(keys.staff), timeout=30) as http:
        r = http.post("/api/ask", json={"kb": "nope", "question": "hi"})
        assert r.status_code == 404 and "knowledge base 'nope' not found" in r.json()["detail"]
        r = http.post(
            "/api/ask", content=b'{"kb": "hb", "question": ', headers={"content-type": "application/json"}
        )
        assert r.status_code == 422 and "json" in r.text.lower()
        r = http.post("/api/ask", json={"kb": "hb"})
        assert r.status_code == 422 and "question" in r.text


def test_empty_question_is_an_error_event_with_trace(live: LiveServer, keys: Keys) -> None:
    with httpx.Client(base_url=live.url, headers=auth(keys.staff), timeout=30) as http:
        with http.stream("POST", "/api/ask", json={"kb": "hb", "question": "   "}) as r:
            events = read_sse(r)
        last = check_protocol(events)
        assert events[-1][0] == "error" and "question" in last["message"]
        assert http.get(f"/api/traces/{last['trace_id']}").json()["status"] == "error"


def test_follow_up_uses_session_history(live: LiveServer, keys: Keys) -> None:
    with httpx.Client(base_url=live.url, headers=auth(keys.staff), timeout=60) as http:
        with http.stream("POST", "/api/ask", json={"kb": "hb", "question": "LF-200 的保修期多久？"}) as r:
            first = check_protocol(read_sse(r))
        with http.stream(
            "POST",
            "/api/ask",
            json={"kb": "hb", "question": "那可以延长吗？", "session_id": first["session_id"]},
        ) as r:
            events = read_sse(r)
        second = check_protocol(events)
        assert second["session_id"] == first["session_id"]
        assert (
            events[0][1]["query"] == "LF-200 的保修期多久？ 那可以延长吗？"
        )  # rewritten with the earlier turn
        assert any("12" in c["text"] for c in second["citations"])  # the extension passage (12 months)
        session = http.get(f"/api/sessions/{first['session_id']}").json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant", "user", "assistant"]
        assert session["messages"][2]["query"] == events[0][1]["query"]
        assert "LF-200" in session["summary"]


def test_websocket_stream_several_questions(live: LiveServer, keys: Keys) -> None:
    url = live.url.replace("http", "ws") + "/api/stream"
    with connect(url, additional_headers=auth(keys.staff), open_timeout=10) as ws:
        ws.send(json.dumps({"kb": "hb", "question": "What is the refund window?"}))
        events = _ws_events(ws)
        end = check_protocol(events)
        assert "30 days" in end["answer"] and end["citations"]
        ws.send("{not json")
        bad = json.loads(ws.recv(timeout=10))
        assert bad["event"] == "error" and "bad request" in bad["data"]["message"]
        ws.send(json.dumps({"kb": "nope", "question": "x"}))
        assert json.loads(ws.recv(timeout=10))["data"]["status"] == 404
        ws.send(json.dumps({"kb": "hb", "question": "How many days per week can I work remotely?"}))
        assert check_protocol(_ws_events(ws))["trace_id"] != end["trace_id"]
    with connect(live.url.replace("http", "ws") + f"/api/stream?access_token={keys.staff}") as ws:
        ws.send(json.dumps({"kb": "hb", "question": "What is the refund window?"}))
        assert _ws_events(ws)[-1][0] == "end"


def test_websocket_without_valid_key_is_refused(live: LiveServer, keys: Keys) -> None:
    url = live.url.replace("http", "ws") + "/api/stream"
    for headers in ({}, auth(keys.revoked)):
        with pytest.raises(InvalidStatus) as info:
            connect(url, additional_headers=headers, open_timeout=10)
        assert info.value.response.status_code == 401


def _ws_events(ws) -> list[tuple[str, dict]]:  # type: ignore[no-untyped-def]
    events = []
    while True:
        msg = json.loads(ws.recv(timeout=60))
        events.append((msg["event"], msg["data"]))
        if msg["event"] in ("end", "error"):
            return events


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_client_disconnect_mid_stream_leaves_no_task(api_home: Path, keys: Keys, transport: str) -> None:
    with serve() as llm:
        llm.script.append(answer("Refunds are possible ", "within 30 days [1].", gate_after=1, state=llm))
        lore = Lore(
            load_settings(
                home=api_home, answer={"generator": "openai", "llm_model": "m", "llm_base_url": llm.url}
            )
        )
        app = create_app(lore)
        state = app.state.service
        try:
            with LiveServer(app) as server:
                body = {"kb": "hb", "question": "What is the refund window?"}
                if transport == "sse":
                    with (
                        httpx.Client(base_url=server.url, headers=auth(keys.staff), timeout=30) as http,
                        http.stream("POST", "/api/ask", json=body) as r,
                    ):
                        trace_id = _until_token_sse(r)
                else:
                    with connect(
                        server.url.replace("http", "ws") + "/api/stream", additional_headers=auth(keys.staff)
                    ) as ws:
                        ws.send(json.dumps(body))
                        trace_id = _until_token_ws(ws)
                # The LLM is held mid-answer: the server must notice the client is gone and end the stream
                # by itself (the rest of the answer must not be what ends it, or the trace would say ok).
                deadline = time.monotonic() + 20
                while state.streams and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert not state.streams
                llm.gate.set()  # release the LLM's connection
                trace = _wait_trace(lore, trace_id)
                assert trace.status == "cancelled" and trace.first_token_ms is not None
        finally:
            lore.close()


def _until_token_sse(r: httpx.Response) -> str:
    trace_id = ""
    for kind, data in iter_sse(r.iter_lines()):
        if kind == "start":
            trace_id = data["trace_id"]
        if kind == "token":
            return trace_id
    raise AssertionError("no token")


def _until_token_ws(ws) -> str:  # type: ignore[no-untyped-def]
    trace_id = ""
    while True:
        msg = json.loads(ws.recv(timeout=30))
        if msg["event"] == "start":
            trace_id = msg["data"]["trace_id"]
        if msg["event"] == "token":
            return trace_id


def _wait_trace(lore: Lore, trace_id: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 10
    while True:
        try:
            return lore.catalog.get_trace(trace_id, "default")
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_store_failure_mid_request_is_an_error_event(api_home: Path, keys: Keys) -> None:
    from fastapi.testclient import TestClient

    lore = Lore(load_settings(home=api_home))
    try:
        with TestClient(create_app(lore), headers=auth(keys.staff)) as client:
            lore.store(lore.catalog.get_kb("hb")).close()  # the store goes away after start-up
            r = client.post("/api/ask", json={"kb": "hb", "question": "What is the refund window?"})
            events = sse_events(r.text)
            last = check_protocol(events)
            assert events[-1][0] == "error" and "internal error" in last["message"] and last["trace_id"]
            assert client.get(f"/api/traces/{last['trace_id']}").json()["status"] == "error"
    finally:
        lore.close()


def json_completion_reply(text: str):  # type: ignore[no-untyped-def]
    """A plain (non-streamed) chat completion, as the rewrite step asks for."""
    return reply(
        200,
        {
            "id": "c",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
        },
    )


def test_follow_up_rewritten_by_the_llm_when_configured(api_home: Path, keys: Keys) -> None:
    from fastapi.testclient import TestClient

    with serve() as llm:
        lore = Lore(
            load_settings(
                home=api_home, answer={"generator": "openai", "llm_model": "m", "llm_base_url": llm.url}
            )
        )
        try:
            with TestClient(create_app(lore), headers=auth(keys.staff)) as client:
                llm.script.append(answer("LF-200 comes with a 24-month warranty [1]."))
                r = client.post(
                    "/api/ask", json={"kb": "hb", "question": "What is the warranty of the LF-200?"}
                )
                session = sse_events(r.text)[0][1]["session_id"]
                llm.script += [
                    json_completion_reply("Can the LF-200 warranty be extended?"),
                    answer("Yes, by 12 months [1]."),
                ]
                r = client.post(
                    "/api/ask", json={"kb": "hb", "question": "Can it be extended?", "session_id": session}
                )
                start = sse_events(r.text)[0][1]
                assert start["query"] == "Can the LF-200 warranty be extended?" and start["rewrite"] == "llm"
                rewrite_prompt = json.dumps(llm.requests[1]["messages"], ensure_ascii=False)
                assert "What is the warranty of the LF-200?" in rewrite_prompt
                assert "Can it be extended?" in rewrite_prompt
                assert "Can the LF-200 warranty be extended?" in json.dumps(llm.requests[2]["messages"])

                llm.script.append(
                    reply(400, {"error": "bad request"})
                )  # the rewrite fails: the rule takes over
                llm.script.append(answer("Yes [1]."))
                r = client.post("/api/ask", json={"kb": "hb", "question": "And that?", "session_id": session})
                start = sse_events(r.text)[0][1]
                assert start["rewrite"] == "rule" and start["query"].endswith("And that?")
                trace = client.get(f"/api/traces/{start['trace_id']}").json()
                assert "LLM rewrite failed" in trace["data"]["rewrite"]["note"]
        finally:
            lore.close()


def test_deep_mode_and_rewrite_over_sse_and_websocket(live: LiveServer, keys: Keys) -> None:
    with httpx.Client(base_url=live.url, headers=auth(keys.staff), timeout=60) as http:
        body = {"kb": "hb", "question": "对比LF-200和LF-500的保修期", "mode": "deep"}
        with http.stream("POST", "/api/ask", json=body) as r:
            events = read_sse(r)
        end = check_protocol(events)
        assert events[0][1]["mode"] == "deep" and end["mode"] == "deep" and len(end["sub_questions"]) == 2
        rounds = [d for k, d in events if k == "status" and d.get("stage") == "retrieve"]
        assert rounds and all(d["round"] == 1 for d in rounds)
        trace = http.get(f"/api/traces/{end['trace_id']}").json()
        assert trace["data"]["mode"] == "deep" and trace["data"]["rounds"] == end["rounds"]
        assert any(s["stage"] == "verdict" and "verdict" in s for s in trace["data"]["stages"])
        assert http.post("/api/ask", json={**body, "mode": "turbo"}).status_code == 422
    url = live.url.replace("http", "ws") + "/api/stream"
    with connect(url, additional_headers=auth(keys.staff), open_timeout=10) as ws:
        ws.send(json.dumps({"kb": "hb", "question": "What is the refund window?", "rewrite": "on"}))
        events = _ws_events(ws)
        end = check_protocol(events)
        assert events[0][1]["query_rewrite"] == "on" and "30 days" in end["answer"] and not end["refused"]
