"""A crawler asked to stop (`WebCrawler(stop=…)`, as a cancelled crawl job is) fetches no further page: the
pages it did not reach are listed as refused with the reason, against the site of tests/ingest/test_web.py."""

from __future__ import annotations

from pathlib import Path

from lore.ingest.web import CANCELLED, WebCrawler, fetch_pages
from tests.ingest.test_web import Site, served_site


def test_a_stopped_crawl_fetches_no_further_page(tmp_path: Path) -> None:
    asked: list[int] = []

    def stop() -> bool:  # asked before each page: stop once two pages were asked for
        asked.append(len(asked))
        return len(asked) > 2

    with served_site(tmp_path / "site") as url:
        crawler = WebCrawler(tmp_path / "cache", stop=stop)
        try:
            crawl = fetch_pages(crawler, [f"{url}/docs/index.html"])
        finally:
            crawler.close()
        fetched = [p for p, _, _ in Site.seen if p.startswith("/docs/")]
    assert crawler.stopped and fetched == ["/docs/index.html", "/docs/leave.html"]
    assert [s.name for s in crawl.sources] == [f"{url}/docs/index.html", f"{url}/docs/leave.html"]
    assert {(u, r) for u, r in crawl.refused if r == CANCELLED} == {
        (f"{url}/docs/travel.html", CANCELLED),
        (f"{url}/docs/private/salaries.html", CANCELLED),
    }


def test_a_crawler_never_asked_to_stop_crawls_to_the_end(tmp_path: Path) -> None:
    with served_site(tmp_path / "site") as url:
        crawler = WebCrawler(tmp_path / "cache", stop=lambda: False)
        try:
            crawl = fetch_pages(crawler, [f"{url}/docs/index.html"])
        finally:
            crawler.close()
    assert not crawler.stopped and len(crawl.sources) == 4
    assert all(r != CANCELLED for _, r in crawl.refused)
