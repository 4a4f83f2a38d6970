"""Tenant, role and key isolation through the real app, on SQLite, PostgreSQL and MariaDB catalogs:
originals, restricted chunks, traces and sessions,
writes to shared knowledge bases, datasets, server-path symlinks and secrets in logs."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, build_and_wait, free_port, sse_events

SECRET = b"# Secret\n\nThe launch code is NG-7731 for project nightingale.\n"


@dataclass
class Keys:
    """Secrets of tenant A's and tenant B's keys."""

    a_admin: str
    a_staff: str
    a_manager: str
    a_datasets: str  # admin of A with datasets sales and hr
    b_admin: str
    b_staff: str
    b_platform: str  # admin + platform-admin of B


@dataclass
class Env:
    client: TestClient
    lore: Lore
    keys: Keys
    home: Path
    roots: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, module_db_url: str) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("isolation")
    roots = base / "roots"
    roots.mkdir()
    lore = Lore(
        load_settings(
            home=base / "home",
            catalog_url=module_db_url,
            api={"rate_limit_per_minute": 0, "ingest_roots": [roots]},
        )
    )
    lore.create_kb("hb", "shared", owner_tenant="A")
    cat = lore.catalog
    keys = Keys(
        *(
            cat.create_api_key(tenant, roles, datasets)[1]
            for tenant, roles, datasets in (
                ("A", ["admin"], None),
                ("A", ["staff"], None),
                ("A", ["manager"], None),
                ("A", ["admin"], ["sales", "hr"]),
                ("B", ["admin"], None),
                ("B", ["staff"], None),
                ("B", ["admin", "platform-admin"], None),
            )
        )
    )
    with TestClient(create_app(lore)) as client:
        r = client.post(
            "/api/kbs/hb/files", files={"file": ("secret.md", SECRET)}, headers=auth(keys.a_admin)
        )
        assert r.status_code == 201, r.text
        r = client.post("/api/kbs/hb/ingest", json={}, headers=auth(keys.a_admin))
        assert r.status_code == 200 and r.json()["counts"] == {"ingested": 1}, r.text
        yield Env(client, lore, keys, base / "home", roots)
    lore.close()


def _hits(env: Env, key: str, query: str, kb: str = "hb") -> list[dict]:
    r = env.client.post("/api/search", json={"kb": kb, "query": query, "top_k": 20}, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()["hits"]


def _ask(env: Env, key: str, question: str, **extra: object) -> tuple[int, list[dict]]:
    r = env.client.post("/api/ask", json={"kb": "hb", "question": question, **extra}, headers=auth(key))
    if r.status_code != 200:
        return r.status_code, [r.json()]
    events = [data for _, data in sse_events(r.text)]
    return 200, events


def _listed(env: Env, key: str) -> set[str]:
    r = env.client.get("/api/kbs/hb/files", headers=auth(key))
    assert r.status_code == 200, r.text
    return {f["name"] for f in r.json()["uploads"]} | {f["path"] for f in r.json()["indexed"]}


def test_originals_only_for_readers_of_their_chunks(env: Env) -> None:
    k = env.keys
    r = env.client.get("/api/kbs/hb/files/secret.md", headers=auth(k.a_staff))
    assert r.status_code == 200 and r.content == SECRET
    r = env.client.get("/api/kbs/hb/files/secret.md", headers=auth(k.b_staff))
    assert r.status_code == 404 and "not found" in r.json()["detail"]
    assert "secret.md" in _listed(env, k.a_staff)
    for key in (k.b_staff, k.b_admin):  # hb is A's and not shared: for B it does not exist
        assert env.client.get("/api/kbs/hb/files", headers=auth(key)).status_code == 404


def test_kb_name_is_validated_on_file_routes(env: Env) -> None:
    (env.home / "leak.md").write_text("# top secret in home\n", encoding="utf-8")
    (env.home / "uploads").mkdir(exist_ok=True)
    (env.home / "uploads" / "leak.md").write_text("# top secret in uploads\n", encoding="utf-8")
    for path in (
        "/api/kbs/%2E%2E/files/leak.md",
        "/api/kbs/%2E%2E/files",
        "/api/kbs/nope/files/leak.md",
        "/api/kbs/./files/leak.md",
    ):
        r = env.client.get(path, headers=auth(env.keys.a_admin))
        assert r.status_code == 404 and "secret" not in r.text, (path, r.text)


def test_restricted_chunks_need_the_admin_role(env: Env) -> None:
    k = env.keys
    r = env.client.post(
        "/api/kbs/hb/files", files={"file": ("board.md", b"# Board\n\nx\n")}, headers=auth(k.a_admin)
    )
    assert r.status_code == 201
    r = env.client.post(
        "/api/kbs/hb/chunks",
        headers=auth(k.a_admin),
        json={
            "file": "board.md",
            "visibility": "restricted",
            "chunks": [{"text": "Board salary table: the CEO earns 9 million yuan a year."}],
        },
    )
    assert r.status_code == 200, r.text
    assert "board.md" in {h["file"] for h in _hits(env, k.a_admin, "CEO salary board")}
    for key in (k.a_staff, k.a_manager):
        assert "board.md" not in {h["file"] for h in _hits(env, key, "CEO salary board")}
        _, events = _ask(env, key, "How much does the CEO earn?")
        assert "9 million" not in events[-1]["answer"]
        assert env.client.get("/api/kbs/hb/files/board.md", headers=auth(key)).status_code == 404
    assert env.client.get("/api/kbs/hb/files/board.md", headers=auth(k.a_admin)).status_code == 200


def test_traces_and_sessions_belong_to_their_key(env: Env) -> None:
    k = env.keys
    status, events = _ask(env, k.a_manager, "What is the launch code of project nightingale?")
    assert status == 200 and "NG-7731" in events[-1]["answer"]
    trace_id, session_id = events[-1]["trace_id"], events[0]["session_id"]
    assert trace_id and session_id
    staff = auth(k.a_staff)
    assert trace_id not in {t["id"] for t in env.client.get("/api/traces", headers=staff).json()}
    assert env.client.get(f"/api/traces/{trace_id}", headers=staff).status_code == 404
    assert session_id not in {s["id"] for s in env.client.get("/api/sessions", headers=staff).json()}
    assert env.client.get(f"/api/sessions/{session_id}", headers=staff).status_code == 404
    status, body = _ask(env, k.a_staff, "and the date?", session_id=session_id)
    assert status == 404 and "not found" in body[0]["detail"]
    r = env.client.post("/api/feedback", json={"trace_id": trace_id, "rating": -1}, headers=staff)
    assert r.status_code == 404
    assert env.client.delete(f"/api/sessions/{session_id}", headers=staff).status_code == 404
    # the key itself and its tenant's admins see them
    mine = env.client.get(f"/api/sessions/{session_id}", headers=auth(k.a_manager)).json()
    assert any("NG-7731" in m["content"] for m in mine["messages"])
    assert "NG-7731" in json.dumps(env.client.get(f"/api/traces/{trace_id}", headers=auth(k.a_admin)).json())
    assert session_id in {s["id"] for s in env.client.get("/api/sessions", headers=auth(k.a_admin)).json()}
    assert env.client.get(f"/api/traces/{trace_id}", headers=auth(k.b_admin)).status_code == 404


def test_dataset_must_be_named_by_a_key_with_several(env: Env) -> None:
    k, client = env.keys, env.client
    assert client.post("/api/kbs", json={"name": "ds"}, headers=auth(k.a_admin)).status_code == 201
    r = client.post(
        "/api/kbs/ds/files",
        files={"file": ("pay.md", b"# Pay\n\nPayday is the 25th.\n")},
        headers=auth(k.a_datasets),
    )
    assert r.status_code == 201
    r = client.post("/api/kbs/ds/ingest", json={}, headers=auth(k.a_datasets))
    assert r.status_code == 400 and "several datasets" in r.json()["detail"]
    r = client.post("/api/kbs/ds/ingest", json={"dataset": "ops"}, headers=auth(k.a_datasets))
    assert r.status_code == 400 and "'ops' is not one of this key's datasets" in r.json()["detail"]
    r = client.post("/api/kbs/ds/builds", json={}, headers=auth(k.a_datasets))
    assert r.status_code == 400 and "several datasets" in r.json()["detail"]
    assert client.get("/api/kbs/ds/versions", headers=auth(k.a_admin)).json()["versions"] == []
    r = client.post("/api/kbs/ds/ingest", json={"dataset": "hr"}, headers=auth(k.a_datasets))
    assert r.status_code == 200, r.text
    _, hr_staff = env.lore.catalog.create_api_key("A", ["staff"], ["hr"])
    _, sales_staff = env.lore.catalog.create_api_key("A", ["staff"], ["sales"])
    assert {h["file"] for h in _hits(env, hr_staff, "payday", kb="ds")} == {"pay.md"}
    assert _hits(env, sales_staff, "payday", kb="ds") == []


def test_symlinks_out_of_the_ingest_roots_are_refused(env: Env, tmp_path: Path) -> None:
    outside = tmp_path / "salaries.md"
    outside.write_text("# Salaries\n\nThe CFO earns 7 million.\n", encoding="utf-8")
    folder = env.roots / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# OK\n\nParking is free.\n", encoding="utf-8")
    (folder / "salaries.md").symlink_to(outside)
    r = env.client.post(
        "/api/kbs/hb/ingest", json={"files": [], "paths": [str(folder)]}, headers=auth(env.keys.a_admin)
    )
    assert r.status_code == 403 and "docs/salaries.md" in r.json()["detail"]
    assert "7 million" not in json.dumps(_hits(env, env.keys.a_admin, "CFO salary"))
    (folder / "salaries.md").unlink()
    (folder / "inside.md").symlink_to(folder / "ok.md")  # a link that stays inside the roots is fine
    r = env.client.post(
        "/api/kbs/hb/ingest", json={"files": [], "paths": [str(folder)]}, headers=auth(env.keys.a_admin)
    )
    assert r.status_code == 200 and r.json()["counts"] == {"ingested": 2}, r.text


def test_writes_to_a_kb_of_another_tenant(env: Env) -> None:
    k, client = env.keys, env.client
    a = auth(k.a_admin)
    assert client.post("/api/kbs", json={"name": "shared"}, headers=a).status_code == 201
    assert (
        client.post("/api/kbs/shared/files", files={"file": ("secret.md", SECRET)}, headers=a).status_code
        == 201
    )
    assert client.post("/api/kbs/shared/ingest", json={}, headers=a).status_code == 200
    b = auth(k.b_admin)
    assert client.get("/api/kbs/shared", headers=b).status_code == 404  # not shared with B yet
    assert client.post("/api/kbs/shared/shares", json={"tenant": "B"}, headers=b).status_code == 404
    assert client.post("/api/kbs/shared/shares", json={"tenant": "B"}, headers=a).status_code == 201
    r = client.post(
        "/api/kbs/shared/files", files={"file": ("secret.md", b"# B\n\nTenant B travel rules.\n")}, headers=b
    )
    assert r.status_code == 403 and "platform-admin" in r.json()["detail"]
    for method, path, body in (
        ("post", "/api/kbs/shared/ingest", {}),
        ("post", "/api/kbs/shared/builds", {}),
        ("post", "/api/kbs/shared/versions/1/activate", None),
        ("post", "/api/kbs/shared/rollback", None),
        ("delete", "/api/kbs/shared", None),
        ("post", "/api/kbs/shared/chunks", {"file": "secret.md", "chunks": [{"text": "x"}]}),
    ):
        r = client.request(method, path, json=body, headers=b)
        assert r.status_code == 403, (path, r.text)
    # a platform admin of B may add its own files, never replace or remove A's: its files are keyed by
    # tenant, so a name A also uses is B's own file (stored as `B|name`), answered like any other name
    p = auth(k.b_platform)
    r = client.post(
        "/api/kbs/shared/files", files={"file": ("secret.md", b"# B\n\nTenant B travel rules.\n")}, headers=p
    )
    assert r.status_code == 201 and r.json()["files"] == [{"name": "B|secret.md", "size": 28}], r.text
    r = client.post(
        "/api/kbs/shared/chunks", headers=p, json={"file": "secret.md", "chunks": [{"text": "B text"}]}
    )
    assert r.status_code == 200 and r.json()["file"] == "B|secret.md", r.text
    assert client.get("/api/kbs/shared/files/secret.md", headers=p).content.startswith(b"# B")
    assert client.delete("/api/kbs/shared", headers=p).status_code == 403
    assert client.get("/api/kbs/shared/files/secret.md", headers=auth(k.a_staff)).content == SECRET
    assert "secret.md" in {h["file"] for h in _hits(env, k.a_staff, "launch code nightingale", "shared")}
    r = client.post(
        "/api/kbs/shared/files",
        files={"file": ("travel.md", b"# Travel\n\nB staff fly economy.\n")},
        headers=p,
    )
    assert r.status_code == 201
    r = client.post("/api/kbs/shared/builds", json={"files": ["travel.md"]}, headers=p)  # would remove A's
    assert r.status_code == 403 and "other tenants" in r.json()["detail"]
    r = client.post("/api/kbs/shared/ingest", json={}, headers=p)  # every upload of B's, none of A's
    assert r.status_code == 200 and r.json()["counts"] == {"ingested": 1, "skipped": 1}, r.text
    assert "B|travel.md" in {h["file"] for h in _hits(env, k.b_staff, "economy flights travel", "shared")}
    assert not {h["file"] for h in _hits(env, k.a_staff, "economy flights travel", "shared")} & {
        "B|travel.md",
        "B|secret.md",
    }
    assert client.get("/api/kbs/shared/files/secret.md", headers=auth(k.a_staff)).content == SECRET
    # now that B's chunks are in it, A's plain admin is refused too
    r = client.post("/api/kbs/shared/ingest", json={"files": ["secret.md"]}, headers=a)
    assert r.status_code == 403


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_access_token_never_reaches_the_logs(env: Env) -> None:
    capture = _Capture()
    loggers = [logging.getLogger(name) for name in ("uvicorn.access", "uvicorn.error")]
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(env.client.app, host="127.0.0.1", port=port, log_level="info", ws="websockets-sansio")
    )
    for logger in loggers:
        logger.addHandler(capture)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        token = env.keys.a_staff
        r = httpx.get(f"http://127.0.0.1:{port}/api/kbs?access_token={token}", headers=auth(token))
        assert r.status_code == 200
        with connect(f"ws://127.0.0.1:{port}/api/stream?access_token={token}") as ws:
            ws.send(json.dumps({"kb": "hb", "question": "launch code?", "new_session": False}))
            while json.loads(ws.recv(timeout=60))["event"] not in ("end", "error"):
                pass
    finally:
        server.should_exit = True
        thread.join(15)
        for logger in loggers:
            logger.removeHandler(capture)
    logged = "\n".join(capture.lines)
    assert "access_token=[redacted]" in logged and "/api/stream" in logged
    assert token not in logged


def _new_kb_with_upload(env: Env, kb: str, name: str, content: bytes) -> None:
    """Tenant A's admin creates a KB and uploads one file into it (not indexed yet)."""
    c, key = env.client, env.keys.a_admin
    assert c.post("/api/kbs", json={"name": kb}, headers=auth(key)).status_code == 201
    r = c.post(f"/api/kbs/{kb}/files", files={"file": (name, content)}, headers=auth(key))
    assert r.status_code == 201, r.text


