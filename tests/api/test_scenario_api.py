"""Scenarios through the real service: SSE, WebSocket, OpenAI-compatible, scopes from keys, cache events."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import pytest
from websockets.sync.client import connect

from lore.api import create_app
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from tests.api.conftest import LiveServer, auth
from tests.api.test_stream import check_protocol, read_sse
from tests.scenario.conftest import copy_scenarios, scenario_lore

FAQ_Q = "如何申请年假？"


@dataclass
class HrKeys:
    employee: str  # tenant bluefin, role employee
    manager: str  # tenant bluefin, role manager
    admin: str  # tenant bluefin, role admin (time travel; no HR role)
    outsider: str  # tenant acme: not served by the scenario
    wrong_dataset: str  # tenant bluefin, dataset the scenario does not hold


@pytest.fixture(scope="module")
def hr_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, HrKeys, Lore]]:
    root = tmp_path_factory.mktemp("hr_api")
    scenarios = copy_scenarios(root / "scenarios")
    lore = scenario_lore(root / "home", scenarios, api={"rate_limit_per_minute": 0})
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    cat = lore.catalog
    keys = HrKeys(
        cat.create_api_key("bluefin", ["employee"])[1],
        cat.create_api_key("bluefin", ["manager"])[1],
        cat.create_api_key("bluefin", ["admin"])[1],
        cat.create_api_key("acme", ["employee"])[1],
        cat.create_api_key("bluefin", ["employee"], datasets=["finance"])[1],
    )
    with LiveServer(create_app(lore)) as server:
        yield server, keys, lore
    lore.close()


def sse_ask(server: LiveServer, key: str, **body: object) -> list[tuple[str, dict]]:
    with (
        httpx.Client(base_url=server.url, timeout=120) as http,
        http.stream("POST", "/api/ask", json=body, headers=auth(key)) as r,
    ):
        assert r.status_code == 200, r.read()
        return read_sse(r)


def test_faq_question_over_sse_carries_scenario_route_profile_plan(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    events = sse_ask(server, keys.employee, scenario="hr", question=FAQ_Q)
    end = check_protocol(events)
    start = events[0][1]
    assert start["scenario"] == "hr" and start["kb"] == "hr" and start["kb_version"] == 1
    assert end["route"] == "faq_exact" and end["answer"].startswith("在 HR 系统「我的假期」中提交年假申请")
    assert end["citations"][0]["file"] == "faq.csv" and end["citations"][0]["row"] == 2
    assert end["profile"]["name"] and "faq_direct_threshold" in end["plan"]
    assert end["scope"] == {
        "tenant": "bluefin",
        "datasets": ["hr-policies", "hr-faq", "hr-pay"],
        "visibility": ["public", "internal"],
        "roles": ["employee"],
        "scenario": "hr",
        "version": None,
    }
    trace = httpx.get(f"{server.url}/api/traces/{end['trace_id']}", headers=auth(keys.employee)).json()
    assert trace["route"] == "faq_exact" and trace["data"]["scenario"] == "hr"
    assert trace["data"]["profile"] == end["profile"]["name"] and trace["kb"] == "hr"


def test_greeting_and_handoff_are_normal_answers_with_route(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    events = sse_ask(server, keys.employee, scenario="hr", question="你好")
    end = check_protocol(events)
    assert end["route"] == "greeting" and "小鳍" in end["answer"] and not end["refused"]
    assert "".join(d["text"] for e, d in events if e == "token") == end["answer"]
    end = check_protocol(sse_ask(server, keys.employee, scenario="hr", question="我要转人工"))
    assert end["route"] == "handoff" and "8800" in end["answer"]


def test_roles_come_from_the_key_only(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    employee = check_protocol(sse_ask(server, keys.employee, scenario="hr", question="调薪什么时候生效"))
    assert employee["route"] == "refused"
    assert not any("compensation" in c["file"] for c in employee["citations"])
    manager = check_protocol(sse_ask(server, keys.manager, scenario="hr", question="调薪什么时候生效"))
    assert manager["route"] == "faq_exact" and "4 月 1 日" in manager["answer"]
    # An admin key holds no HR role: it sees only what is open to every role of its tenant.
    admin = check_protocol(sse_ask(server, keys.admin, scenario="hr", question="调薪什么时候生效"))
    assert admin["route"] == "refused" and admin["scope"]["roles"] == []
    r = httpx.post(
        f"{server.url}/api/ask",
        headers=auth(keys.employee),
        json={"scenario": "hr", "question": "年假", "roles": ["hr"]},
    )
    assert r.status_code == 422 and "roles" in r.text  # a scope cannot come from the body


def test_bad_requests_are_clear_4xx(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site

    def post(key: str, **body: object) -> httpx.Response:
        return httpx.post(f"{server.url}/api/ask", json=body, headers=auth(key), timeout=60)

    r = post(keys.outsider, scenario="hr", question=FAQ_Q)  # not acme's scenario: as if it did not exist
    assert r.status_code == 404 and r.json()["detail"] == "scenario 'hr' not found"
    r = post(keys.wrong_dataset, scenario="hr", question=FAQ_Q)
    assert r.status_code == 403 and "finance" in r.json()["detail"]
    r = post(keys.employee, scenario="hr", kb="hr", question=FAQ_Q)
    assert r.status_code == 422 and "exactly one of 'kb' and 'scenario'" in r.text
    assert post(keys.employee, question=FAQ_Q).status_code == 422
    r = post(keys.employee, scenario="payroll", question=FAQ_Q)
    assert r.status_code == 404 and r.json()["detail"] == "scenario 'payroll' not found"
    r = post(keys.employee, scenario="hr", source="holidays", question=FAQ_Q)
    assert r.status_code == 400 and "source" in r.json()["detail"] and "holidays" in r.json()["detail"]
    r = post(keys.employee, scenario="hr", version=1, question=FAQ_Q)
    assert r.status_code == 403 and "admin" in r.json()["detail"]
    end = check_protocol(sse_ask(server, keys.admin, scenario="hr", version=1, question="你好"))
    assert end["route"] == "greeting" and end["scope"]["version"] == 1


def test_named_source_narrows_retrieval(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    end = check_protocol(
        sse_ask(
            server,
            keys.employee,
            scenario="hr",
            source="leave",
            question="What is the meal allowance per day on business trips?",
        )
    )
    assert end["source"] == {"ids": ["leave"], "how": "given"}
    assert end["refused"] and not end["citations"]  # the allowance is in the expense documents, not in leave
    end = check_protocol(
        sse_ask(
            server,
            keys.employee,
            scenario="hr",
            source="expense",
            question="What is the meal allowance per day on business trips?",
        )
    )
    assert end["citations"] and "100" in end["answer"]
    assert all(c["file"].startswith("data/expense/") or c["file"] == "faq.csv" for c in end["citations"])


def test_websocket_asks_a_scenario(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    url = server.url.replace("http", "ws") + "/api/stream"
    with connect(url, additional_headers=auth(keys.employee), open_timeout=30) as ws:
        ws.send(json.dumps({"scenario": "hr", "question": FAQ_Q}))
        events = []
        while not events or events[-1][0] not in ("end", "error"):
            msg = json.loads(ws.recv(timeout=120))
            events.append((msg["event"], msg["data"]))
        end = check_protocol(events)
        assert events[0][1]["scenario"] == "hr" and end["route"] == "faq_exact" and end["citations"]
        ws.send(json.dumps({"scenario": "hr", "question": FAQ_Q, "kb": "hr"}))
        err = json.loads(ws.recv(timeout=60))
        assert err["event"] == "error" and "exactly one of 'kb' and 'scenario'" in err["data"]["message"]


def test_cache_hits_and_misses_are_in_the_trace(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    question = (
        f"未休完的年假可以顺延吗？ {uuid.uuid4().hex[:8]}"  # never asked before: the first lookups miss
    )

    def trace_of() -> dict:
        end = check_protocol(sse_ask(server, keys.employee, scenario="hr", question=question))
        assert end["route"] == "retrieval" and "顺延" in end["answer"]
        return httpx.get(f"{server.url}/api/traces/{end['trace_id']}", headers=auth(keys.employee)).json()

    first, second = trace_of(), trace_of()
    assert first["data"]["cache"] and not any(c["hit"] for c in first["data"]["cache"])
    assert second["data"]["cache"] and all(c["hit"] for c in second["data"]["cache"])
    assert [c["key"] for c in first["data"]["cache"]] == [c["key"] for c in second["data"]["cache"]]
    assert second["data"]["cache_hits"] == len(second["data"]["cache"])
    # Another scope never shares the entries: a manager's identical question misses.
    end = check_protocol(sse_ask(server, keys.manager, scenario="hr", question=question))
    manager = httpx.get(f"{server.url}/api/traces/{end['trace_id']}", headers=auth(keys.manager)).json()
    assert manager["data"]["cache"] and not any(c["hit"] for c in manager["data"]["cache"])


def test_openai_client_talks_to_a_scenario(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=keys.employee, max_retries=0, timeout=120)
    models = {m.id for m in client.models.list().data}
    assert {"hr", "scenario:hr"} <= models
    outsider = openai.OpenAI(base_url=server.url + "/v1", api_key=keys.outsider, max_retries=0)
    assert "scenario:hr" not in {m.id for m in outsider.models.list().data}

    reply = client.chat.completions.create(model="scenario:hr", messages=[{"role": "user", "content": FAQ_Q}])
    extra = reply.model_extra or {}
    assert reply.choices[0].message.content.startswith("在 HR 系统「我的假期」中提交年假申请")
    assert extra["citations"][0]["file"] == "faq.csv" and extra["lore"]["route"] == "faq_exact"
    assert extra["lore"]["scenario"] == "hr" and extra["lore"]["profile"]

    chunks = list(
        client.chat.completions.create(
            model="scenario:hr", stream=True, messages=[{"role": "user", "content": "你好"}]
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1].model_extra or {}
    assert "小鳍" in text and last["lore"]["route"] == "greeting"

    with pytest.raises(openai.NotFoundError, match="scenario 'hr' not found"):
        outsider.chat.completions.create(model="scenario:hr", messages=[{"role": "user", "content": FAQ_Q}])
    with pytest.raises(openai.NotFoundError, match="scenario 'nope' not found"):
        client.chat.completions.create(model="scenario:nope", messages=[{"role": "user", "content": FAQ_Q}])


def test_scenarios_listed_for_the_picker(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    listed = httpx.get(f"{server.url}/api/scenarios", headers=auth(keys.employee)).json()
    assert [s["id"] for s in listed] == ["hr"] and listed[0]["kb"] == "hr"
    assert {"id": "leave", "label": "假期与考勤"} in listed[0]["sources"]
    assert httpx.get(f"{server.url}/api/scenarios", headers=auth(keys.outsider)).json() == []
    assert httpx.get(f"{server.url}/api/scenarios").status_code == 401


def test_session_follow_ups_through_a_scenario(hr_site) -> None:  # type: ignore[no-untyped-def]
    server, keys, _ = hr_site
    first = check_protocol(sse_ask(server, keys.employee, scenario="hr", question="年假有几天？"))
    session = first["session_id"]
    events = sse_ask(server, keys.employee, scenario="hr", question="病假呢？", session_id=session)
    assert events[0][1]["query"] == "年假有几天？ 病假呢？" and events[0][1]["rewrite"] == "rule"
    # A greeting is never glued to the previous question: it stays a greeting.
    events = sse_ask(server, keys.employee, scenario="hr", question="你好", session_id=session)
    assert events[0][1]["query"] == "你好" and check_protocol(events)["route"] == "greeting"
