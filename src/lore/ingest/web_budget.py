"""What bounds a web crawl (`[ingest] web_*`): a deadline for each page's whole fetch, enforced by a
watchdog on its socket, one for the whole crawl, and sitemaps read only as far as the page limit needs."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from lore.config import IngestSettings
from lore.errors import LoreError

# (is it a sitemap index, its first locations up to the per-file cap, were more left) of one sitemap file
SitemapLocs = Callable[[str], tuple[bool, list[str], bool]]


@dataclass(frozen=True)
class WebBudget:
    """Time and size limits of one crawl: whole-fetch and whole-crawl deadlines, caps on each sitemap file
    and on the sitemap files read."""

    page_s: float = 30.0
    crawl_s: float = 600.0
    sitemap_bytes: int = 50_000_000
    sitemap_entries: int = 50_000
    sitemap_files: int = 100

    @classmethod
    def from_settings(cls, ingest: IngestSettings) -> WebBudget:
        """The budget `[ingest]` configures."""
        return cls(
            ingest.web_page_timeout_s,
            ingest.web_crawl_timeout_s,
            int(ingest.web_sitemap_max_mb * 1e6),
            ingest.web_sitemap_max_entries,
            ingest.web_sitemap_max_files,
        )


class SitemapReader:
    """A sitemap's page entries, read depth-first in order until `max_pages` are found; what is not read
    (further files, entries over a cap, failed child sitemaps) is noted in `refused` with the reason."""

    def __init__(self, locs: SitemapLocs, max_pages: int, budget: WebBudget, prefix: str | None) -> None:
        self.locs, self.max_pages, self.budget, self.prefix = locs, max_pages, budget, prefix
        self.found: list[str] = []
        self.refused: list[tuple[str, str]] = []
        self._files = 0

    def read(self, url: str, depth: int = 0) -> None:
        """Read one sitemap file (the first one's failure is the caller's error; a child's is noted)."""
        if self._files >= self.budget.sitemap_files:
            if self._files == self.budget.sitemap_files:  # noted once: the first file not read
                self.refused.append((url, f"sitemap file limit of {self.budget.sitemap_files} reached"))
                self._files += 1
            return
        self._files += 1
        try:
            index, locs, more = self.locs(url)
        except LoreError as exc:
            if depth == 0:
                raise
            self.refused.append((url, str(exc)))
            return
        if more:
            self.refused.append((url, f"more than {self.budget.sitemap_entries} entries: the rest not read"))
        for i, loc in enumerate(locs):
            if len(self.found) >= self.max_pages:
                left = len(locs) - i
                self.refused.append((url, f"page limit of {self.max_pages} reached: {left} entries not read"))
                return
            if index and depth < 3:
                self.read(loc, depth + 1)
            elif not index and (self.prefix is None or loc.startswith(self.prefix)) and loc not in self.found:
                self.found.append(loc)


class Watchdog:
    """Ends a fetch at its deadline whatever the server sends: shuts its socket down under a read that would
    otherwise wait on (a read timeout starts again with every byte a slow server drips)."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: dict[str, object]) -> None:
        """httpcore's trace hook: note each new connection's socket (under TLS, the wrapped one)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            get = getattr(stream, "get_extra_info", None)
            with self._lock:
                self._sock = get("socket") if get is not None else None
            if self.fired:
                self._shut()

    def cancel(self) -> None:
        """The fetch ended: no cut."""
        self._timer.cancel()

    def _fire(self) -> None:
        self.fired = True
        self._shut()

    def _shut(self) -> None:
        with self._lock:
            sock = self._sock
        if sock is not None:
            # the plain socket's shutdown, also under TLS (SSLSocket's own would drop its state)
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def failure(exc: httpx.HTTPError) -> str:
    """Why a fetch failed, without the exception's text (it may carry addresses)."""
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect"
    return f"cannot fetch ({type(exc).__name__})"
