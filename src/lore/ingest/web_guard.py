"""Which URLs a crawl started through the API may fetch: an allow-list of URL prefixes or host names
(`api.web_sources`), checked for every request, redirects and sitemap entries included (SSRF guard).

Hosts are matched by name as configured, not by the address they resolve to.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

import httpx

from lore.errors import LoreError

_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Entry:
    scheme: str | None  # None: a bare host name, either scheme
    host: str
    port: int | None  # None: any port (bare host) or the scheme's default
    path: str


def _parse(entry: str) -> _Entry:
    text = entry.strip()
    if "://" not in text:
        host, _, port = text.strip("/").partition(":")
        return _Entry(None, host.lower(), int(port) if port else None, "/")
    url = httpx.URL(text)
    if url.scheme not in _PORTS or not url.host:
        raise ValueError(f"api.web_sources: {entry!r} is not an http(s) URL or host name")
    return _Entry(url.scheme, url.host, url.port or _PORTS[url.scheme], url.path or "/")


class WebGuard:
    """An allow-list of URL prefixes (`https://intranet.example.com/policies/`) or hosts (`wiki.corp`)."""

    def __init__(self, entries: list[str]) -> None:
        self.entries = [_parse(e) for e in entries if e.strip()]

    @property
    def enabled(self) -> bool:
        """False for an empty list: web sources are off."""
        return bool(self.entries)

    def refusal(self, url: str, *, host_only: bool = False) -> str | None:
        """Why `url` may not be fetched, or None; `host_only` checks the origin alone (robots.txt)."""
        try:
            parsed = httpx.URL(url)
            port = parsed.port or _PORTS.get(parsed.scheme)
        except (httpx.InvalidURL, ValueError):
            return "not a valid URL"
        if parsed.scheme not in _PORTS or not parsed.host:
            return "only http(s) URLs can be fetched"
        if parsed.userinfo:
            return "URLs with a user name or password are not fetched"
        if ".." in unquote(parsed.path).split("/"):
            return "URLs with '..' path segments are not fetched"
        path = parsed.path or "/"
        for e in self.entries:
            if e.host != parsed.host or (e.scheme is not None and e.scheme != parsed.scheme):
                continue
            if e.port is not None and e.port != port:
                continue
            if host_only or path.startswith(e.path):
                return None
        return "outside the server's allowed web sources (api.web_sources)"

    def check(self, url: str) -> str:
        """`url`, or a LoreError with the reason it may not be fetched."""
        reason = self.refusal(url)
        if reason:
            raise LoreError(f"{url}: {reason}")
        return url

    def hook(self, request: httpx.Request) -> None:
        """httpx request hook: every request (each redirect hop too) must be allowed."""
        url = str(request.url)
        reason = self.refusal(url, host_only=request.url.path == "/robots.txt")
        if reason:
            raise LoreError(f"{url}: {reason}")
