"""`POST /api/kbs/{kb}/sources` under budgets, on a live uvicorn against real local HTTP servers: one
tenant's flood of crawls of dripping pages neither holds the request threads nor stalls another tenant
(its crawls beyond `api.web_crawls_per_tenant` get 429, the rest end at the page deadline); a sitemap
index with `max_pages: 1` costs a handful of fetches; and a sharee's crawled pages are its own, so it can
no longer squat the owner's URL, and no reply names another tenant."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer, auth
from tests.ingest.test_web import served_site
from tests.ingest.test_web_budgets import Drip

FLOOD = 45  # more than the 40 threads Starlette's pool lends to every request


@pytest.fixture()
def drip() -> Iterator[str]:
    Drip.seen.clear()
    Drip.stop.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Drip.stop.set()  # the old code's crawls end here, not at a deadline
    server.shutdown()
    server.server_close()


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[str]:
    with served_site(tmp_path / "site") as url:
        yield url


def _lore(tmp_path: Path, web_sources: list[str], **ingest: float) -> Lore:
    settings = load_settings(
        home=tmp_path / "home",
        api={"rate_limit_per_minute": 0, "web_sources": web_sources, "web_crawls_per_tenant": 2},
        ingest=ingest,
    )
    return Lore(settings)


def test_a_flood_of_slow_crawls_does_not_stall_another_tenant(tmp_path: Path, drip: str) -> None:
    lore = _lore(tmp_path, [f"{drip}/slow/"], web_page_timeout_s=6.0, web_crawl_timeout_s=8.0)
    lore.create_kb("web")
    attacker = lore.catalog.create_api_key("default", ["admin"])[1]
    bystander = lore.catalog.create_api_key("tenant-b", ["admin"])[1]
    with LiveServer(create_app(lore)) as server, ThreadPoolExecutor(FLOOD) as pool:

        def crawl(i: int) -> httpx.Response:
            return httpx.post(
                f"{server.url}/api/kbs/web/sources?wait=true",
                json={"url": f"{drip}/slow/{i}.html"},
                headers=auth(attacker),
                timeout=120,
            )

        futures = [pool.submit(crawl, i) for i in range(FLOOD)]
        deadline = time.monotonic() + 30
        while Drip.active[0] == 0:  # a crawl is being dripped to
            assert time.monotonic() < deadline, "no crawl reached the slow server"
            time.sleep(0.02)
        kbs = httpx.get(f"{server.url}/api/kbs", headers=auth(bystander), timeout=10)
        assert kbs.status_code == 200
        assert Drip.active[0] > 0  # answered while the crawls still held their pages
        results = [f.result() for f in futures]
    lore.close()
    statuses = [r.status_code for r in results]
    assert statuses.count(429) >= FLOOD - 4, statuses
    assert all(r.headers.get("retry-after") for r in results if r.status_code == 429)
    crawled = [r for r in results if r.status_code != 429]  # each ended at its page deadline
    assert crawled and all(r.status_code == 422 for r in crawled)
    assert all("page time limit of 6 s reached" in r.json()["detail"] for r in crawled)


def test_sitemap_index_with_max_pages_1_is_a_handful_of_fetches(tmp_path: Path, drip: str) -> None:
    lore = _lore(tmp_path, [drip])
    lore.create_kb("web")
    key = lore.catalog.create_api_key("default", ["admin"])[1]
    with TestClient(create_app(lore), headers=auth(key)) as client:
        r = client.post(
            "/api/kbs/web/sources?wait=true",
            json={"url": f"{drip}/index.xml", "sitemap": True, "max_pages": 1},
        )
    lore.close()
    assert r.status_code == 200, r.text
    assert r.json()["pages"] == 1 and len(r.json()["refused"]) <= 2
    assert sum(Drip.seen.values()) <= 4, Drip.seen  # index, one child sitemap, one page, robots.txt


def test_a_sharee_cannot_squat_the_owners_url(tmp_path: Path, site: str) -> None:
    lore = _lore(tmp_path, [f"{site}/docs/"])
    kb = lore.create_kb("shared", owner_tenant="acme")
    lore.catalog.share_kb(kb.id, "globex")
    roles = ["admin", "platform-admin"]
    owner = lore.catalog.create_api_key("acme", roles)[1]
    sharee = lore.catalog.create_api_key("globex", roles)[1]
    body = {"url": f"{site}/docs/leave.html", "max_pages": 1}
    with TestClient(create_app(lore)) as client:
        first = client.post("/api/kbs/shared/sources?wait=true", json=body, headers=auth(sharee))
        assert first.status_code == 200, first.text
        assert [f["name"] for f in first.json()["files"]] == [f"globex|{site}/docs/leave.html"]

        again = client.post("/api/kbs/shared/sources?wait=true", json=body, headers=auth(owner))
        assert again.status_code == 200, again.text  # 409 "belongs to another tenant" before
        assert [f["name"] for f in again.json()["files"]] == [f"{site}/docs/leave.html"]
        assert "globex" not in again.text

        hits = client.post(
            "/api/search", json={"kb": "shared", "query": "paid annual leave days"}, headers=auth(owner)
        )
        assert {h["file"] for h in hits.json()["hits"]} == {f"{site}/docs/leave.html"}
        mine = client.post("/api/kbs/shared/sources?wait=true", json=body, headers=auth(sharee))
        assert mine.status_code == 200 and "acme" not in mine.text
    assert lore.catalog.file_owners(kb.id) == {
        f"globex|{site}/docs/leave.html": "globex",
        f"{site}/docs/leave.html": "acme",
    }
    lore.close()


def test_a_page_held_from_before_is_refused_without_naming_its_tenant(tmp_path: Path, site: str) -> None:
    lore = _lore(tmp_path, [f"{site}/docs/"])
    kb = lore.create_kb("shared", owner_tenant="acme")
    lore.catalog.share_kb(kb.id, "globex")
    lore.catalog.claim_files(kb.id, [f"{site}/docs/leave.html"], "globex")  # a plain name, as before
    owner = lore.catalog.create_api_key("acme", ["admin", "platform-admin"])[1]
    with TestClient(create_app(lore), headers=auth(owner)) as client:
        r = client.post(
            "/api/kbs/shared/sources?wait=true", json={"url": f"{site}/docs/leave.html", "max_pages": 1}
        )
        assert r.status_code == 422, r.text  # the whole crawl was a 409 before
        assert r.json()["detail"].startswith("no web page could be fetched")
        assert f"{site}/docs/leave.html: another tenant of this knowledge base holds this page" in r.text
        assert "globex" not in r.text
    lore.close()
