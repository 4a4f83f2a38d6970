"""The console's API: documents with status and metadata, a document's chunks, feedback review, keys."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from lore.engine import Lore
from tests.api.conftest import Keys, auth, sse_events


def test_documents_table_lists_indexed_files_with_metadata(client: TestClient, keys: Keys) -> None:
    r = client.get("/api/kbs/hb/documents", headers=auth(keys.admin))
    assert r.status_code == 200, r.text
    docs = {d["name"]: d for d in r.json()["documents"]}
    assert len(docs) == 5 and not any("nightingale" in n for n in docs)  # tenant-b's file is not listed
    xlsx = next(d for n, d in docs.items() if n.endswith(".xlsx"))
    assert xlsx["status"] == "ingested" and xlsx["type"] == "xlsx" and xlsx["chunks"] > 0
    assert xlsx["sheets"] and xlsx["rows"] and xlsx["tenant"] == "default" and xlsx["visibility"]
    other = client.get("/api/kbs/hb/documents", headers=auth(keys.tenant_b)).json()["documents"]
    assert [d["name"] for d in other] == [
        n for n in [d["name"] for d in other] if "nightingale" in n
    ] and other


def test_document_chunks_in_order_with_location(client: TestClient, keys: Keys) -> None:
    docs = client.get("/api/kbs/hb/documents", headers=auth(keys.staff)).json()["documents"]
    name = next(d["name"] for d in docs if d["name"].endswith(".md"))
    r = client.get(f"/api/kbs/hb/documents/{name}/chunks", headers=auth(keys.staff))
    assert r.status_code == 200, r.text
    chunks = r.json()["chunks"]
    assert chunks and [c["chunk_index"] for c in chunks] == sorted(c["chunk_index"] for c in chunks)
    assert all(c["text"] and c["parent_text"] and "heading_path" in c for c in chunks)


def test_another_tenants_document_looks_absent(client: TestClient, keys: Keys) -> None:
    docs = client.get("/api/kbs/hb/documents", headers=auth(keys.tenant_b)).json()["documents"]
    theirs = docs[0]["name"]
    mine = next(
        d["name"] for d in client.get("/api/kbs/hb/documents", headers=auth(keys.admin)).json()["documents"]
    )
    hidden = client.get(f"/api/kbs/hb/documents/{theirs}/chunks", headers=auth(keys.admin))
    absent = client.get("/api/kbs/hb/documents/no-such-file.md/chunks", headers=auth(keys.admin))
    assert hidden.status_code == absent.status_code == 404
    r = client.get(f"/api/kbs/hb/documents/{mine}/chunks", headers=auth(keys.tenant_b))
    assert r.status_code == 404 and "NG-7731" not in r.text


def test_feedback_review_and_export(client: TestClient, keys: Keys, lore: Lore) -> None:
    events = sse_events(
        client.post(
            "/api/ask", json={"kb": "hb", "question": "What is the refund window?"}, headers=auth(keys.staff)
        ).text
    )
    trace = next(d for e, d in events if e == "end")["trace_id"]
    assert (
        client.post(
            "/api/feedback",
            json={"trace_id": trace, "rating": -1, "note": "too long"},
            headers=auth(keys.staff),
        ).status_code
        == 201
    )
    assert client.get("/api/feedback", headers=auth(keys.staff)).status_code == 403
    listed = client.get("/api/feedback?rating=-1", headers=auth(keys.admin))
    assert listed.status_code == 200, listed.text
    rows = listed.json()
    row = next(r for r in rows if r["trace_id"] == trace)
    assert row["note"] == "too long" and row["citations"] and not row["redacted"]
    _, b_admin = lore.catalog.create_api_key("tenant-b", ["admin"])
    other = client.get("/api/feedback", headers=auth(b_admin))
    assert other.status_code == 200 and all(r["trace_id"] != trace for r in other.json())
    export = client.get("/api/feedback/export", headers=auth(keys.admin))
    assert "attachment" in export.headers["content-disposition"]
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert any(x["trace_id"] == trace and x["cited_files"] for x in lines)


def test_keys_need_platform_admin_and_stay_in_tenant(client: TestClient, keys: Keys, lore: Lore) -> None:
    assert client.get("/api/keys", headers=auth(keys.admin)).status_code == 403
    _, platform = lore.catalog.create_api_key("default", ["admin", "platform-admin"])
    made = client.post("/api/keys", json={"roles": ["staff"], "name": "console"}, headers=auth(platform))
    assert made.status_code == 201 and made.json()["tenant"] == "default"
    secret = made.json()["secret"]
    assert client.get("/api/kbs", headers=auth(secret)).status_code == 200
    listed = client.get("/api/keys", headers=auth(platform)).json()
    assert {k["tenant"] for k in listed} == {"default"} and all("secret" not in k for k in listed)
    other = next(k for k in lore.catalog.list_api_keys() if k.tenant_id == "tenant-b")
    assert client.delete(f"/api/keys/{other.id}", headers=auth(platform)).status_code == 404
    assert client.delete(f"/api/keys/{made.json()['id']}", headers=auth(platform)).status_code == 204
    assert client.get("/api/kbs", headers=auth(secret)).status_code == 401


def test_feedback_redacts_passages_the_reader_cannot_read(client: TestClient, keys: Keys, lore: Lore) -> None:
    _, b_admin = lore.catalog.create_api_key("tenant-b", ["admin"])
    _, b_limited = lore.catalog.create_api_key("tenant-b", ["admin"], datasets=["elsewhere"])
    events = sse_events(
        client.post(
            "/api/ask",
            json={"kb": "hb", "question": "What is the launch code of Nightingale?"},
            headers=auth(b_admin),
        ).text
    )
    trace = next(d for e, d in events if e == "end")["trace_id"]
    assert (
        client.post(
            "/api/feedback", json={"trace_id": trace, "rating": -1}, headers=auth(b_admin)
        ).status_code
        == 201
    )
    mine = next(
        r for r in client.get("/api/feedback", headers=auth(b_admin)).json() if r["trace_id"] == trace
    )
    assert not mine["redacted"] and "NG-7731" in json.dumps(mine)
    theirs = client.get("/api/feedback", headers=auth(b_limited))
    row = next(r for r in theirs.json() if r["trace_id"] == trace)
    assert row["redacted"] and "NG-7731" not in theirs.text
