"""Knowledge-base admin over HTTP: upload, preview, ingest, build/activate/rollback, and the attacks on
them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.uploads import MAX_PARTS
from lore.config import load_settings
from lore.engine import Lore
from lore.storage.layout import uploads_key
from tests.api.conftest import Keys, auth, build_and_wait, sse_events
from tests.conftest import EXAMPLES


@pytest.fixture()
def roots(tmp_path: Path) -> Path:
    root = tmp_path / "shared_docs"
    root.mkdir()
    (root / "handbook").mkdir()
    (root / "handbook" / "faq.csv").write_bytes((EXAMPLES / "faq.csv").read_bytes())
    (tmp_path / "private.md").write_text(
        "# Salaries\n\nThe CEO earns 9 million per year.\n", encoding="utf-8"
    )
    return root


@pytest.fixture()
def admin_client(
    tmp_path: Path, roots: Path, keys: Keys, api_home: Path
) -> Iterator[tuple[TestClient, Lore]]:
    # A fresh home per test (its own catalog), with the shared keys' tenant and admin role re-created.
    home = tmp_path / "home"
    lore = Lore(
        load_settings(
            home=home, api={"max_upload_mb": 0.05, "ingest_roots": [roots], "rate_limit_per_minute": 0}
        )
    )
    _, secret = lore.catalog.create_api_key("default", ["admin"], name="ops-admin")
    with TestClient(create_app(lore), headers=auth(secret)) as client:
        yield client, lore
    lore.close()


def _upload(client: TestClient, kb: str, *files: tuple[str, bytes], key: str | None = None) -> object:
    return client.post(
        f"/api/kbs/{kb}/files",
        files=[("file", (name, data)) for name, data in files],
        headers=auth(key) if key else None,
    )


def _ask(client: TestClient, kb: str, question: str) -> dict:
    r = client.post("/api/ask", json={"kb": kb, "question": question})
    assert r.status_code == 200, r.text
    return sse_events(r.text)[-1][1]


def test_upload_preview_ingest_ask(admin_client: tuple[TestClient, Lore]) -> None:
    client, lore = admin_client
    assert client.post("/api/kbs", json={"name": "docs"}).status_code == 201
    r = _upload(
        client,
        "docs",
        ("employee_handbook.md", (EXAMPLES / "employee_handbook.md").read_bytes()),
        ("报销说明.md", "# 报销\n\n出差报销需要发票原件和审批单。\n".encode()),
    )
    assert r.status_code == 201, r.text
    assert sorted(f["name"] for f in r.json()["files"]) == ["employee_handbook.md", "报销说明.md"]
    listed = client.get("/api/kbs/docs/files").json()
    assert len(listed["uploads"]) == 2 and listed["indexed"] == []

    preview = client.post("/api/kbs/docs/preview", json={"file": "employee_handbook.md", "limit": 3}).json()
    assert preview["chunks"] > 3 and len(preview["preview"]) == 3 and preview["preview"][0]["text"]
    assert lore.catalog.count_chunks(lore.catalog.get_kb("docs").id) == 0  # preview stores nothing

    r = client.post("/api/kbs/docs/ingest", json={})
    assert r.status_code == 200, r.text
    assert r.json()["counts"] == {"ingested": 2}
    end = _ask(client, "docs", "报销需要什么材料？")
    assert "发票原件" in end["answer"] and end["citations"]
    assert client.get("/api/kbs/docs").json()["files"] == 2


def test_upload_attacks_store_nothing(admin_client: tuple[TestClient, Lore]) -> None:
    client, lore = admin_client
    client.post("/api/kbs", json={"name": "docs"})
    folder = lore.storage.path(uploads_key(lore.catalog.get_kb("docs")))
    for name in ("../evil.md", "..\\evil.md", "/etc/passwd.md", ".hidden.md", "a<b>.md"):
        r = _upload(client, "docs", (name, b"# x\n\ntext\n"))
        assert r.status_code == 400 and "upload" in r.json()["detail"], (name, r.text)
    r = _upload(client, "docs", ("tool.exe", b"MZ..."))
    assert r.status_code == 415 and "unsupported file type" in r.json()["detail"]
    # Second part too big: the first part, already written, is removed as well (nothing half-stored).
    r = _upload(client, "docs", ("ok.md", b"# ok\n\nfine\n"), ("big.md", b"x" * 60_000))
    assert r.status_code == 413 and "big.md" in r.json()["detail"]
    r = client.post(
        "/api/kbs/docs/files",
        content=b"x" * 200_000,
        headers={"content-type": "multipart/form-data; boundary=zz"},
    )
    assert r.status_code == 413
    r = client.post("/api/kbs/docs/files", content=b"plain", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    many = [(f"f{i}.md", b"# f\n\nx\n") for i in range(MAX_PARTS + 1)]  # too many files in one request
    r = _upload(client, "docs", *many)
    assert r.status_code == 413 and f"more than {MAX_PARTS} files" in r.json()["detail"]
    assert not folder.exists() or list(folder.iterdir()) == []
    written = [p.name for p in lore.settings.home.parent.rglob("*.md")]  # anywhere a traversal could land
    assert not {"evil.md", "passwd.md", ".hidden.md", "a<b>.md"} & set(written), written
    r = _upload(client, "nope", ("a.md", b"# a\n\nb\n"))
    assert r.status_code == 404 and "knowledge base 'nope' not found" in r.json()["detail"]


def test_server_path_ingest_is_confined_to_roots(admin_client: tuple[TestClient, Lore], roots: Path) -> None:
    client, _ = admin_client
    client.post("/api/kbs", json={"name": "docs"})
    outside = roots.parent / "private.md"
    for path in (str(outside), str(roots / ".." / "private.md"), "/etc/passwd"):
        r = client.post("/api/kbs/docs/ingest", json={"files": [], "paths": [path]})
        assert r.status_code == 403 and "outside the configured ingest roots" in r.json()["detail"], path
    link = roots / "link.md"
    link.symlink_to(outside)
    r = client.post("/api/kbs/docs/ingest", json={"files": [], "paths": [str(link)]})
    assert r.status_code == 403  # a symlink out of the root is followed, then refused
    link.unlink()
    r = client.post("/api/kbs/docs/ingest", json={"files": [], "paths": [str(roots / "handbook")]})
    assert r.status_code == 200 and r.json()["counts"] == {"ingested": 1}
    assert _ask(client, "docs", "What is the refund window?")["citations"][0]["file"] == "handbook/faq.csv"
    r = client.post("/api/kbs/docs/ingest", json={"files": ["../private.md"]})
    assert r.status_code == 400


def test_server_path_ingest_disabled_without_roots(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "h"))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    try:
        with TestClient(create_app(lore), headers=auth(secret)) as client:
            client.post("/api/kbs", json={"name": "docs"})
            r = client.post("/api/kbs/docs/ingest", json={"paths": [str(EXAMPLES)]})
            assert r.status_code == 403 and "api.ingest_roots" in r.json()["detail"]
    finally:
        lore.close()


def test_build_activate_rollback_report(admin_client: tuple[TestClient, Lore], roots: Path) -> None:
    client, _ = admin_client
    client.post("/api/kbs", json={"name": "v"})
    _upload(client, "v", ("policy.md", b"# Policy\n\nRemote work is allowed two days per week.\n"))
    job = build_and_wait(client, "v", {"activate": True, "description": "first"})
    assert job["status"] == "succeeded", job
    assert job["result"]["version"]["seq"] == 1 and job["result"]["version"]["active"]
    _upload(client, "v", ("policy.md", b"# Policy\n\nRemote work is allowed three days per week.\n"))
    r = client.post("/api/kbs/v/builds/stream", json={"quality_gate": True})
    events = sse_events(r.text)
    assert events[0][0] == "start" and events[-1][0] == "end"
    progress = [d for k, d in events if k == "status"]
    assert {
        "stage": "file_done",
        "file": "policy.md",
        "status": "ingested",
        "chunks": 1,
        "error": None,
    } in progress
    assert events[-1][1]["version"]["seq"] == 2 and events[-1][1]["version"]["status"] == "staged"
    r = client.post("/api/kbs/v/builds/stream", json={"files": ["missing.md"]})
    assert r.status_code == 404  # bad input is refused before the stream starts
    assert "two days" in _ask(client, "v", "How many days of remote work per week?")["answer"]
    r = client.post("/api/kbs/v/versions/2/activate", json={"reason": "new policy"})
    assert r.status_code == 200 and r.json()["active"]
    assert "three days" in _ask(client, "v", "How many days of remote work per week?")["answer"]
    versions = client.get("/api/kbs/v/versions").json()
    assert versions["active"] == 2 and [a["reason"] for a in versions["activations"]][-1] == "new policy"
    assert versions["activations"][-1]["key_name"] == "ops-admin"  # who, by the key's name
    changes = client.get("/api/kbs/v/diff", params={"base": 1, "candidate": 2}).json()
    assert "policy.md" in json.dumps(changes["files"])
    report = client.get("/api/kbs/v/versions/2/report").json()
    assert report["seq"] == 2 and "files" in report
    assert client.post("/api/kbs/v/rollback", json={}).json()["seq"] == 1
    assert "two days" in _ask(client, "v", "How many days of remote work per week?")["answer"]
    r = client.post("/api/kbs/v/versions/9/activate")
    assert r.status_code == 404 and "no version 9" in r.json()["detail"]
    r = client.post("/api/kbs/v/ingest", json={})
    assert r.status_code == 409 and "versioned" in r.json()["detail"]
    assert client.delete("/api/kbs/v").status_code == 204
    assert client.get("/api/kbs/v").status_code == 404


def test_build_activated_over_http_is_logged_as_its_key(admin_client: tuple[TestClient, Lore]) -> None:
    client, lore = admin_client
    client.post("/api/kbs", json={"name": "act"})
    _upload(client, "act", ("policy.md", b"# Policy\n\nRemote work is allowed two days per week.\n"))
    job = build_and_wait(client, "act", {"activate": True, "description": "console build"})
    assert job["status"] == "succeeded" and job["result"]["version"]["active"], job
    key = next(k for k in lore.catalog.list_api_keys() if k.name == "ops-admin")
    (moved,) = client.get("/api/kbs/act/versions").json()["activations"]
    assert (moved["to_seq"], moved["actor"], moved["key_name"]) == (1, f"key:{key.id}@default", "ops-admin")
    assert moved["reason"] == "console build"
    entries = client.get("/api/audit", params={"kb": "act"}).json()
    (activated,) = [e for e in entries if e["action"] == "activate"]
    assert (activated["key_id"], activated["key_name"], activated["target"]) == (key.id, "ops-admin", "1")
    assert activated["detail"] == {"via": "build", "job": job["id"], "reason": "console build"}
    staged = build_and_wait(client, "act", {"force": True})  # not asked to activate: no activation at all
    assert staged["status"] == "succeeded" and not staged["result"]["version"]["active"]
    assert len(client.get("/api/kbs/act/versions").json()["activations"]) == 1
    assert [e["action"] for e in client.get("/api/audit", params={"kb": "act"}).json()].count("activate") == 1


def test_build_stamps_the_builders_tenant(admin_client: tuple[TestClient, Lore]) -> None:
    client, lore = admin_client
    _, acme_admin = lore.catalog.create_api_key("acme", ["admin"])
    _, acme_staff = lore.catalog.create_api_key("acme", ["staff"], datasets=["sales"])
    _, other_admin = lore.catalog.create_api_key("acme", ["admin"], datasets=["hr"])
    client.post("/api/kbs", json={"name": "acme"}, headers=auth(acme_admin))
    _upload(client, "acme", ("faq.csv", (EXAMPLES / "faq.csv").read_bytes()), key=acme_admin)
    job = build_and_wait(client, "acme", {"activate": True}, auth(acme_admin))
    assert job["status"] == "succeeded", job

    def hits(key: str) -> list[str]:
        r = client.post("/api/search", json={"kb": "acme", "query": "refund window"}, headers=auth(key))
        return [h["file"] for h in r.json()["hits"]]

    assert hits(acme_admin)
    r = client.post("/api/search", json={"kb": "acme", "query": "refund window"})  # tenant "default"
    assert r.status_code == 404  # acme's KB is not shared with it
    assert hits(acme_staff) == []  # chunks went to dataset "default", the key reads only "sales"
    # KB "acme" now holds acme's chunks: only acme's own admins write to it
    _upload(
        client,
        "acme",
        ("policy.md", b"# Policy\n\nRemote work is allowed two days per week.\n"),
        key=acme_admin,
    )
    assert build_and_wait(client, "acme", {"activate": True}, auth(other_admin))["status"] == "succeeded"
    r = client.post(
        "/api/search", json={"kb": "acme", "query": "remote work days"}, headers=auth(other_admin)
    )
    assert {h["file"] for h in r.json()["hits"]} == {"policy.md"}  # dataset "hr" from the builder's key
