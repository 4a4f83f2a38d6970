"""A crawl's budgets against a real local HTTP server: a page that drips bytes (in its body or its
headers) is cut at the page deadline, a crawl of many slow pages ends at the crawl deadline without
fetching the rest, and a sitemap index is read only as far as `max_pages` needs, within its caps."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from lore.config import load_settings
from lore.errors import LoreError
from lore.ingest.web import WebCrawler
from lore.ingest.web_budget import WebBudget

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHILDREN, ENTRIES = 200, 100
TEXT = "Every employee receives twenty-two days of paid annual leave per calendar year. " * 5


class Drip(BaseHTTPRequestHandler):
    """Fast pages and sitemaps, and pages that send one byte every 0.2 s (in the body, or in the status
    line and headers) until the client goes or the test ends; every request is counted."""

    seen: ClassVar[Counter[str]] = Counter()
    stop: ClassVar[threading.Event] = threading.Event()
    active: ClassVar[list[int]] = [0]
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_GET(self) -> None:
        Drip.seen[self.path] += 1
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path.startswith("/slowhead/"):
            return self._drip(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n")
        if "/slow" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            return self._drip(b"<html>" + b" " * 99_994)
        if self.path == "/mixed/index.html":
            links = "".join(f'<a href="slow-{i}.html">page {i}</a> ' for i in range(20))
            return self._send(f"<html><body><main><p>{TEXT}</p>{links}</main></body></html>", "text/html")
        if self.path == "/index.xml":
            locs = "".join(f"<sitemap><loc>{base}/sm/{i}.xml</loc></sitemap>" for i in range(CHILDREN))
            return self._send(f'<sitemapindex xmlns="{NS}">{locs}</sitemapindex>', "application/xml")
        if self.path.startswith("/sm/") or self.path == "/big.xml":
            n = self.path.rsplit("/", 1)[1].split(".")[0]
            locs = "".join(f"<url><loc>{base}/page/{n}-{j}.html</loc></url>" for j in range(1000))
            return self._send(f'<urlset xmlns="{NS}">{locs}</urlset>', "application/xml")
        if self.path.startswith("/page/"):
            return self._send(
                f"<html><body><main><h1>{self.path}</h1><p>{TEXT}</p></main></body></html>", "text/html"
            )
        self.send_error(404)

    def _send(self, text: str, ctype: str) -> None:
        body = text.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip(self, data: bytes) -> None:
        with Drip.lock:
            Drip.active[0] += 1
        try:
            for byte in data:
                if Drip.stop.wait(0.2):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            pass  # the client cut it
        finally:
            with Drip.lock:
                Drip.active[0] -= 1

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def drip() -> Iterator[str]:
    """The base URL of a fresh Drip server (counters reset)."""
    Drip.seen.clear()
    Drip.stop.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Drip.stop.set()
    server.shutdown()
    server.server_close()


def _crawler(tmp_path: Path, max_pages: int = 100, **budget: float) -> WebCrawler:
    return WebCrawler(tmp_path / "cache", max_pages=max_pages, budget=WebBudget(**budget))  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["slow", "slowhead"])
def test_a_dripping_page_is_cut_at_the_page_deadline(tmp_path: Path, drip: str, where: str) -> None:
    # One byte every 0.2 s never trips a read timeout (20 s here): only a deadline on the whole fetch ends it.
    crawler = _crawler(tmp_path, page_s=1.0, crawl_s=60.0)
    started = time.monotonic()
    crawl = crawler.crawl(f"{drip}/{where}/a.html")
    elapsed = time.monotonic() - started
    crawler.close()
    assert crawl.sources == []
    assert crawl.refused == [(f"{drip}/{where}/a.html", "page time limit of 1 s reached")]
    assert Drip.seen[f"/{where}/a.html"] == 1
    assert elapsed < 1.0 + 5.0  # the deadline and generous slack; the drip alone would take 5.5 h


def test_a_crawl_of_slow_pages_ends_at_the_crawl_deadline(tmp_path: Path, drip: str) -> None:
    crawler = _crawler(tmp_path, page_s=1.0, crawl_s=2.5)
    started = time.monotonic()
    crawl = crawler.crawl(f"{drip}/mixed/index.html")
    elapsed = time.monotonic() - started
    crawler.close()
    reasons = Counter(reason for _, reason in crawl.refused)
    fetched = sum(n for path, n in Drip.seen.items() if path.startswith("/mixed/slow-"))
    assert [s.name for s in crawl.sources] == [f"{drip}/mixed/index.html"]
    assert reasons["page time limit of 1 s reached"] <= 2 and fetched <= 4  # the rest is never asked for
    assert reasons["crawl time limit of 2.5 s reached"] >= 16
    assert len(crawl.refused) == 20
    assert elapsed < 2.5 + 5.0


def test_sitemap_index_is_read_only_as_far_as_max_pages_needs(tmp_path: Path, drip: str) -> None:
    crawler = _crawler(tmp_path, max_pages=1)
    crawl = crawler.sitemap(f"{drip}/index.xml")
    crawler.close()
    sitemaps = sum(n for path, n in Drip.seen.items() if path.endswith(".xml"))
    pages = sum(n for path, n in Drip.seen.items() if path.startswith("/page/"))
    assert sitemaps == 2 and pages == 1 and sum(Drip.seen.values()) <= 4  # index, one child, page, robots
    assert [s.name for s in crawl.sources] == [f"{drip}/page/0-0.html"]
    assert (f"{drip}/index.xml", f"page limit of 1 reached: {CHILDREN - 1} entries not read") in crawl.refused
    assert len(crawl.refused) <= 2  # the notes, not 20,000 entries


def test_sitemap_caps_per_file_and_per_crawl(tmp_path: Path, drip: str) -> None:
    # Entries per file: the first ones are taken, the rest noted.
    crawler = _crawler(tmp_path, sitemap_entries=3)
    crawl = crawler.sitemap(f"{drip}/big.xml")
    crawler.close()
    assert len(crawl.sources) == 3 and sum(Drip.seen[p] for p in Drip.seen if p.startswith("/page/")) == 3
    assert (f"{drip}/big.xml", "more than 3 entries: the rest not read") in crawl.refused

    # Bytes per file: a larger sitemap is refused with the reason (no address, no exception text).
    crawler = _crawler(tmp_path, sitemap_bytes=1000)
    with pytest.raises(LoreError) as too_big:
        crawler.sitemap(f"{drip}/big.xml")
    crawler.close()
    assert str(too_big.value) == f"sitemap {drip}/big.xml: larger than 0.001 MB"

    # Files per crawl: an index whose children hold nothing under the prefix stops at the file cap.
    Drip.seen.clear()
    crawler = _crawler(tmp_path, sitemap_files=4)
    crawl = crawler.sitemap(f"{drip}/index.xml", prefix=f"{drip}/elsewhere/")
    crawler.close()
    assert sum(n for path, n in Drip.seen.items() if path.endswith(".xml")) == 4
    assert crawl.sources == [] and crawl.refused == [(f"{drip}/sm/3.xml", "sitemap file limit of 4 reached")]


def test_budget_comes_from_settings() -> None:
    settings = load_settings(
        ingest={"web_page_timeout_s": 2, "web_crawl_timeout_s": 9, "web_sitemap_max_mb": 1}
    )
    budget = WebBudget.from_settings(settings.ingest)
    assert (budget.page_s, budget.crawl_s, budget.sitemap_bytes) == (2, 9, 1_000_000)
    assert (budget.sitemap_entries, budget.sitemap_files) == (50_000, 100)
