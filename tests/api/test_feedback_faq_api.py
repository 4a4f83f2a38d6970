"""Feedback into FAQ: an administrator lists the ratings of a KB and turns one into a FAQ row of a scenario
of that KB with a corrected answer; the rating is marked handled. An employee cannot; another tenant's
administrator neither sees nor converts it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.scenario.faq import FaqRow, read_faq
from tests.api.conftest import auth, sse_events
from tests.scenario.conftest import copy_scenarios, scenario_lore

QUESTION = "How many days of annual leave do new hires get?"
ANSWER = "New hires get fifteen days of annual leave in their first year."


def _faq(lore: Lore) -> list[FaqRow]:
    sc = Scenarios(lore.settings.scenario.scenarios_dir).get("hr")
    return read_faq(sc.faq_path, sc)[0]


@pytest.fixture(scope="module", name="hr")
def hr_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Lore, dict[str, str]]]:
    """The sample `hr` scenario (copied: its faq.csv changes), built, with a thumbs-down on one answer."""
    root = tmp_path_factory.mktemp("feedback_faq")
    folder = copy_scenarios(root / "scenarios")
    lore = scenario_lore(root / "home", folder, api={"rate_limit_per_minute": 0})
    build_scenario(lore, Scenarios(folder).get("hr"), activate=True)
    cat = lore.catalog
    keys = {
        "employee": cat.create_api_key("bluefin", ["employee"])[1],
        "admin": cat.create_api_key("bluefin", ["admin"])[1],
        "outsider": cat.create_api_key("acme", ["admin"])[1],
    }
    with TestClient(create_app(lore)) as client:
        events = sse_events(
            client.post(
                "/api/ask", json={"scenario": "hr", "question": QUESTION}, headers=auth(keys["employee"])
            ).text
        )
        trace = next(d for e, d in events if e == "end")["trace_id"]
        r = client.post(
            "/api/feedback",
            json={"trace_id": trace, "rating": -1, "note": "wrong number"},
            headers=auth(keys["employee"]),
        )
        assert r.status_code == 201, r.text
        yield client, lore, keys
    lore.close()


def test_an_admin_turns_a_rating_into_a_faq_row(hr: tuple[TestClient, Lore, dict[str, str]]) -> None:
    client, lore, keys = hr
    kb = Scenarios(lore.settings.scenario.scenarios_dir).get("hr").kb_name
    h = auth(keys["admin"])
    listed = client.get(f"/api/kbs/{kb}/feedback?handled=false", headers=h)
    assert listed.status_code == 200, listed.text
    row = next(f for f in listed.json() if f["question"] == QUESTION)
    assert row["rating"] == -1 and row["handled_at"] is None and row["note"] == "wrong number"
    made = client.post(f"/api/feedback/{row['id']}/faq", json={"scenario": "hr", "answer": ANSWER}, headers=h)
    assert made.status_code == 201, made.text
    out = made.json()
    assert out["faq"]["question"] == QUESTION and out["faq"]["answer"] == ANSWER and out["scenario"] == "hr"
    assert out["feedback"]["handled_at"] and out["feedback"]["handled_as"] == f"faq:hr:{out['faq']['index']}"
    assert any(r.question == QUESTION and r.answer == ANSWER for r in _faq(lore))
    rows = client.get("/api/scenarios/hr/faq", headers=h).json()["rows"]
    assert any(r["question"] == QUESTION and r["answer"] == ANSWER for r in rows)
    assert not [
        f
        for f in client.get(f"/api/kbs/{kb}/feedback?handled=false", headers=h).json()
        if f["id"] == row["id"]
    ]
    handled = client.get(f"/api/kbs/{kb}/feedback?handled=true", headers=h).json()
    assert [f["id"] for f in handled] == [row["id"]] and handled[0]["handled_by"]
    audit = client.get("/api/audit", headers=h).json()
    assert any(e["action"] == "faq_add" for e in audit)


def test_employees_and_other_tenants_cannot(hr: tuple[TestClient, Lore, dict[str, str]]) -> None:
    client, lore, keys = hr
    kb = Scenarios(lore.settings.scenario.scenarios_dir).get("hr").kb_name
    fb = next(f for f in lore.catalog.list_feedback(kb=kb) if f.question == QUESTION)
    before = _faq(lore)
    body = {"scenario": "hr", "answer": "Ninety days."}
    assert client.get(f"/api/kbs/{kb}/feedback", headers=auth(keys["employee"])).status_code == 403
    assert (
        client.post(f"/api/feedback/{fb.id}/faq", json=body, headers=auth(keys["employee"])).status_code
        == 403
    )
    seen = client.get(f"/api/kbs/{kb}/feedback", headers=auth(keys["outsider"]))
    assert seen.status_code == 404 and QUESTION not in seen.text
    assert QUESTION not in client.get("/api/feedback", headers=auth(keys["outsider"])).text
    r = client.post(f"/api/feedback/{fb.id}/faq", json=body, headers=auth(keys["outsider"]))
    assert r.status_code == 404 and QUESTION not in r.text
    h = auth(keys["admin"])
    for bad, status in (
        ({"scenario": "nope", "answer": "x"}, 404),
        ({"scenario": "hr", "answer": ""}, 422),
        ({"scenario": "hr"}, 422),
    ):
        assert client.post(f"/api/feedback/{fb.id}/faq", json=bad, headers=h).status_code == status, bad
    assert client.post("/api/feedback/999999/faq", json=body, headers=h).status_code == 404
    assert client.post("/api/feedback/0/faq", json=body, headers=h).status_code == 404
    after = _faq(lore)
    assert len(after) == len(before)  # nothing refused was written
