"""Web pages as sources: fetch pages (links followed within a prefix, or a sitemap's list), honour
robots.txt, keep each page's main text (trafilatura) as a Markdown file named by its URL.

Re-fetching is conditional (ETag / Last-Modified), and the ingest pipeline skips a page whose
extracted text has the same hash as before, so a second crawl of an unchanged site indexes nothing.
Every fetch ends by its page's deadline and every crawl by its own (`WebBudget`), and a sitemap is read
only as far as the page limit needs.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict
from urllib.parse import urldefrag, urlsplit
from urllib.robotparser import RobotFileParser

import httpx
import lxml.html
from lxml import etree

from lore.errors import LoadError, LoreError
from lore.ingest.files import SourceFile
from lore.ingest.loaders.encoding import decode_bytes
from lore.ingest.web_budget import SitemapReader, Watchdog, WebBudget, failure
from lore.ingest.web_guard import WebGuard
from lore.storage.layout import HasId, web_cache_dir

USER_AGENT = "LoreBot/0.1 (+knowledge-base ingest)"
_HTML = ("text/html", "application/xhtml+xml")
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
_ROBOTS_BYTES = 500_000


CANCELLED = "the crawl was cancelled"  # why the pages a stopped crawl did not reach were not fetched


class PageState(TypedDict, total=False):
    """What pages.json keeps of a fetched page: its cached file, validators and links."""

    file: str
    etag: str | None
    last_modified: str | None
    links: list[str]


@dataclass
class Crawl:
    """What a crawl found: pages to ingest (named by URL) and URLs refused with the reason."""

    sources: list[SourceFile] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0  # pages answered 304 Not Modified


class WebCrawler:
    """Fetches pages into `cache_dir` (one file per URL plus `pages.json` with validators and links)."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        max_pages: int = 100,
        max_bytes: int = 20_000_000,
        timeout_s: float = 20.0,
        user_agent: str = USER_AGENT,
        guard: WebGuard | None = None,
        budget: WebBudget | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.cache_dir, self.max_pages, self.max_bytes, self.user_agent = (
            cache_dir,
            max_pages,
            max_bytes,
            user_agent,
        )
        self.guard = guard  # with one, every request (redirects too) must be inside its allow-list
        self.budget, self.timeout_s = budget or WebBudget(), timeout_s
        self.deadline = time.monotonic() + self.budget.crawl_s  # a crawler is one crawl
        self.stop, self.stopped = stop, False  # asked before each page: True stops the crawl (`stopped`)
        self.client = httpx.Client(
            timeout=timeout_s,
            follow_redirects=True,
            # A new connection per request: the page deadline's watchdog knows the socket of each fetch.
            limits=httpx.Limits(max_keepalive_connections=0),
            headers={"User-Agent": user_agent},
            event_hooks={"request": [guard.hook]} if guard is not None else None,
        )
        self._robots: dict[str, RobotFileParser] = {}
        self._state_file = cache_dir / "pages.json"
        self._state: dict[str, PageState] = (
            json.loads(self._state_file.read_text(encoding="utf-8")) if self._state_file.is_file() else {}
        )

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def crawl(self, start: str, prefix: str | None = None) -> Crawl:
        """Breadth-first from `start`, following links that begin with `prefix` (default: the start
        URL's folder), until `max_pages` pages are fetched."""
        start = _clean(start)
        if prefix is None:
            parts = urlsplit(start)
            prefix = f"{parts.scheme}://{parts.netloc}{parts.path.rsplit('/', 1)[0]}/"
        return self._visit([start], prefix, follow=True)

    def sitemap(self, url: str, prefix: str | None = None) -> Crawl:
        """The pages a sitemap (or sitemap index) lists, optionally only those under `prefix`: at most
        `max_pages` entries are taken, and no further sitemap file is read once they are found."""
        reader = SitemapReader(self.sitemap_locs, self.max_pages, self.budget, prefix)
        reader.read(_clean(url), depth=0)
        crawl = self._visit(reader.found, prefix or "", follow=False)
        crawl.refused[:0] = reader.refused
        return crawl

    @property
    def crawl_over(self) -> str:
        """The reason given for what the crawl's deadline cut."""
        return f"crawl time limit of {self.budget.crawl_s:g} s reached"

    def _visit(self, queue_start: list[str], prefix: str, follow: bool) -> Crawl:
        crawl = Crawl()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        queue, seen = deque(queue_start), set(queue_start)
        try:
            while queue and len(crawl.sources) < self.max_pages and time.monotonic() < self.deadline:
                if self.stop is not None and self.stop():
                    self.stopped = True
                    break
                url = queue.popleft()
                if self.guard is not None and (reason := self.guard.refusal(url)):
                    crawl.refused.append((url, reason))
                    continue
                try:
                    source, links = self._page(url, crawl)
                except LoreError as exc:
                    crawl.refused.append((url, str(exc)))
                    continue
                if source is not None:
                    crawl.sources.append(source)
                for link in links if follow else []:
                    if link.startswith(prefix) and link not in seen:
                        seen.add(link)
                        queue.append(link)
        finally:
            self._state_file.write_text(json.dumps(self._state, indent=1), encoding="utf-8")
        if queue:
            full = len(crawl.sources) >= self.max_pages
            reason = (
                CANCELLED
                if self.stopped
                else f"page limit of {self.max_pages} reached"
                if full
                else self.crawl_over
            )
            crawl.refused.extend((u, reason) for u in queue)
        return crawl

    def _page(self, url: str, crawl: Crawl) -> tuple[SourceFile | None, list[str]]:
        """Fetch one page (conditionally) and save its main text; returns the source and its links."""
        if not self._allowed(url):
            raise LoreError("disallowed by robots.txt")
        known = self._state.get(url, {})
        cached = self.cache_dir / str(known.get("file", ""))
        headers = {}
        if known.get("file") and cached.is_file():
            headers = {
                k: str(v)
                for k, v in (
                    ("If-None-Match", known.get("etag")),
                    ("If-Modified-Since", known.get("last_modified")),
                )
                if v
            }
        body, response = self._get(url, headers)
        if response.status_code == 304 and headers:
            crawl.unchanged += 1
            return SourceFile(cached, url), [str(u) for u in known.get("links", [])]
        if response.status_code != 200:
            raise LoreError(f"HTTP {response.status_code}")
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        links: list[str] = []
        if ctype in _HTML or (not ctype and url.endswith((".html", ".htm"))):
            text, _ = decode_bytes(body, url, response.charset_encoding)
            page, links, index = _main_text(text, url)
            if not index:
                return None, links
            name, data = _name(url, ".md" if page else ".html"), (page or text).encode("utf-8")
        else:
            suffix = Path(urlsplit(url).path).suffix.lower() or mimetypes.guess_extension(ctype) or ".bin"
            name, data = _name(url, suffix), body
        (self.cache_dir / name).write_bytes(data)
        self._state[url] = {
            "file": name,
            "etag": response.headers.get("etag"),
            "last_modified": response.headers.get("last-modified"),
            "links": links,
        }
        return SourceFile(self.cache_dir / name, url), links

    def _get(
        self, url: str, headers: dict[str, str], max_bytes: int | None = None
    ) -> tuple[bytes, httpx.Response]:
        """The whole body, fetched by the page's deadline (or the crawl's, if sooner) and within the size."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise LoreError(self.crawl_over)
        seconds = min(self.budget.page_s, left)
        over = self.crawl_over if left < self.budget.page_s else f"page time limit of {seconds:g} s reached"
        watchdog = Watchdog(seconds)
        try:
            with self.client.stream(
                "GET",
                url,
                headers=headers,
                timeout=min(self.timeout_s, seconds),
                extensions={"trace": watchdog.trace},
            ) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise LoreError(f"larger than {limit / 1e6:g} MB")
                    if watchdog.fired:
                        raise LoreError(over)
                    chunks.append(chunk)
                if watchdog.fired:
                    raise LoreError(over)
                return b"".join(chunks), response
        except httpx.HTTPError as exc:
            if watchdog.fired or (isinstance(exc, httpx.TimeoutException) and seconds < self.timeout_s):
                raise LoreError(over) from exc
            raise LoreError(failure(exc)) from exc
        finally:
            watchdog.cancel()

    def _allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        robots = self._robots.get(origin)
        if robots is None:
            robots = self._robots[origin] = RobotFileParser(origin + "/robots.txt")
            try:
                body, response = self._get(origin + "/robots.txt", {}, _ROBOTS_BYTES)
            except LoreError:  # unreachable, slow or huge: as if there were none (the page is timed too)
                body, response = b"", None
            if response is not None and response.status_code in (401, 403):
                robots.disallow_all = True  # type: ignore[attr-defined]
            elif response is not None and response.status_code == 200:
                robots.parse(decode_bytes(body, "robots.txt", response.charset_encoding)[0].splitlines())
            else:
                robots.allow_all = True  # type: ignore[attr-defined]
        return robots.can_fetch(self.user_agent, url)

    def sitemap_locs(self, url: str) -> tuple[bool, list[str], bool]:
        """(whether it is a sitemap index, its first `sitemap_entries` locations, whether more were left)."""
        try:
            body, response = self._get(url, {}, self.budget.sitemap_bytes)
        except LoreError as exc:
            raise LoreError(f"sitemap {url}: {exc}") from exc
        if response.status_code != 200:
            raise LoreError(f"sitemap {url}: HTTP {response.status_code}")
        try:
            root = etree.fromstring(body, parser=etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError as exc:
            raise LoreError(f"sitemap {url}: not XML") from exc
        locs: list[str] = []
        cap = self.budget.sitemap_entries
        for el in root.iter(f"{_SITEMAP_NS}loc"):
            if el.text and el.text.strip():
                if len(locs) == cap:
                    return root.tag == f"{_SITEMAP_NS}sitemapindex", locs, True
                locs.append(_clean(el.text.strip()))
        return root.tag == f"{_SITEMAP_NS}sitemapindex", locs, False


def cache_dir(home: Path, kb: HasId) -> Path:
    """Where a KB's fetched pages and their validators live (shared by CLI and API crawls), by its id."""
    return web_cache_dir(home, kb)


