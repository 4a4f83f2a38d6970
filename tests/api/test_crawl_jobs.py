"""Web crawls as catalog jobs (`POST /api/kbs/{kb}/sources` answers 202 + the job): the job's events show
each page as it is fetched, the tenant's cap counts queued and running crawls in the catalog (a third gets
429 on any replica, another tenant's is accepted), and only the job's tenant and the KB owner's admins read
it; against the small site of tests/ingest/test_web.py on a local HTTP server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.jobs import Worker
from lore.client import AskEvent, LoreClient
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer, auth, sse_events
from tests.ingest.test_web import Site, served_site

DOCS = "/docs/"
PAGE_NAMES = ("leave", "travel", "etag", "index")


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    with served_site(root) as url:
        (root / "sitemap.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{url}/docs/{p}.html</loc></url>" for p in PAGE_NAMES)
            + "</urlset>",
            encoding="utf-8",
        )
        yield url


def _lore(home: Path, site: str, **worker: Any) -> Lore:
    return Lore(
        load_settings(
            home=home,
            api={"rate_limit_per_minute": 0, "web_sources": [site + DOCS], "web_crawls_per_tenant": 2},
            worker=worker,
        )
    )


def _statuses(events: list[tuple[str, dict]]) -> list[dict]:
    return [d for k, d in events if k == "status"]


def test_a_crawl_is_a_job_whose_events_show_each_page(tmp_path: Path, site: str) -> None:
    lore = _lore(tmp_path / "home", site)
    lore.create_kb("web")
    key = lore.catalog.create_api_key("default", ["admin"])[1]
    with TestClient(create_app(lore), headers=auth(key)) as client:
        r = client.post("/api/kbs/web/sources", json={"url": f"{site}/docs/index.html"})
        assert r.status_code == 202, r.text
        job = r.json()["job"]
        assert job["kind"] == "crawl" and job["status"] in ("queued", "running") and job["result"] is None
        assert r.json()["events"] == f"/api/kbs/web/jobs/{job['id']}/events"
        assert r.headers["location"] == f"/api/kbs/web/jobs/{job['id']}"
        events = sse_events(client.get(r.json()["events"]).text)  # streams until the job's end
        assert [k for k, _ in events][0] == "start" and events[-1][0] == "end"
        pages = [d for d in _statuses(events) if d["stage"] == "page"]
        assert {d["url"]: d["outcome"] for d in pages} == {
            **{f"{site}/docs/{p}.html": "fetched" for p in ("index", "leave", "travel", "etag")},
            f"{site}/docs/private/salaries.html": "refused",
        }
        fetched = [d for d in pages if d["outcome"] == "fetched"]
        assert [d["counts"]["fetched"] for d in fetched] == [1, 2, 3, 4]  # counted as they come
        assert next(d for d in pages if d["outcome"] == "refused")["reason"] == "disallowed by robots.txt"
        crawled = next(d for d in _statuses(events) if d["stage"] == "crawled")
        assert crawled == {"stage": "crawled", "pages": 4, "unchanged": 0, "refused": 1}
        assert {d["file"] for d in _statuses(events) if d["stage"] == "file_done"} == {
            d["url"] for d in fetched
        }
        result = events[-1][1]
        assert result["pages"] == 4 and result["counts"] == {"ingested": 4}
        assert result["refused"] == [
            {"url": f"{site}/docs/private/salaries.html", "reason": "disallowed by robots.txt"}
        ]
        done = client.get(f"/api/kbs/web/jobs/{job['id']}").json()
        assert done["status"] == "succeeded" and done["result"] == result
        crawls = [e for e in lore.catalog.audit_log(kb="web") if e.action == "crawl"]
        assert [(e.target, e.detail["url"]) for e in crawls] == [(job["id"], f"{site}/docs/index.html")]

        # Again: each page asked conditionally; the one answering by ETag is unchanged, nothing re-indexed.
        again = client.post("/api/kbs/web/sources?wait=true", json={"url": f"{site}/docs/index.html"})
        assert again.status_code == 200 and again.json()["counts"] == {"skipped": 4}
        events = sse_events(client.get(f"/api/kbs/web/jobs/{again.headers['x-lore-job']}/events").text)
        outcomes = {d["url"]: d["outcome"] for d in _statuses(events) if d["stage"] == "page"}
        assert outcomes[f"{site}/docs/etag.html"] == "unchanged"
    lore.close()


def test_sitemap_expansion_in_the_job_stops_at_max_pages(tmp_path: Path, site: str) -> None:
    lore = Lore(
        load_settings(
            home=tmp_path / "home",
            api={"rate_limit_per_minute": 0, "web_sources": [site]},
        )
    )
    lore.create_kb("web")
    key = lore.catalog.create_api_key("default", ["admin"])[1]
    with LiveServer(create_app(lore)) as server, LoreClient(server.url, key) as client:
        seen: list[AskEvent] = []
        result = client.ingest_url(
            "web", f"{site}/sitemap.xml", sitemap=True, max_pages=2, progress=seen.append
        )
    lore.close()
    assert [f.name for f in result.files] == [f"{site}/docs/leave.html", f"{site}/docs/travel.html"]
    assert result.refused == [(f"{site}/sitemap.xml", "page limit of 2 reached: 2 entries not read")]
    read = [e.data for e in seen if e.event == "status" and e.data.get("stage") == "sitemap"]
    assert read == [
        {"stage": "sitemap", "url": f"{site}/sitemap.xml", "index": False, "entries": 4, "more": False}
    ]
    pages = [e.data["url"] for e in seen if e.event == "status" and e.data.get("stage") == "page"]
    assert pages == [f"{site}/docs/leave.html", f"{site}/docs/travel.html"]
    fetched = [p for p, _, _ in Site.seen if p.startswith("/docs/")]
    assert fetched == ["/docs/leave.html", "/docs/travel.html"]  # the other entries were never fetched


def test_a_third_crawl_of_a_tenant_is_429_on_any_replica(tmp_path: Path, site: str) -> None:
    home = tmp_path / "home"
    lore = _lore(home, site, in_process=False)  # no worker: the queued crawls stay queued
    replica = _lore(home, site, in_process=False)  # another API process on the same catalog
    for name, owner in (("one", "acme"), ("two", "acme"), ("three", "acme"), ("theirs", "globex")):
        lore.create_kb(name, owner_tenant=owner)
    acme = lore.catalog.create_api_key("acme", ["admin"])[1]
    globex = lore.catalog.create_api_key("globex", ["admin"])[1]
    body = {"url": f"{site}/docs/leave.html", "max_pages": 1}
    with TestClient(create_app(lore)) as a, TestClient(create_app(replica)) as b:
        first = a.post("/api/kbs/one/sources", json=body, headers=auth(acme))
        second = b.post("/api/kbs/two/sources", json=body, headers=auth(acme))
        assert (first.status_code, second.status_code) == (202, 202), second.text
        for client in (a, b):
            third = client.post("/api/kbs/three/sources", json=body, headers=auth(acme))
            assert third.status_code == 429 and third.headers["retry-after"] == "30"
            assert "already runs 2 web crawls (api.web_crawls_per_tenant)" in third.json()["detail"]
        theirs = b.post("/api/kbs/theirs/sources", json=body, headers=auth(globex))
        assert theirs.status_code == 202, theirs.text
        assert Site.seen == []  # nothing fetched yet: no worker runs

        ran = Worker(lore, "worker-1").run_once()  # as `lore worker` would: the oldest queued job
        assert ran is not None and ran.id == first.json()["job"]["id"] and ran.result is not None
        assert ran.result["pages"] == 1
        third = b.post("/api/kbs/three/sources", json=body, headers=auth(acme))
        assert third.status_code == 202, third.text  # a slot is free again
    lore.close()
    replica.close()


def test_a_crawl_job_is_read_only_by_its_tenant_and_the_kb_owner(tmp_path: Path, site: str) -> None:
    lore = _lore(tmp_path / "home", site)
    kb = lore.create_kb("shared", owner_tenant="acme")
    lore.catalog.share_kb(kb.id, "globex")
    lore.catalog.share_kb(kb.id, "initech")
    roles = ["admin", "platform-admin"]
    keys = {
        "owner": lore.catalog.create_api_key("acme", roles)[1],
        "sharee": lore.catalog.create_api_key("globex", roles)[1],
        "sharee_staff": lore.catalog.create_api_key("globex", ["staff"])[1],
        "third": lore.catalog.create_api_key("initech", roles)[1],
        "stranger": lore.catalog.create_api_key("umbrella", roles)[1],
    }
    body = {"url": f"{site}/docs/leave.html", "max_pages": 1}
    with TestClient(create_app(lore)) as client:
        r = client.post("/api/kbs/shared/sources?wait=true", json=body, headers=auth(keys["sharee"]))
        assert r.status_code == 200, r.text
        theirs = f"/api/kbs/shared/jobs/{r.headers['x-lore-job']}"
        r = client.post("/api/kbs/shared/sources?wait=true", json=body, headers=auth(keys["owner"]))
        assert r.status_code == 200, r.text
        owners = f"/api/kbs/shared/jobs/{r.headers['x-lore-job']}"

        def status(path: str, who: str) -> int:
            return client.get(path, headers=auth(keys[who])).status_code

        # The sharee's job: its own tenant and the KB owner's admins read it; another sharee does not.
        job = client.get(theirs, headers=auth(keys["sharee"])).json()
        assert job["result"]["files"][0]["name"] == f"globex|{site}/docs/leave.html"
        assert status(theirs, "owner") == 200 and status(theirs + "/events", "owner") == 200
        for path in (theirs, theirs + "/events"):
            assert status(path, "third") == 404 and status(path, "stranger") == 404
            assert status(path, "sharee_staff") == 403
        # The owner's job is not the sharee's to read.
        assert status(owners, "owner") == 200
        assert status(owners, "sharee") == 404 and status(owners + "/events", "sharee") == 404
        assert "globex" not in client.get(owners, headers=auth(keys["owner"])).text

        failed = client.post(
            "/api/kbs/shared/sources?wait=true",
            json={"url": f"{site}/docs/private/salaries.html"},
            headers=auth(keys["sharee"]),
        )
        assert failed.status_code == 422 and "disallowed by robots.txt" in failed.json()["detail"]
        events = sse_events(
            client.get(
                f"/api/kbs/shared/jobs/{failed.headers['x-lore-job']}/events", headers=auth(keys["sharee"])
            ).text
        )
        assert events[-1][0] == "error" and events[-1][1]["status"] == 422
    lore.close()


def test_wait_gives_the_job_if_it_has_not_ended_and_the_client_follows_it(tmp_path: Path, site: str) -> None:
    lore = Lore(
        load_settings(
            home=tmp_path / "home",
            api={"rate_limit_per_minute": 0, "web_sources": [site + DOCS]},
            ingest={"web_crawl_timeout_s": 0.5},
            worker={"in_process": False, "lease_s": 1.0},  # no worker runs the jobs until the test does
        )
    )
    lore.create_kb("web")
    key = lore.catalog.create_api_key("default", ["admin"])[1]
    with LiveServer(create_app(lore)) as server, LoreClient(server.url, key) as client:
        r = httpx.post(
            f"{server.url}/api/kbs/web/sources?wait=true",
            json={"url": f"{site}/docs/leave.html", "max_pages": 1},
            headers=auth(key),
            timeout=60,
        )
        assert r.status_code == 202 and r.json()["job"]["status"] == "queued"  # past the crawl deadline

        got: list[Any] = []
        follower = threading.Thread(
            target=lambda: got.append(client.ingest_url("web", f"{site}/docs/travel.html", max_pages=1))
        )
        follower.start()
        deadline = time.monotonic() + 60
        while len(lore.catalog.list_jobs(lore.catalog.get_kb("web").id)) < 2:
            assert time.monotonic() < deadline, "the client queued no crawl"
            time.sleep(0.05)
        # A worker process of its own (its crawl deadline is its settings'), as `lore worker` would be.
        runner = Lore(load_settings(home=tmp_path / "home", api={"web_sources": [site + DOCS]}))
        worker = Worker(runner, "worker-1")
        assert worker.run_once() is not None and worker.run_once() is not None  # both crawls, oldest first
        follower.join(timeout=60)
        runner.close()
    lore.close()
    assert got and [f.name for f in got[0].files] == [f"{site}/docs/travel.html"]
    assert got[0].count("ingested") == 1 and got[0].refused == [
        (f"{site}/docs/etag.html", "page limit of 1 reached")
    ]
