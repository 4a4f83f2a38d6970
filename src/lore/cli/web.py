"""Web sources for a local `lore ingest`: URLs crawled within a prefix, or a sitemap's pages."""

from __future__ import annotations

from lore.engine import Lore
from lore.errors import LoreError
from lore.ingest.web import Crawl, WebCrawler, cache_dir, fetch_pages
from lore.ingest.web_budget import WebBudget


def fetch_sources(
    lore: Lore, kb: str, urls: list[str], sitemap: str | None, prefix: str | None, max_pages: int
) -> Crawl:
    """Crawl each URL (and the sitemap) into the KB's web cache; none fetched is an error."""
    crawler = WebCrawler(
        cache_dir(lore.settings.home, lore.catalog.get_kb(kb)),
        max_pages=max_pages,
        max_bytes=int(lore.settings.ingest.max_file_mb * 1e6),
        budget=WebBudget.from_settings(lore.settings.ingest),
    )
    try:
        crawl = fetch_pages(crawler, urls, sitemap, prefix)
    finally:
        crawler.close()
    if not crawl.sources:
        refused = crawl.refused
        raise LoreError("no web page could be fetched" + (f": {refused[0][1]}" if refused else ""))
    return crawl
