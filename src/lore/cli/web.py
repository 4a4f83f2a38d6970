"""Web sources for `lore ingest`: URLs crawled within a prefix, or a sitemap's pages."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from lore.engine import Lore
from lore.errors import LoreError
from lore.ingest.files import SourceFile
from lore.ingest.web import WebCrawler, cache_dir, fetch_pages
from lore.ingest.web_budget import WebBudget


def is_url(value: str) -> bool:
    """Whether a command-line input names a web page rather than a path."""
    return value.startswith(("http://", "https://"))


def fetch_sources(
    lore: Lore,
    kb: str,
    urls: list[str],
    sitemap: str | None,
    prefix: str | None,
    max_pages: int,
    console: Console,
) -> list[SourceFile]:
    """Crawl each URL (and the sitemap) into the KB's web cache; refused URLs are printed."""
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
    sources, refused, unchanged = crawl.sources, crawl.refused, crawl.unchanged
    if refused:
        table = Table("URL not fetched", "reason", title="web")
        for url, reason in refused:
            table.add_row(url, reason)
        console.print(table)
    console.print(f"web: {len(sources)} pages fetched ({unchanged} not modified since the last crawl)")
    if not sources and (urls or sitemap):
        raise LoreError("no web page could be fetched" + (f": {refused[0][1]}" if refused else ""))
    return sources
