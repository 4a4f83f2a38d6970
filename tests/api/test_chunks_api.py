"""Unversioned ingest stamped with the key's tenant, and add-by-chunks (preview, edit, commit) over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, build_and_wait
from tests.conftest import EXAMPLES

POLICY = (
    b"# Travel policy\n\n## Hotels\n\nHotel stays are capped at 180 euros per night in capital cities.\n\n"
    b"## Meals\n\nThe meal allowance is 45 euros per day on business trips.\n"
)


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[TestClient, Lore]]:
    lore = Lore(load_settings(home=tmp_path / "home", api={"rate_limit_per_minute": 0}))
    with TestClient(create_app(lore)) as client:
        yield client, lore
    lore.close()


def _key(lore: Lore, tenant: str, roles: list[str], datasets: list[str] | None = None) -> dict[str, str]:
    return auth(lore.catalog.create_api_key(tenant, roles, datasets)[1])


def _hits(client: TestClient, key: dict[str, str], kb: str, query: str) -> list[dict]:
    r = client.post("/api/search", json={"kb": kb, "query": query}, headers=key)
    assert r.status_code == 200, r.text
    return r.json()["hits"]


def _upload(client: TestClient, key: dict[str, str], kb: str, name: str, data: bytes) -> None:
    r = client.post(f"/api/kbs/{kb}/files", files=[("file", (name, data))], headers=key)
    assert r.status_code == 201, r.text


def test_unversioned_ingest_stamps_the_key_tenant_and_dataset(site: tuple[TestClient, Lore]) -> None:
    client, lore = site
    acme_admin = _key(lore, "acme", ["admin"], ["sales"])
    acme_sales, acme_hr = _key(lore, "acme", ["staff"], ["sales"]), _key(lore, "acme", ["staff"], ["hr"])
    default_staff = _key(lore, "default", ["staff"])
    assert client.post("/api/kbs", json={"name": "live"}, headers=acme_admin).status_code == 201
    _upload(client, acme_admin, "live", "faq.csv", (EXAMPLES / "faq.csv").read_bytes())
    r = client.post("/api/kbs/live/ingest", json={}, headers=acme_admin)
    assert r.status_code == 200 and r.json()["counts"] == {"ingested": 1}, r.text
    found = _hits(client, acme_sales, "live", "refund window")
    assert found and {h["file"] for h in found} == {"faq.csv"}
    r = client.post("/api/search", json={"kb": "live", "query": "refund window"}, headers=default_staff)
    assert r.status_code == 404  # another tenant's KB: as if it did not exist
    assert _hits(client, acme_hr, "live", "refund window") == []  # the chunks went to dataset "sales"


def test_preview_edit_commit_chunks(site: tuple[TestClient, Lore]) -> None:
    client, lore = site
    admin = _key(lore, "acme", ["admin"])
    staff, other = _key(lore, "acme", ["staff"]), _key(lore, "globex", ["staff"])
    client.post("/api/kbs", json={"name": "docs"}, headers=admin)
    _upload(client, admin, "docs", "travel.md", POLICY)
    preview = client.post("/api/kbs/docs/preview", json={"file": "travel.md"}, headers=admin).json()
    chunks = preview["preview"]
    assert len(chunks) >= 2 and any("180 euros" in c["text"] for c in chunks)
    # The client rewrites the hotel chunk and drops the meal chunk.
    kept = [
        {**c, "text": c["text"].replace("180 euros", "210 euros")} for c in chunks if "meal" not in c["text"]
    ]
    r = client.post("/api/kbs/docs/chunks", json={"file": "travel.md", "chunks": kept}, headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["committed"] == len(kept) and r.json()["file"] == "travel.md"

    hits = _hits(client, staff, "docs", "hotel cap per night")
    assert hits and "210 euros" in hits[0]["text"] and hits[0]["file"] == "travel.md"
    assert not any(
        "meal allowance" in h["text"] for h in _hits(client, staff, "docs", "meal allowance per day")
    )
    r = client.post("/api/search", json={"kb": "docs", "query": "hotel cap"}, headers=other)
    assert r.status_code == 404  # acme's KB, not shared with globex
    assert lore.catalog.count_chunks(lore.catalog.get_kb("docs").id) == len(kept)

    # Committing again replaces the file's chunks (nothing left over from the first commit).
    r = client.post(
        "/api/kbs/docs/chunks",
        headers=admin,
        json={
            "file": "travel.md",
            "chunks": [
                {
                    "text": "Hotel stays are capped at 250 euros per night.",
                    "heading_path": ["Travel policy", "Hotels"],
                }
            ],
        },
    )
    assert r.status_code == 200 and r.json()["committed"] == 1
    hits = _hits(client, staff, "docs", "hotel cap per night")
    assert [h["text"] for h in hits] == ["Hotel stays are capped at 250 euros per night."]
    assert lore.catalog.count_chunks(lore.catalog.get_kb("docs").id) == 1


def test_commit_chunks_bad_input(site: tuple[TestClient, Lore]) -> None:
    client, lore = site
    admin, staff = _key(lore, "default", ["admin"]), _key(lore, "default", ["staff"])
    client.post("/api/kbs", json={"name": "docs"}, headers=admin)
    _upload(client, admin, "docs", "travel.md", POLICY)

    def commit(body: dict, key: dict[str, str] = admin, kb: str = "docs") -> tuple[int, str]:
        r = client.post(f"/api/kbs/{kb}/chunks", json=body, headers=key)
        return r.status_code, r.text

    status, text = commit({"file": "travel.md", "chunks": [{"text": "ok"}, {"text": "   "}]})
    assert status == 422 and '"chunks",1,"text"' in text.replace(" ", "") and "empty chunk text" in text
    status, text = commit({"file": "travel.md", "chunks": []})
    assert status == 422 and "chunks" in text
    status, text = commit({"file": "travel.md", "chunks": [{"text": "x", "tenant_id": "globex"}]})
    assert status == 422 and "tenant_id" in text  # the tenant comes from the key
    status, text = commit({"file": "nope.md", "chunks": [{"text": "x"}]})
    assert status == 404 and "nope.md" in text
    assert commit({"file": "travel.md", "chunks": [{"text": "x"}]}, key=staff)[0] == 403
    assert commit({"file": "travel.md", "chunks": [{"text": "x"}]}, kb="ghost")[0] == 404
    assert lore.catalog.count_chunks(lore.catalog.get_kb("docs").id) == 0  # nothing stored half-way

    client.post("/api/kbs", json={"name": "versioned"}, headers=admin)
    _upload(client, admin, "versioned", "travel.md", POLICY)
    assert build_and_wait(client, "versioned", {}, admin)["status"] == "succeeded"
    status, text = commit({"file": "travel.md", "chunks": [{"text": "x"}]}, kb="versioned")
    assert status == 409 and "builds" in text
