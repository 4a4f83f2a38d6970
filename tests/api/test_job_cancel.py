"""Cancelling a build over HTTP: a queued one ends at once, a running one stops before its next file (its
staged version fails, the active one keeps serving); builders only, audited with the reason."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.jobs import Worker
from lore.catalog import JobStatus, VersionStatus
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, sse_events


@pytest.fixture(name="lore")
def lore_fixture(tmp_path: Path) -> Iterator[Lore]:
    lore = Lore(
        load_settings(home=tmp_path / "home", worker={"in_process": False}, api={"rate_limit_per_minute": 0})
    )
    yield lore
    lore.close()


def _upload(client: TestClient, name: str, text: str) -> None:
    r = client.post("/api/kbs/docs/files", files={"file": (name, text.encode())})
    assert r.status_code == 201, r.text


def _first_version(lore: Lore, client: TestClient) -> None:
    assert client.post("/api/kbs", json={"name": "docs"}).status_code == 201
    _upload(client, "leave.md", "# Leave\n\nAnnual leave is 5 days.\n")
    r = client.post("/api/kbs/docs/builds", json={"activate": True})
    assert r.status_code == 202, r.text
    done = Worker(lore, "w").run_once()
    assert done is not None and done.status is JobStatus.SUCCEEDED


def test_a_queued_build_is_cancelled_at_once(lore: Lore) -> None:
    _, admin = lore.catalog.create_api_key("default", ["admin"])
    _, staff = lore.catalog.create_api_key("default", ["staff"])
    with TestClient(create_app(lore), headers=auth(admin)) as client:
        _first_version(lore, client)
        _upload(client, "travel.md", "# Travel\n\nTrains are second class.\n")
        job = client.post("/api/kbs/docs/builds", json={}).json()["job"]["id"]
        url = f"/api/kbs/docs/jobs/{job}/cancel"
        assert client.post(url, headers=auth(staff)).status_code == 403  # may not build: may not cancel
        assert client.post("/api/kbs/docs/jobs/nope/cancel").status_code == 404
        r = client.post(url, json={"reason": "wrong files"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "failed" and body["cancelled_by"].startswith("key:")
        assert body["error"].startswith("cancelled by key:") and body["error_status"] == 409
        assert Worker(lore, "w").run_once() is None  # nothing left to run
        events = sse_events(client.get(f"/api/kbs/docs/jobs/{job}/events").text)
        assert events[-1][0] == "error" and events[-1][1]["cancelled_by"] == body["cancelled_by"]
        assert client.post(url).status_code == 200  # cancelling twice says the same
        first = [e for e in lore.catalog.audit_log(kb="docs") if e.action == "cancel"][-1]
        assert first.target == job and first.detail == {"reason": "wrong files", "was": "queued"}
        # a finished build has nothing to cancel
        finished = next(j for j in lore.catalog.list_jobs(lore.catalog.get_kb("docs").id) if j.id != job)
        r = client.post(f"/api/kbs/docs/jobs/{finished.id}/cancel")
        assert r.status_code == 409 and "already succeeded" in r.json()["detail"]
        assert [v.seq for v in lore.catalog.list_versions(lore.catalog.get_kb("docs").id)] == [1]


def test_a_running_build_stops_before_its_next_file(lore: Lore, monkeypatch: pytest.MonkeyPatch) -> None:
    _, admin = lore.catalog.create_api_key("default", ["admin"])
    reached, go = threading.Event(), threading.Event()
    record = lore.catalog.add_job_event

    def hold_after_first_file(job_id: str, event: dict[str, Any]) -> None:
        record(job_id, event)
        if event["data"].get("stage") == "file_done" and event["data"]["file"] == "a.md":
            reached.set()  # the build is between a.md and b.md: hold it there until the cancel is in
            assert go.wait(60)

    with TestClient(create_app(lore), headers=auth(admin)) as client:
        _first_version(lore, client)
        for name in ("a.md", "b.md", "c.md"):
            _upload(client, name, f"# {name}\n\nThe {name} policy text.\n")
        job = client.post("/api/kbs/docs/builds", json={"activate": True}).json()["job"]["id"]
        monkeypatch.setattr(lore.catalog, "add_job_event", hold_after_first_file)
        runner = threading.Thread(target=Worker(lore, "w").run_once)
        runner.start()
        try:
            assert reached.wait(120), "the build never finished its first file"
            r = client.post(f"/api/kbs/docs/jobs/{job}/cancel", json={"reason": "stop"})
            assert r.status_code == 200 and r.json()["status"] == "running" and r.json()["cancelled_by"]
        finally:
            go.set()
            runner.join()
        done = client.get(f"/api/kbs/docs/jobs/{job}").json()
        assert done["status"] == "failed" and done["error"].startswith("cancelled by key:")
        events = sse_events(client.get(f"/api/kbs/docs/jobs/{job}/events").text)
        written = [d["file"] for k, d in events if k == "status" and d.get("stage") == "file_done"]
        assert written == ["a.md"] and events[-1][0] == "error"
        kb = lore.catalog.get_kb("docs")
        versions = {v.seq: v for v in lore.catalog.list_versions(kb.id)}
        assert versions[2].status is VersionStatus.FAILED
        active = lore.catalog.active_version(kb.id)
        assert active is not None and active.seq == 1  # people keep the version they had
        assert client.post(f"/api/kbs/docs/jobs/{job}/cancel").status_code == 200  # already cancelled
