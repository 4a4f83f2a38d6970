"""Issue 34 finding 6: a diff eval set's question had no length limit (7 minutes, then a 500). Every text
and list field of a request body now has a limit, eval sets included, refused with a 422 naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import Keys, auth

LIMIT = 2000  # answer.max_question_chars' default


@pytest.fixture(scope="module")
def small(api_home: Path, keys: Keys) -> Iterator[TestClient]:
    lore = Lore(
        load_settings(home=api_home, gate={"max_eval_questions": 3}, api={"rate_limit_per_minute": 0})
    )
    if "ev" not in [kb.name for kb in lore.catalog.list_kbs()]:  # one tenant's KB (hb holds tenant-b's too)
        doc = api_home / "refund_policy.md"
        doc.write_text("# Refunds\n\nThe refund window is 30 days from delivery.\n", encoding="utf-8")
        lore.create_kb("ev")
        lore.build("ev", [doc], activate=True)
    with TestClient(create_app(lore)) as client:
        yield client
    lore.close()


def diff(client: TestClient, keys: Keys, rows: list[dict[str, Any]], **body: Any) -> Any:
    jsonl = "\n".join(json.dumps(r) for r in rows)
    return client.post(
        "/api/kbs/ev/diff",
        json={"base": 1, "candidate": 1, "eval_jsonl": jsonl, **body},
        headers=auth(keys.admin),
    )


def test_an_over_long_eval_question_is_422_before_any_search(small: TestClient, keys: Keys) -> None:
    rows = [
        {"question": "refund window", "files": ["refund_policy.md"]},
        {"question": "x " * 3000, "files": ["a"]},
    ]
    r = diff(small, keys, rows, save_as="long")
    assert (
        r.status_code == 422
        and r.json()["detail"] == f"eval set line 2: question of 6000 characters, limit {LIMIT}"
    )
    # Nothing was kept under the name.
    listed = small.get("/api/kbs/ev/eval-sets", headers=auth(keys.admin)).json()["eval_sets"]
    assert "long" not in [s["name"] for s in listed]


def test_eval_set_questions_and_lists_are_capped(small: TestClient, keys: Keys) -> None:
    four = [{"question": f"question {i}", "files": ["a.md"]} for i in range(4)]
    r = diff(small, keys, four)
    assert r.status_code == 422 and "more than 3 questions (gate.max_eval_questions)" in r.json()["detail"]
    many_files = [{"question": "refund window", "files": [f"f{i}.md" for i in range(101)]}]
    r = diff(small, keys, many_files)
    assert (
        r.status_code == 422 and r.json()["detail"] == 'eval set line 1: "files" has 101 entries, limit 100'
    )
    ok = diff(small, keys, four[:3])
    assert ok.status_code == 200, ok.text


def test_a_malformed_eval_set_names_the_line_not_a_server_path(small: TestClient, keys: Keys) -> None:
    r = small.post(
        "/api/kbs/ev/diff",
        json={"base": 1, "candidate": 1, "eval_jsonl": '{"question": "q", "files": ["a"]}\n{not json'},
        headers=auth(keys.admin),
    )
    assert r.status_code == 400 and r.json()["detail"].startswith("eval set:2: not JSON"), r.text
    assert "/tmp" not in r.text and "eval.jsonl" not in r.text


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/feedback", {"trace_id": "t" * 300, "rating": 1}),
        ("POST", "/api/search", {"kb": "k" * 300, "query": "refund"}),
        ("POST", "/api/kbs/hb/rollback", {"reason": "r" * 5000}),
        ("POST", "/api/keys", {"roles": ["r" * 300]}),
        ("POST", "/api/ask", {"kb": "hb", "question": "refund?", "session_id": "s" * 300}),
    ],
)
def test_over_long_fields_are_422(small: TestClient, keys: Keys, method: str, path: str, body: dict) -> None:
    r = small.request(method, path, json=body, headers=auth(keys.admin))
    assert r.status_code == 422, r.text
    assert "at most" in r.text  # pydantic's message names the limit


# Fields bounded by a setting their route checks (answer.max_question_chars), not by the schema.
# Checked in code against `answer.max_question_chars` (a 422 naming that limit), not by the schema.
SETTING_CHECKED = {"AskRequest.question", "RouteBody.question", "SearchRequest.query", "ChatMessage.content"}


def unbounded(schemas: dict[str, Any], where: str, schema: dict[str, Any], seen: set[str]) -> set[str]:
    """Text fields without maxLength (or enum/pattern) and lists without maxItems under `schema`."""
    found: set[str] = set()
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            for prop, sub in schemas[name].get("properties", {}).items():
                found |= unbounded(schemas, f"{name}.{prop}", sub, seen)
        return found
    for alt in schema.get("anyOf", []) + schema.get("oneOf", []):
        found |= unbounded(schemas, where, alt, seen)
    kind = schema.get("type")
    if kind == "string" and not {"maxLength", "enum", "const", "pattern", "format"} & set(schema):
        found.add(where)
    if kind == "array":
        if "maxItems" not in schema:
            found.add(where)
        found |= unbounded(schemas, where + "[]", schema.get("items", {}), seen)
    return found


def test_every_text_and_list_field_of_a_body_has_a_limit(small: TestClient) -> None:
    spec = small.app.openapi()  # type: ignore[attr-defined]
    schemas = spec["components"]["schemas"]
    found: set[str] = set()
    for operations in spec["paths"].values():
        for op in operations.values():
            for content in op.get("requestBody", {}).get("content", {}).values():
                if "json" in str(content) or "$ref" in str(content):
                    found |= unbounded(schemas, "body", content["schema"], set())
    assert found - SETTING_CHECKED == set()
