"""A knowledge base's own chunking settings: read, set, reset, refused to employees and other tenants, its
strategy ("structure" or "semantic"), a preview of the chunks an upload or pasted text makes, and the next
build recording the KB's sizes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.ingest.chunking import SCHEMA_NAME, SEMANTIC_SCHEMA
from tests.api.conftest import auth

ARTICLE = "# Travel policy\n\n## Booking\n\n" + " ".join(
    f"Sentence {i} explains how a trip is booked through the travel desk and approved." for i in range(40)
)


@pytest.fixture(scope="module", name="site")
def site_fixture(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, Lore, dict[str, str]]]:
    home = tmp_path_factory.mktemp("chunking")
    lore = Lore(load_settings(home=home, api={"rate_limit_per_minute": 0}))
    lore.create_kb("travel", owner_tenant="acme")
    keys = {
        "admin": lore.catalog.create_api_key("acme", ["admin"])[1],
        "employee": lore.catalog.create_api_key("acme", ["employee"])[1],
        "outsider": lore.catalog.create_api_key("bluefin", ["admin"])[1],
    }
    with TestClient(create_app(lore)) as client:
        r = client.post(
            "/api/kbs/travel/files",
            headers=auth(keys["admin"]),
            files={"file": ("travel.md", ARTICLE.encode())},
        )
        assert r.status_code == 201, r.text
        yield client, lore, keys
    lore.close()


def test_settings_default_set_refused_and_reset(site: tuple[TestClient, Lore, dict[str, str]]) -> None:
    client, lore, keys = site
    h = auth(keys["admin"])
    first = client.get("/api/kbs/travel/chunking", headers=h)
    assert first.status_code == 200, first.text
    s = first.json()
    c = lore.settings.chunk
    assert not s["own"] and s["child_size"] == c.child_size and s["defaults"]["parent_size"] == c.parent_size
    assert s["strategy"] == s["defaults"]["strategy"] == c.strategy == "structure"
    assert client.get("/api/kbs/travel/chunking", headers=auth(keys["employee"])).status_code == 403
    assert client.get("/api/kbs/travel/chunking", headers=auth(keys["outsider"])).status_code == 404
    put = {"child_size": 100, "child_overlap": 10, "parent_size": 400}
    assert client.put("/api/kbs/travel/chunking", json=put, headers=auth(keys["employee"])).status_code == 403
    assert client.put("/api/kbs/travel/chunking", json=put, headers=auth(keys["outsider"])).status_code == 404
    for bad in (
        {"child_size": 100, "child_overlap": 100},
        {"child_size": 500, "parent_size": 400},
        {"child_size": 1},
        {"strategy": "fixed"},
    ):
        r = client.put("/api/kbs/travel/chunking", json=bad, headers=h)
        assert r.status_code == 422, (bad, r.text)
    r = client.put("/api/kbs/travel/chunking", json=put, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["own"] and r.json()["schema_name"].endswith("c100-o10-p400")
    assert r.json()["updated_by"] and r.json()["strategy"] == "structure"  # the configured one, kept
    kb = lore.catalog.get_kb("travel")
    assert lore.kb_chunk_params(kb).schema == r.json()["schema_name"]
    # A size left out keeps the KB's own.
    r = client.put("/api/kbs/travel/chunking", json={"child_overlap": 20}, headers=h)
    assert r.json()["child_size"] == 100 and r.json()["child_overlap"] == 20
    r = client.put("/api/kbs/travel/chunking", json={"reset": True}, headers=h)
    assert r.status_code == 200 and not r.json()["own"] and r.json()["child_size"] == c.child_size
    assert lore.catalog.get_chunk_settings(kb.id) is None


def test_strategy_round_trips_and_falls_back(site: tuple[TestClient, Lore, dict[str, str]]) -> None:
    client, lore, keys = site
    h = auth(keys["admin"])
    kb = lore.catalog.get_kb("travel")
    r = client.put("/api/kbs/travel/chunking", json={"strategy": "semantic", "child_size": 120}, headers=h)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["own"] and s["strategy"] == "semantic" and s["defaults"]["strategy"] == "structure"
    assert s["schema_name"].startswith(f"{SEMANTIC_SCHEMA}:") and s["child_size"] == 120
    assert client.get("/api/kbs/travel/chunking", headers=h).json() == s
    own = lore.catalog.get_chunk_settings(kb.id)
    assert own is not None and own.strategy == "semantic"
    params = lore.kb_chunk_params(kb)
    assert (
        params.strategy == "semantic" and params.schema.startswith("semantic-v1") and params.child_size == 120
    )
    assert params.schema == s["schema_name"]
    # A preview follows the KB's strategy, or the one it is given (as for sizes).
    pasted = {"text": ARTICLE, "name": "travel.md"}
    semantic = client.post("/api/kbs/travel/chunking/preview", json=pasted, headers=h)
    assert semantic.status_code == 200, semantic.text
    assert semantic.json()["strategy"] == "semantic" and semantic.json()["schema_name"] == params.schema
    assert semantic.json()["chunks"] >= 1
    structure = client.post(
        "/api/kbs/travel/chunking/preview", json={**pasted, "strategy": "structure"}, headers=h
    )
    assert structure.status_code == 200, structure.text
    assert structure.json()["strategy"] == "structure"
    assert (
        structure.json()["schema_name"] == f"{SCHEMA_NAME}:c120-o{params.child_overlap}-p{params.parent_size}"
    )
    # Sizes alone keep the KB's strategy; the strategy alone keeps its sizes.
    r = client.put("/api/kbs/travel/chunking", json={"child_overlap": 12}, headers=h)
    assert r.json()["strategy"] == "semantic" and r.json()["child_overlap"] == 12
    r = client.put("/api/kbs/travel/chunking", json={"strategy": "structure"}, headers=h)
    assert r.json()["strategy"] == "structure" and r.json()["child_size"] == 120
    assert r.json()["schema_name"].startswith(f"{SCHEMA_NAME}:")
    for bad in (
        {"strategy": ""},
        {"strategy": "Semantic"},
        {"strategy": "semantic "},
        {"strategy": ["semantic"]},
    ):
        refused = client.put("/api/kbs/travel/chunking", json=bad, headers=h)
        assert refused.status_code == 422, (bad, refused.text)
    assert lore.kb_chunk_params(kb).strategy == "structure"  # nothing written by a refused body
    client.put("/api/kbs/travel/chunking", json={"strategy": "semantic"}, headers=h)
    # Dropping the KB's own settings: the configured strategy again.
    r = client.put("/api/kbs/travel/chunking", json={"reset": True}, headers=h)
    assert r.json()["strategy"] == lore.settings.chunk.strategy == "structure" and not r.json()["own"]
    assert lore.kb_chunk_params(kb) == lore.chunk_params and lore.kb_chunk_params(kb).strategy == "structure"


def test_a_kb_falls_back_to_a_configured_semantic_strategy(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path, chunk={"strategy": "semantic"}))
    try:
        kb = lore.create_kb("policies")
        assert kb.chunk_schema.startswith("semantic-v1")  # made with the configured schema
        assert lore.kb_chunk_params(kb).strategy == "semantic"
        lore.catalog.set_chunk_settings(kb.id, (100, 10, 400), by="admin", strategy="structure")
        assert lore.kb_chunk_params(kb).schema == f"{SCHEMA_NAME}:c100-o10-p400"
        lore.catalog.set_chunk_settings(kb.id, None, by="admin")
        params = lore.kb_chunk_params(kb)
        assert params.strategy == "semantic" and params.schema.startswith("semantic-v1:")
    finally:
        lore.close()


def test_preview_of_an_upload_and_of_pasted_text(site: tuple[TestClient, Lore, dict[str, str]]) -> None:
    client, _, keys = site
    h = auth(keys["admin"])
    small = client.post(
        "/api/kbs/travel/chunking/preview",
        json={"file": "travel.md", "child_size": 60, "child_overlap": 0, "parent_size": 200},
        headers=h,
    )
    large = client.post(
        "/api/kbs/travel/chunking/preview",
        json={"file": "travel.md", "child_size": 400, "child_overlap": 0, "parent_size": 2000},
        headers=h,
    )
    assert small.status_code == large.status_code == 200, small.text + large.text
    s, big = small.json(), large.json()
    assert s["chunks"] > big["chunks"] >= 1 and s["source"] == "travel.md"
    assert s["schema_name"].endswith("c60-o0-p200") and s["strategy"] == "structure"
    assert all(p["length"] <= 60 for p in s["preview"])
    assert all(p["heading_path"][:2] == ["Travel policy", "Booking"] for p in s["preview"])
    assert s["parents"] > big["parents"] >= 1
    pasted = client.post(
        "/api/kbs/travel/chunking/preview",
        json={"text": "# Leave\n\nEmployees get twenty days of leave.\n", "name": "leave.md"},
        headers=h,
    )
    assert pasted.status_code == 200, pasted.text
    p = pasted.json()
    assert p["chunks"] == 1 and p["preview"][0]["heading_path"] == ["Leave"]
    assert p["preview"][0]["text"].endswith("twenty days of leave.")
    # Refusals and bad input: 4xx, never a 500.
    for body, status in (
        ({"file": "travel.md", "text": "both"}, 422),
        ({}, 422),
        ({"file": "missing.md"}, 404),
        ({"text": "x", "name": "../evil.md"}, 400),
        ({"text": "x", "child_overlap": 300}, 422),
        ({"text": "x", "strategy": "paragraphs"}, 422),
    ):
        r = client.post("/api/kbs/travel/chunking/preview", json=body, headers=h)
        assert r.status_code == status, (body, r.text)
    body = {"text": "# A\n\nb\n"}
    assert (
        client.post("/api/kbs/travel/chunking/preview", json=body, headers=auth(keys["employee"])).status_code
        == 403
    )
    r = client.post(
        "/api/kbs/travel/chunking/preview", json={"file": "travel.md"}, headers=auth(keys["outsider"])
    )
    assert r.status_code == 404 and "travel desk" not in r.text


def test_the_next_build_uses_the_kbs_own_sizes(
    site: tuple[TestClient, Lore, dict[str, str]], tmp_path: Path
) -> None:
    client, lore, keys = site
    h = auth(keys["admin"])
    put = {"child_size": 80, "child_overlap": 0, "parent_size": 300}
    assert client.put("/api/kbs/travel/chunking", json=put, headers=h).status_code == 200
    preview = client.post("/api/kbs/travel/chunking/preview", json={"file": "travel.md"}, headers=h).json()
    source = tmp_path / "travel.md"
    source.write_text(ARTICLE, encoding="utf-8")
    result = lore.build("travel", [source], chunk_metadata=lambda _s: {"tenant_id": "acme"})
    kb = lore.catalog.get_kb("travel")
    assert result.version.chunk_schema == preview["schema_name"]
    assert lore.catalog.get_version(kb.id, result.version.seq).chunk_schema.endswith("c80-o0-p300")
    assert lore.catalog.count_chunks(kb.id) == preview["chunks"]
    client.put("/api/kbs/travel/chunking", json={"reset": True}, headers=h)