def test_kbs_of_other_tenants_are_not_listed_or_described(env: Env) -> None:
    k, c = env.keys, env.client
    _new_kb_with_upload(env, "a_only", "plan.md", b"# Plan\n\nQ3 hiring plan: 12 people.\n")
    assert build_and_wait(c, "a_only", {"activate": True}, auth(k.a_admin))["status"] == "succeeded"

    def names(key: str) -> set[str]:
        return {kb["name"] for kb in c.get("/api/kbs", headers=auth(key)).json()}

    def models(key: str) -> set[str]:
        return {m["id"] for m in c.get("/v1/models", headers=auth(key)).json()["data"]}

    assert "a_only" in names(k.a_staff) and "a_only" in models(k.a_staff)
    for key in (k.b_staff, k.b_admin):
        assert "a_only" not in names(key) and "a_only" not in models(key)
        for path in (
            "/api/kbs/a_only",
            "/api/kbs/a_only/versions",
            "/api/kbs/a_only/versions/1/report",
            "/api/kbs/a_only/diff?base=1&candidate=1",
        ):
            r = c.get(path, headers=auth(key))
            assert r.status_code == 404 and "not found" in r.json()["detail"], (path, r.text)
    # Readers of the KB see it, but its reports and diffs name every file: only admins who may change it.
    assert c.get("/api/kbs/a_only/versions", headers=auth(k.a_staff)).status_code == 200
    assert c.get("/api/kbs/a_only/versions/1/report", headers=auth(k.a_staff)).status_code == 403
    assert c.get("/api/kbs/a_only/versions/1/report", headers=auth(k.a_admin)).status_code == 200
    assert (
        c.get("/api/kbs/a_only/diff?base=1&candidate=1", headers=auth(k.a_admin)).json()["files"]["unchanged"]
        == 1
    )