def fetch_pages(
    crawler: WebCrawler, urls: list[str], sitemap: str | None = None, prefix: str | None = None
) -> Crawl:
    """Crawl from each URL, and the pages a sitemap lists, into one Crawl (each page once)."""
    total = Crawl()
    parts = [crawler.crawl(check_url(u), prefix) for u in urls]
    if sitemap:
        parts.append(crawler.sitemap(check_url(sitemap), prefix))
    for part in parts:
        total.sources += part.sources
        total.refused += part.refused
        total.unchanged += part.unchanged
    total.sources = list({s.name: s for s in total.sources}.values())
    return total


def _main_text(html: str, url: str) -> tuple[str | None, list[str], bool]:
    """(the page's main text as Markdown or None, its links, whether robots meta lets it be indexed)."""
    import trafilatura

    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None, [], True
    robots = " ".join(m.get("content", "") for m in doc.xpath("//meta[@name='robots']")).lower()
    links = []
    if "nofollow" not in robots:
        doc.make_links_absolute(url, resolve_base_href=True, handle_failures="discard")
        links = list(
            dict.fromkeys(
                _clean(link)
                for el, attr, link, _ in doc.iterlinks()
                if el.tag == "a" and attr == "href" and link.startswith(("http://", "https://"))
            )
        )
    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_tables=True,
        include_links=False,
        include_comments=False,
        favor_recall=True,
    )
    if text:
        meta = trafilatura.extract_metadata(html, default_url=url)
        title = (meta.title or "").strip() if meta else ""
        if title and not text.lstrip().startswith("# "):
            text = f"# {title}\n\n{text}"
    return text, links, "noindex" not in robots


def _clean(url: str) -> str:
    return urldefrag(url.strip())[0]


def _name(url: str, suffix: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:24] + suffix


def check_url(url: str) -> str:
    """`url` if it is an http(s) URL with a host, else a LoadError naming it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LoadError(url, "not an http(s) URL")
    return url
