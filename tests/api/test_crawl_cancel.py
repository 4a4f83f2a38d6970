"""Cancelling a web crawl (`POST /api/kbs/{kb}/jobs/{id}/cancel`, as a build): a running crawl stops before
its next page and its job fails with `cancelled_by`; a queued one ends at once and frees its tenant's slot;
only the crawl's tenant's admins and the KB owner's may cancel it. Against the small site of
tests/ingest/test_web.py on a local HTTP server, with a worker run by the test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.jobs import Worker
from lore.catalog import JobStatus
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, sse_events
from tests.ingest.test_web import Site, served_site


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[str]:
    with served_site(tmp_path / "site") as url:
        yield url


def _lore(home: Path, site: str) -> Lore:
    return Lore(
        load_settings(
            home=home,
            api={"rate_limit_per_minute": 0, "web_sources": [site + "/docs/"], "web_crawls_per_tenant": 2},
            worker={"in_process": False},  # the test runs the worker: a queued crawl stays queued until then
        )
    )


def test_a_running_crawl_stops_before_its_next_page_and_only_its_admins_may_stop_it(
    tmp_path: Path, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lore = _lore(tmp_path / "home", site)
    kb = lore.create_kb("shared", owner_tenant="acme")
    lore.catalog.share_kb(kb.id, "globex")
    roles = ["admin", "platform-admin"]
    keys = {
        "owner": lore.catalog.create_api_key("acme", roles)[1],
        "owner_staff": lore.catalog.create_api_key("acme", ["staff"])[1],
        "sharee": lore.catalog.create_api_key("globex", roles)[1],
        "stranger": lore.catalog.create_api_key("umbrella", roles)[1],
    }
    reached, go = threading.Event(), threading.Event()
    record = lore.catalog.add_job_event

    def hold_after_first_page(job_id: str, event: dict[str, Any]) -> None:
        record(job_id, event)
        if event["data"].get("stage") == "page" and event["data"]["outcome"] == "fetched":
            reached.set()  # the crawl is between its first page and the next: hold it until the cancel is in
            assert go.wait(60)

    with TestClient(create_app(lore)) as client:
        r = client.post(
            "/api/kbs/shared/sources", json={"url": f"{site}/docs/index.html"}, headers=auth(keys["owner"])
        )
        assert r.status_code == 202, r.text
        url = f"/api/kbs/shared/jobs/{r.json()['job']['id']}"
        monkeypatch.setattr(lore.catalog, "add_job_event", hold_after_first_page)
        runner = threading.Thread(target=Worker(lore, "w").run_once)
        runner.start()
        try:
            assert reached.wait(120), "the crawl never fetched its first page"
            # Not theirs to stop: another tenant the KB is shared with, a stranger (404), a non-admin (403).
            for who, status in (("sharee", 404), ("stranger", 404), ("owner_staff", 403)):
                refused = client.post(f"{url}/cancel", json={"reason": "no"}, headers=auth(keys[who]))
                assert refused.status_code == status, (who, refused.text)
            assert lore.catalog.job_cancelled_by(r.json()["job"]["id"]) is None
            r = client.post(f"{url}/cancel", json={"reason": "wrong site"}, headers=auth(keys["owner"]))
            assert r.status_code == 200 and r.json()["status"] == "running" and r.json()["cancelled_by"]
        finally:
            go.set()
            runner.join()
        done = client.get(url, headers=auth(keys["owner"])).json()
        assert done["status"] == "failed" and done["error_status"] == 409
        assert done["error"] == f"cancelled by {r.json()['cancelled_by']} after 1 page(s); nothing indexed"
        events = sse_events(client.get(f"{url}/events", headers=auth(keys["owner"])).text)
        pages = [d["url"] for k, d in events if k == "status" and d.get("stage") == "page"]
        assert pages == [f"{site}/docs/index.html"]
        assert events[-1] == (
            "error",
            {"message": done["error"], "status": 409, "cancelled_by": r.json()["cancelled_by"]},
        )
        # The next pages were never asked for, and nothing was indexed.
        assert [p for p, _, _ in Site.seen if p.startswith("/docs/")] == ["/docs/index.html"]
        assert lore.catalog.list_files(kb.id) == []
        entry = next(e for e in lore.catalog.audit_log(kb="shared") if e.action == "cancel")
        assert entry.detail["reason"] == "wrong site" and entry.target == done["id"]
        # Cancelled already: the same answer again, the job as it ended.
        again = client.post(f"{url}/cancel", headers=auth(keys["owner"]))
        assert again.status_code == 200 and again.json()["error"] == done["error"]
    lore.close()


def test_a_queued_crawl_is_cancelled_at_once_and_frees_its_slot(tmp_path: Path, site: str) -> None:
    lore = _lore(tmp_path / "home", site)
    for name in ("one", "two", "three"):
        lore.create_kb(name, owner_tenant="acme")
    admin = lore.catalog.create_api_key("acme", ["admin"])[1]
    body = {"url": f"{site}/docs/leave.html", "max_pages": 1}
    with TestClient(create_app(lore), headers=auth(admin)) as client:
        first = client.post("/api/kbs/one/sources", json=body).json()["job"]["id"]
        second = client.post("/api/kbs/two/sources", json=body).json()["job"]["id"]
        assert client.post("/api/kbs/three/sources", json=body).status_code == 429  # two queued: the cap
        r = client.post(f"/api/kbs/one/jobs/{first}/cancel", json={"reason": "later"})
        assert r.status_code == 200 and r.json()["status"] == "failed" and r.json()["cancelled_by"]
        assert client.post("/api/kbs/three/sources", json=body).status_code == 202  # its slot is free
        ran = Worker(lore, "w").run_once()  # the oldest crawl still queued: not the cancelled one
        assert ran is not None and ran.id == second and ran.status is JobStatus.SUCCEEDED
    assert [p for p, _, _ in Site.seen if p.startswith("/docs/")] == ["/docs/leave.html"]  # only `two`'s
    assert lore.catalog.list_files(lore.catalog.get_kb("one").id) == []
    lore.close()
