"""A question is routed once per request on every HTTP path: `prepare_ask` makes the scenario's stages
(one `Router`), decides with them whether a follow-up stands alone, and hands them to the answer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.scenario.routing import Route, Router
from tests.api.conftest import auth, sse_events
from tests.scenario.conftest import copy_scenarios, scenario_lore


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    root = tmp_path_factory.mktemp("route_once")
    scenarios = copy_scenarios(root / "scenarios")
    lore = scenario_lore(root / "home", scenarios, api={"rate_limit_per_minute": 0})
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    key = lore.catalog.create_api_key("bluefin", ["employee"])[1]
    with TestClient(create_app(lore)) as client:
        yield client, key
    lore.close()


class Counts:
    """Routers made and questions routed (a repeated look at the same question is not a second routing)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.routers, self.routed = 0, 0
        make, route = Router.__init__, Router._route

        def counting_init(router: Router, *args: object, **kwargs: object) -> None:
            self.routers += 1
            make(router, *args, **kwargs)  # type: ignore[arg-type]

        def counting_route(router: Router, q: str) -> Route:
            self.routed += 1
            return route(router, q)

        monkeypatch.setattr(Router, "__init__", counting_init)
        monkeypatch.setattr(Router, "_route", counting_route)

    def reset(self) -> None:
        self.routers, self.routed = 0, 0


def _sse(client: TestClient, key: str, question: str, session_id: str | None = None) -> dict:
    body = {"scenario": "hr", "question": question, "session_id": session_id}
    r = client.post("/api/ask", json=body, headers=auth(key))
    assert r.status_code == 200, r.text
    events = sse_events(r.text)
    assert events[-1][0] == "end", events[-1]
    return {"start": events[0][1], "end": events[-1][1]}


def _websocket(client: TestClient, key: str, question: str, session_id: str | None = None) -> dict:
    with client.websocket_connect("/api/stream", headers=auth(key)) as ws:
        ws.send_text(json.dumps({"scenario": "hr", "question": question, "session_id": session_id}))
        events = []
        while not events or events[-1]["event"] not in ("end", "error"):
            events.append(ws.receive_json())
    assert events[-1]["event"] == "end", events[-1]
    return {"start": events[0]["data"], "end": events[-1]["data"]}


def _openai(client: TestClient, key: str, question: str, session_id: str | None = None) -> dict:
    messages = [{"role": "user", "content": "如何申请年假？"}] if session_id else []
    body = {"model": "scenario:hr", "messages": [*messages, {"role": "user", "content": question}]}
    r = client.post("/v1/chat/completions", json=body, headers=auth(key))
    assert r.status_code == 200, r.text
    return {"end": r.json()["lore"]}


Ask = Callable[[TestClient, str, str, "str | None"], dict]


@pytest.mark.parametrize("ask", [_sse, _websocket, _openai], ids=["sse", "websocket", "openai"])
@pytest.mark.parametrize(
    ("question", "route"),
    [("你好", "greeting"), ("如何申请年假？", "faq_exact")],
    ids=["direct", "retrieval"],
)
def test_a_follow_up_is_routed_once(
    hr: tuple[TestClient, str], monkeypatch: pytest.MonkeyPatch, ask: Ask, question: str, route: str
) -> None:
    client, key = hr
    first = _sse(client, key, "如何申请年假？")  # opens a session: the next question has history
    counts = Counts(monkeypatch)
    result = ask(client, key, question, first["start"]["session_id"])
    assert result["end"]["route"] == route
    assert (counts.routers, counts.routed) == (1, 1)


def test_a_first_question_is_routed_once(hr: tuple[TestClient, str], monkeypatch: pytest.MonkeyPatch) -> None:
    client, key = hr
    counts = Counts(monkeypatch)
    for ask in (_sse, _websocket, _openai):
        counts.reset()
        assert ask(client, key, "你好", None)["end"]["route"] == "greeting"
        assert (counts.routers, counts.routed) == (1, 1), ask.__name__