def test_an_upload_not_indexed_yet_belongs_to_its_uploader(env: Env) -> None:
    k, c = env.keys, env.client
    _new_kb_with_upload(env, "pending", "draft.md", b"# Draft\n\nA's draft.\n")
    # The KB holds no chunks yet, but it belongs to A: for B's admin it does not exist (finding 4).
    assert "pending" not in {kb["name"] for kb in c.get("/api/kbs", headers=auth(k.b_admin)).json()}
    assert c.get("/api/kbs/pending/files", headers=auth(k.b_admin)).status_code == 404
    assert c.get("/api/kbs/pending/files/draft.md", headers=auth(k.b_admin)).status_code == 404
    r = c.post("/api/kbs/pending/builds", json={"activate": True}, headers=auth(k.b_admin))
    assert r.status_code == 404
    r = c.post(
        "/api/kbs/pending/files", files={"file": ("draft.md", b"# B\n\nB's text.\n")}, headers=auth(k.b_admin)
    )
    assert r.status_code == 404
    assert c.delete("/api/kbs/pending", headers=auth(k.b_platform)).status_code == 404
    job = build_and_wait(c, "pending", {"activate": True}, auth(k.a_admin))
    assert job["status"] == "succeeded", job
    assert (
        c.get("/api/kbs/pending/files/draft.md", headers=auth(k.a_staff)).content
        == b"# Draft\n\nA's draft.\n"
    )
