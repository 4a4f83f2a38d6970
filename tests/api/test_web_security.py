"""Issue 12 finding 5 in a real browser: an uploaded HTML original never runs as a page of the Lore
origin, the UI works under its Content-Security-Policy, and the API key is kept in sessionStorage."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright import sync_api

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import CHROMIUM, LiveServer, auth

if CHROMIUM is None:  # `make test` installs it; a missing browser must not pass silently
    pytest.fail(
        "chromium not found: install it with `apt-get install -y chromium` (make test does)", pytrace=False
    )

EVIL = (
    "<html><body><h1>Parking policy</h1><p>The parking policy allows three cars per team in the "
    "north garage.</p><script>localStorage.setItem('pwned', sessionStorage.getItem('lore.key') || 'ran')"
    "</script></body></html>"
)


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A live server whose KB `own` holds an uploaded HTML page with a script in it."""
    lore = Lore(load_settings(home=tmp_path / "home", api={"rate_limit_per_minute": 0}))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    lore.create_kb("own")
    with LiveServer(create_app(lore)) as server:
        with httpx.Client(base_url=server.url, headers=auth(secret), timeout=120) as http:
            http.post(
                "/api/kbs/own/files", files=[("file", ("parking.html", EVIL.encode()))]
            ).raise_for_status()
            assert http.post("/api/kbs/own/ingest", json={}).json()["counts"] == {"ingested": 1}
        yield server.url, secret
    lore.close()


def test_html_original_never_runs_in_the_origin(site: tuple[str, str]) -> None:
    url, secret = site
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(locale="en-US", accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(60_000)
        console: list[str] = []
        page.on("console", lambda msg: console.append(msg.text))
        page.goto(url + "/")
        page.fill("#key", secret)
        page.dispatch_event("#key", "change")
        page.wait_for_selector("#chat-kb option", state="attached")
        assert page.evaluate("sessionStorage.getItem('lore.key')") == secret
        assert page.evaluate("localStorage.getItem('lore.key')") is None

        page.fill("#question", "How many cars does the parking policy allow per team?")
        page.press("#question", "Enter")
        page.wait_for_selector(".msg.assistant .cite")
        page.click(".msg.assistant .cite")
        page.wait_for_selector("#passage-link:not(.hidden)")
        href = page.get_attribute("#passage-link", "href")
        assert href and href.startswith("blob:")

        # Opening the original's link in a tab of its own ("open in new tab") downloads it: never a page.
        tab = context.new_page()
        # the navigation turns into a download
        with tab.expect_download() as download, contextlib.suppress(sync_api.Error):
            tab.goto(href)
        assert "Parking policy" in Path(download.value.path()).read_text(encoding="utf-8")
        # The same for the API URL itself, with the key the UI sends.
        direct = context.new_page()
        direct.set_extra_http_headers(auth(secret))
        with direct.expect_download(), contextlib.suppress(sync_api.Error):
            direct.goto(url + "/api/kbs/own/files/parking.html")
        page.click("button[data-tab=admin]")
        page.wait_for_selector("#uploads tbody tr")
        page.click("button[data-tab=traces]")
        page.wait_for_selector("#traces tbody tr")
        assert page.evaluate("localStorage.getItem('pwned')") is None  # the page's script never ran here
        assert not [m for m in console if "Content Security Policy" in m], console
        browser.close()
