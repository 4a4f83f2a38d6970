"""`lore ingest URL` and `--sitemap` against a small site served by a local HTTP server (http.server with
its real Last-Modified / If-Modified-Since handling, plus ETags on one page)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from lore.cli.main import app

runner = CliRunner()
FILLER = (
    "Lanternfish Robotics publishes its policies on the intranet so that every employee finds the same "
    "answer. The policy owner reviews this page every quarter and records the changes in the log below. "
)
PAGES = {
    "robots.txt": "User-agent: *\nDisallow: /docs/private/\n",
    "docs/index.html": """<html><head><title>Policies</title></head><body><h1>Policies</h1><ul>
        <li><a href="leave.html">Leave</a></li><li><a href="leave.html#apply">Apply for leave</a></li>
        <li><a href="travel.html">Travel</a></li><li><a href="private/salaries.html">Salaries</a></li>
        <li><a href="../other/outside.html">Elsewhere</a></li><li><a href="mailto:hr@example.com">HR</a></li>
        </ul></body></html>""",
    "docs/leave.html": f"""<html><head><title>Annual leave</title></head><body><nav>
        <a href="index.html">Home</a></nav>
        <main><h1>Annual leave</h1><p>Every employee receives twenty-two days of paid annual leave per
        calendar year. {FILLER}</p><h2 id="apply">How to apply</h2><p>Submit the request in the HR portal two
        weeks ahead; the manager approves it within three working days. {FILLER}</p></main>
        <footer>Copyright 2026 Lanternfish</footer></body></html>""",
    "docs/travel.html": f"""<html><head><title>Travel</title></head><body><main><h1>Travel policy</h1>
        <p>The hotel ceiling in first-tier cities is 600 yuan per night. {FILLER}</p>
        <p>See also <a href="etag.html">the per-diem table</a>.</p></main></body></html>""",
    "docs/etag.html": f"""<html><head><title>Per diem</title></head><body><main><h1>Per diem</h1>
        <p>The meal allowance on business trips is 150 yuan per day. {FILLER}</p></main></body></html>""",
    "docs/private/salaries.html": (
        f"<html><body><main><p>Confidential salary bands. {FILLER}</p></main></body></html>"
    ),
    "other/outside.html": (
        f"<html><body><main><p>The canteen opens at seven. {FILLER}</p></main></body></html>"
    ),
}


class Site(SimpleHTTPRequestHandler):
    """Static files with the standard Last-Modified handling; /docs/etag.html answers by ETag instead."""

    seen: ClassVar[list[tuple[str, str | None, str | None]]] = []

    def do_GET(self) -> None:
        Site.seen.append(
            (self.path, self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since"))
        )
        if self.path == "/docs/etag.html":
            body = (Path(self.directory) / "docs" / "etag.html").read_bytes()
            tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == tag:
                self.send_response(304)
                self.send_header("ETag", tag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("ETag", tag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def served_site(root: Path) -> Iterator[str]:
    """`PAGES` written under `root` and served by `Site` on a free port; yields the base URL."""
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Site, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Site.seen.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "site"
    with served_site(root) as base:
        (root / "sitemap.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{base}/docs/leave.html</loc></url><url><loc>{base}/other/outside.html</loc></url></urlset>",
            encoding="utf-8",
        )
        yield base, root


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    assert runner.invoke(app, ["kb", "create", "web"]).exit_code == 0
    return tmp_path / "home"


def _search(query: str) -> list[dict]:
    result = runner.invoke(app, ["search", query, "--kb", "web", "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["hits"]


def test_crawl_within_prefix_honours_robots_and_cites_urls(site: tuple[str, Path], home: Path) -> None:
    base, root = site
    result = runner.invoke(app, ["ingest", f"{base}/docs/index.html", "--kb", "web"])
    assert result.exit_code == 0, result.output
    assert "disallowed by robots.txt" in result.output and "4 ingested" in result.output
    paths = [p for p, _, _ in Site.seen]
    assert "/other/outside.html" not in paths and "/docs/private/salaries.html" not in paths
    assert paths.count("/docs/leave.html") == 1  # the #apply link is the same page

    (hit, *_) = _search("how many days of paid annual leave")
    assert hit["file"] == f"{base}/docs/leave.html" and "twenty-two days" in hit["text"]
    assert "Copyright" not in hit["text"] and "Home" not in hit["text"]  # main text only
    assert all("salary" not in h["text"] for h in _search("confidential salary bands"))

    # Again: every page is asked conditionally and nothing is re-indexed.
    Site.seen.clear()
    again = runner.invoke(app, ["ingest", f"{base}/docs/index.html", "--kb", "web"])
    assert again.exit_code == 0 and "4 skipped" in again.output, again.output
    conditional = {p: (etag, since) for p, etag, since in Site.seen}
    assert conditional["/docs/etag.html"][0] and conditional["/docs/leave.html"][1]

    # A changed page (new content, newer mtime) is fetched in full and re-indexed; the rest stay.
    travel = root / "docs" / "travel.html"
    travel.write_text(PAGES["docs/travel.html"].replace("600 yuan", "650 yuan"), encoding="utf-8")
    os.utime(travel, (travel.stat().st_atime, travel.stat().st_mtime + 60))
    third = runner.invoke(app, ["ingest", f"{base}/docs/index.html", "--kb", "web"])
    assert "1 ingested" in third.output and "3 skipped" in third.output, third.output
    assert "650 yuan" in _search("hotel ceiling per night")[0]["text"]


def test_page_limit_and_sitemap(site: tuple[str, Path], home: Path) -> None:
    base, _ = site
    limited = runner.invoke(app, ["ingest", f"{base}/docs/index.html", "--kb", "web", "--max-pages", "2"])
    assert limited.exit_code == 0 and "page limit of 2 reached" in limited.output, limited.output
    assert "2 ingested" in limited.output

    mapped = runner.invoke(
        app, ["ingest", "--sitemap", f"{base}/sitemap.xml", "--kb", "web", "--prefix", f"{base}/other/"]
    )
    assert mapped.exit_code == 0 and "1 ingested" in mapped.output, mapped.output
    assert _search("when does the canteen open")[0]["file"] == f"{base}/other/outside.html"


def test_unreachable_or_bad_urls_are_clear_errors(home: Path) -> None:
    result = runner.invoke(app, ["ingest", "http://127.0.0.1:9/nothing.html", "--kb", "web"])
    assert result.exit_code == 2 and "no web page could be fetched" in result.output
    result = runner.invoke(app, ["ingest", "--kb", "web"])
    assert result.exit_code == 2 and "give files, folders or URLs" in result.output
