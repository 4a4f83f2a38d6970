"""Builds over HTTP as queued jobs: 202 + job id, 409 while the KB is busy, the job's status and its event
stream, run by a worker that is not the service (worker.in_process = false)."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.jobs import Worker
from lore.config import load_settings
from lore.engine import Lore
from lore.ingest.build import build_lock
from lore.storage.layout import uploads_key
from tests.api.conftest import auth, sse_events


def test_queued_build_conflicts_status_and_stream(tmp_path: Path) -> None:
    lore = Lore(
        load_settings(home=tmp_path / "home", worker={"in_process": False}, api={"rate_limit_per_minute": 0})
    )
    _, admin = lore.catalog.create_api_key("default", ["admin"])
    _, staff = lore.catalog.create_api_key("default", ["staff"])
    try:
        with TestClient(create_app(lore), headers=auth(admin)) as client:
            assert client.post("/api/kbs", json={"name": "docs"}).status_code == 201
            r = client.post(
                "/api/kbs/docs/files", files={"file": ("leave.md", b"# Leave\n\nAnnual leave is 5 days.\n")}
            )
            assert r.status_code == 201, r.text
            r = client.post("/api/kbs/docs/builds", json={"activate": True, "description": "first"})
            assert r.status_code == 202, r.text
            job = r.json()["job"]
            assert job["status"] == "queued" and job["result"] is None
            for path in ("/api/kbs/docs/builds", "/api/kbs/docs/builds/stream"):  # one build per KB at a time
                r = client.post(path, json={})
                assert (
                    r.status_code == 409
                    and f"already has a build job queued (job {job['id']})" in r.json()["detail"]
                )
            assert (
                client.get(f"/api/kbs/docs/jobs/{job['id']}").json()["status"] == "queued"
            )  # no worker here
            assert client.get("/api/kbs/docs/jobs/nope").status_code == 404
            assert client.get(f"/api/kbs/docs/jobs/{job['id']}", headers=auth(staff)).status_code == 403

            runner = threading.Thread(target=Worker(lore, "worker-1").run_once)  # as `lore worker` would
            runner.start()
            events = sse_events(client.get(f"/api/kbs/docs/jobs/{job['id']}/events").text)
            runner.join()
            kinds = [k for k, _ in events]
            assert kinds[0] == "start" and kinds[-1] == "end" and kinds.count("end") == 1
            assert {"stage": "started", "worker": "worker-1"} in [d for k, d in events if k == "status"]
            assert any(
                d.get("stage") == "file_done" and d["file"] == "leave.md" for k, d in events if k == "status"
            )
            result = events[-1][1]
            assert (
                result["version"]["seq"] == 1
                and result["version"]["active"]
                and result["counts"] == {"ingested": 1}
            )
            done = client.get(f"/api/kbs/docs/jobs/{job['id']}").json()
            assert done["status"] == "succeeded" and done["worker"] == "worker-1" and done["result"] == result

            kb = lore.catalog.get_kb("docs")
            with build_lock(lore.catalog, kb):  # a CLI build holds the lock: the API refuses with 409
                r = client.post("/api/kbs/docs/builds", json={})
                assert (
                    r.status_code == 409
                    and "another build of knowledge base 'docs' is running" in r.json()["detail"]
                )
            r = client.post("/api/kbs/docs/builds", json={"files": ["missing.md"]})
            assert r.status_code == 404  # bad input: refused before anything is queued
            r = client.post("/api/kbs/docs/builds", json={"quality_gate": True})
            assert r.status_code == 202
            failing = r.json()["job"]["id"]
            upload = lore.storage.path(uploads_key(lore.catalog.get_kb("docs"))) / "leave.md"
            upload.unlink()  # gone before the worker gets to it
            Worker(lore, "worker-1").run_once()
            failed = client.get(f"/api/kbs/docs/jobs/{failing}").json()
            assert (
                failed["status"] == "failed"
                and failed["error_status"] == 400
                and "leave.md: no such file" in failed["error"]
            )
            events = sse_events(client.get(f"/api/kbs/docs/jobs/{failing}/events").text)
            assert events[-1][0] == "error" and "no such file" in events[-1][1]["message"]
    finally:
        lore.close()
