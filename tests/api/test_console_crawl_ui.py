"""Web crawls from the console's admin tab in a real browser against a real service: a crawl followed page by
page to its end, and a running crawl cancelled with its button (disabled while it cancels); against the small
site of tests/ingest/test_web.py on a local HTTP server, the service's own worker running the crawls."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from lore.api import create_app
from lore.catalog import JobStatus
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.api.test_console_a11y import serious_violations
from tests.api.test_console_admin_ui import console_errors, signed_in
from tests.ingest.test_web import Site, served_site


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str, Lore, str]]:
    """A live service that may crawl the local site's /docs/, an admin key, and the site's URL."""
    with served_site(tmp_path / "web") as web:
        lore = Lore(load_settings(home=tmp_path / "home", api={"web_sources": [web + "/docs/"]}))
        lore.create_kb("web")
        _, secret = lore.catalog.create_api_key("default", ["admin"])
        with LiveServer(create_app(lore)) as server:
            yield server.url, secret, lore, web
        lore.close()


def _admin_tab(page, url: str, secret: str) -> None:  # type: ignore[no-untyped-def]
    signed_in(page, url, secret)
    page.click("button[data-tab=admin]")
    expect(page.locator("#admin-kb")).to_have_value("web", timeout=60_000)
    expect(page.locator("#crawl-form")).to_be_visible()


def test_a_crawl_is_followed_page_by_page_to_its_end(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore, web = site
    errors = console_errors(page)
    page.set_viewport_size({"width": 390, "height": 844})
    _admin_tab(page, url, secret)
    page.fill("#crawl-url", f"{web}/docs/index.html")
    page.click("#crawl")
    expect(page.locator("#crawl-status")).to_have_text("Crawl done: 4 page(s) indexed", timeout=120_000)
    expect(page.locator("#cancel-crawl")).to_be_hidden()
    expect(page.locator("#kb-info")).to_contain_text("4 Files")  # the tab reloaded with the pages
    kb = lore.catalog.get_kb("web")
    assert {f.path for f in lore.catalog.list_files(kb.id)} == {
        f"{web}/docs/{p}.html" for p in ("index", "leave", "travel", "etag")
    }
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not serious_violations(page)
    assert not errors, errors


def test_a_running_crawl_is_cancelled_from_the_admin_tab(site, page, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore, web = site
    errors = console_errors(page)
    reached, go = threading.Event(), threading.Event()
    record = lore.catalog.add_job_event

    def hold_after_first_page(job_id: str, event: dict[str, Any]) -> None:
        record(job_id, event)
        if event["data"].get("stage") == "page" and event["data"]["outcome"] == "fetched":
            reached.set()  # the crawl is between two pages: hold it until the console has cancelled
            assert go.wait(120)

    monkeypatch.setattr(lore.catalog, "add_job_event", hold_after_first_page)
    _admin_tab(page, url, secret)
    cancel = page.locator("#cancel-crawl")
    expect(cancel).to_be_hidden()
    page.fill("#crawl-url", f"{web}/docs/index.html")
    try:
        page.click("#crawl")
        assert reached.wait(120), "the crawl never fetched its first page"
        expect(cancel).to_be_visible(timeout=60_000)
        expect(page.locator("#crawl-status")).to_contain_text(
            f"1 fetched · 0 refused · {web}/docs/index.html"
        )
        page.once("dialog", lambda d: d.accept("wrong site"))
        with page.expect_response(lambda r: r.url.endswith("/cancel"), timeout=60_000) as answered:
            cancel.click()
        assert answered.value.status == 200
        expect(cancel).to_be_disabled()
        expect(cancel).to_have_text("Cancelling…")
        job = lore.catalog.list_jobs(lore.catalog.get_kb("web").id)[0]
        assert job.cancelled_by and job.status is JobStatus.RUNNING
    finally:
        go.set()
    expect(page.locator("#crawl-status")).to_have_text("Crawl cancelled", timeout=60_000)
    expect(cancel).to_be_hidden()
    job = lore.catalog.get_job(job.id)
    assert job.status is JobStatus.FAILED and job.error_status == 409
    assert [p for p, _, _ in Site.seen if p.startswith("/docs/")] == ["/docs/index.html"]
    assert lore.catalog.list_files(lore.catalog.get_kb("web").id) == []
    entry = next(e for e in lore.catalog.audit_log(kb="web") if e.action == "cancel")
    assert entry.detail["reason"] == "wrong site"
    assert not errors, errors
