"""`POST /api/kbs/{kb}/sources`: web pages crawled by the server inside `api.web_sources`, against the small
site of tests/ingest/test_web.py served by a local HTTP server (plus two redirects leaving the allow-list),
through the HTTP API (`?wait=true`: the crawl job's result in the reply) and through
`LoreClient.ingest_url` (sync and async, following the job) and the remote CLI on a live uvicorn."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from functools import partial
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from lore.api import create_app
from lore.cli.main import app
from lore.client import AsyncLoreClient, LoreAPIError, LoreClient
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import ConfigError
from lore.ingest.web_guard import WebGuard
from tests.api.conftest import LiveServer, auth
from tests.ingest.test_web import PAGES, Site

runner = CliRunner()
WAIT = "/api/kbs/web/sources?wait=true"  # the crawl job's result in the reply (default: 202 + the job)


class RedirectingSite(Site):
    """The test site, plus /docs/jump.html -> /other/ (outside) and /docs/away.html -> another host name."""

    def do_GET(self) -> None:
        targets = {
            "/docs/jump.html": "/other/outside.html",
            "/docs/away.html": f"http://localhost:{self.server.server_address[1]}/docs/leave.html",
        }
        if self.path in targets:
            Site.seen.append((self.path, None, None))
            self.send_response(302)
            self.send_header("Location", targets[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


@pytest.fixture()
def base(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(RedirectingSite, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Site.seen.clear()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{url}/docs/leave.html</loc></url><url><loc>{url}/other/outside.html</loc></url></urlset>",
        encoding="utf-8",
    )
    yield url
    server.shutdown()
    server.server_close()


def _service(tmp_path: Path, web_sources: list[str]) -> tuple[Lore, dict[str, str]]:
    """A fresh home with an unversioned KB `web` and keys: (lore, {role: secret})."""
    lore = Lore(
        load_settings(
            home=tmp_path / "home",
            api={"rate_limit_per_minute": 0, "web_sources": web_sources, "web_max_pages": 50},
        )
    )
    lore.create_kb("web")
    secrets = {
        "admin": lore.catalog.create_api_key("default", ["admin"])[1],
        "staff": lore.catalog.create_api_key("default", ["staff"])[1],
        "other": lore.catalog.create_api_key("tenant-b", ["admin"])[1],
    }
    return lore, secrets


def test_off_unless_configured(tmp_path: Path, base: str) -> None:
    lore, keys = _service(tmp_path, [])
    with TestClient(create_app(lore), headers=auth(keys["admin"])) as client:
        r = client.post("/api/kbs/web/sources", json={"url": f"{base}/docs/index.html"})
        assert r.status_code == 403 and "api.web_sources" in r.json()["detail"]
    assert Site.seen == []
    lore.close()


def test_crawl_through_the_api_with_robots_prefix_limit_and_tenant(tmp_path: Path, base: str) -> None:
    lore, keys = _service(tmp_path, [f"{base}/docs/"])
    with TestClient(create_app(lore), headers=auth(keys["admin"])) as client:
        # The policy of ingest: an employee may not, another tenant does not see the KB.
        body = {"url": f"{base}/docs/index.html"}
        assert client.post("/api/kbs/web/sources", json=body, headers=auth(keys["staff"])).status_code == 403
        assert client.post("/api/kbs/web/sources", json=body, headers=auth(keys["other"])).status_code == 404
        assert Site.seen == []

        r = client.post(WAIT, json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["counts"] == {"ingested": 4} and got["pages"] == 4
        assert {(x["url"], x["reason"]) for x in got["refused"]} == {
            (f"{base}/docs/private/salaries.html", "disallowed by robots.txt")
        }
        paths = [p for p, _, _ in Site.seen]
        assert "/other/outside.html" not in paths and "/docs/private/salaries.html" not in paths
        hits = client.post("/api/search", json={"kb": "web", "query": "paid annual leave days", "top_k": 3})
        assert hits.json()["hits"][0]["file"] == f"{base}/docs/leave.html"
        stored = lore.search("web", "paid annual leave days")[0].chunk
        assert stored.tenant_id == "default"  # the caller's tenant owns the pages

        # Again: asked conditionally, nothing re-indexed.
        again = client.post(WAIT, json=body).json()
        assert again["counts"] == {"skipped": 4} and again["unchanged"] >= 1

        limited = client.post(WAIT, json={**body, "max_pages": 1}).json()
        assert any(x["reason"] == "page limit of 1 reached" for x in limited["refused"])
        over = client.post("/api/kbs/web/sources", json={**body, "max_pages": 51})
        assert over.status_code == 422 and "api.web_max_pages" in over.json()["detail"]
    lore.close()


@pytest.mark.parametrize(
    "body",
    [
        {"url": "/other/outside.html"},  # another folder of the same host
        {"url": "file:///etc/passwd"},
        {"url": "http://user:pw@{host}/docs/index.html"},
        {"url": "/docs/../other/outside.html"},
        {"url": "/docs/%2e%2e/other/outside.html"},
        {"url": "http://localhost:{port}/docs/index.html"},  # same server, another host name
        {"url": "/docs/index.html", "prefix": "/other/"},
        {"url": "/sitemap.xml", "sitemap": True},
    ],
)
def test_urls_outside_the_allow_list_are_refused(tmp_path: Path, base: str, body: dict) -> None:
    lore, keys = _service(tmp_path, [f"{base}/docs/"])
    host, port = base.split("//")[1], base.rsplit(":", 1)[1]
    body = {k: (base + v if isinstance(v, str) and v.startswith("/") else v) for k, v in body.items()}
    body = {k: v.format(host=host, port=port) if isinstance(v, str) else v for k, v in body.items()}
    with TestClient(create_app(lore), headers=auth(keys["admin"])) as client:
        r = client.post("/api/kbs/web/sources", json=body)
    assert r.status_code == 403, r.text
    assert (
        "not fetched" in r.json()["detail"]
        or "only http(s)" in r.json()["detail"]
        or "outside" in (r.json()["detail"])
    )
    assert Site.seen == []
    lore.close()


def test_redirects_and_sitemap_entries_stay_inside(tmp_path: Path, base: str) -> None:
    lore, keys = _service(tmp_path, [f"{base}/docs/", f"{base}/sitemap.xml"])
    with TestClient(create_app(lore), headers=auth(keys["admin"])) as client:
        for page in ("jump", "away"):
            r = client.post(WAIT, json={"url": f"{base}/docs/{page}.html"})
            assert r.status_code == 422 and "outside the server's allowed web sources" in r.json()["detail"]
        assert [p for p, _, _ in Site.seen if p != "/robots.txt"] == ["/docs/jump.html", "/docs/away.html"]

        mapped = client.post(WAIT, json={"url": f"{base}/sitemap.xml", "sitemap": True})
        assert mapped.status_code == 200, mapped.text
        assert [f["name"] for f in mapped.json()["files"]] == [f"{base}/docs/leave.html"]
        assert mapped.json()["refused"] == [
            {
                "url": f"{base}/other/outside.html",
                "reason": "outside the server's allowed web sources (api.web_sources)",
            }
        ]
        assert "/other/outside.html" not in [p for p, _, _ in Site.seen]
    lore.close()


def test_client_ingest_url_sync_and_async(tmp_path: Path, base: str) -> None:
    lore, keys = _service(tmp_path, [f"{base}/docs/"])
    with LiveServer(create_app(lore)) as server:
        with LoreClient(server.url, keys["admin"]) as client:
            result = client.ingest_url("web", f"{base}/docs/travel.html", prefix=f"{base}/docs/", max_pages=1)
            assert result.count("ingested") == 1 and result.files[0].name == f"{base}/docs/travel.html"
            assert result.refused == [(f"{base}/docs/etag.html", "page limit of 1 reached")]
            with pytest.raises(LoreAPIError) as refused:
                client.ingest_url("web", f"{base}/other/outside.html")
            assert refused.value.status == 403 and "api.web_sources" in str(refused.value)

        async def run() -> None:
            async with AsyncLoreClient(server.url, keys["admin"]) as aio:
                again = await aio.ingest_url("web", f"{base}/docs/travel.html", max_pages=1)
                assert again.count("skipped") == 1 and again.unchanged == 1

        asyncio.run(run())

        # The remote CLI goes through the same client call.
        cli = ["--server", server.url, "--key", keys["admin"], "ingest", "--kb", "web"]
        out = runner.invoke(app, [*cli, f"{base}/docs/leave.html", "--max-pages", "1"])
        assert out.exit_code == 0 and "1 ingested" in out.output, out.output
        out = runner.invoke(app, [*cli, "--sitemap", f"{base}/sitemap.xml"])
        assert out.exit_code == 2 and "HTTP 403" in out.output and "api.web_sources" in out.output
    lore.close()


def test_guard_entries() -> None:
    guard = WebGuard(["https://intranet.example.com/hr/", "wiki.corp:8080", "http://docs.example.com"])
    assert guard.refusal("https://intranet.example.com/hr/leave.html") is None
    assert guard.refusal("https://INTRANET.example.com:443/hr/") is None
    assert guard.refusal("http://intranet.example.com/hr/") is not None  # another scheme
    assert guard.refusal("https://intranet.example.com.evil.net/hr/") is not None
    assert guard.refusal("https://intranet.example.com/robots.txt", host_only=True) is None
    assert guard.refusal("https://intranet.example.com/robots.txt") is not None
    assert (
        guard.refusal("http://wiki.corp:8080/any") is None and guard.refusal("http://wiki.corp/") is not None
    )
    assert guard.refusal("http://docs.example.com/a/b") is None
    assert guard.refusal("ftp://docs.example.com/") == "only http(s) URLs can be fetched"
    assert not WebGuard([]).enabled
    with pytest.raises(ConfigError, match="not an http"):
        load_settings(api={"web_sources": ["file:///etc"]})
