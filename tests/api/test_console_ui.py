"""The console in a real browser against a real `lore serve`: documents, chunks, retrieval test, feedback,
keys.

With LORE_SCREENSHOTS=<dir> (`make screenshots`) each panel is also written there as a PNG.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import EXAMPLES, SHARED

FIXTURES = SHARED / "fixtures" / "documents"
SHOTS = os.environ.get("LORE_SCREENSHOTS")


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str, Lore]]:
    lore = Lore(load_settings(home=tmp_path / "home"))
    _, secret = lore.catalog.create_api_key("default", ["admin", "platform-admin"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret, lore
    lore.close()


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"console-{name}.png"), full_page=True)


def test_console_documents_chunks_retrieval_feedback_keys(site, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not really a PDF")
    sign_in(page, url, secret)
    files = [
        EXAMPLES / "employee_handbook.md",
        EXAMPLES / "faq.csv",
        FIXTURES / "docling_xlsx_01.xlsx",
        broken,
    ]
    new_kb_with_files(page, "docs", files)
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")
    page.click("#versions tbody tr.active .rep")  # the quality report rendered as tables, not JSON
    page.wait_for_selector("#report table th")
    assert "broken.pdf" in page.inner_text("#report")
    shot(page, "versions")

    # Documents: every file with its status; the broken one says why; filter and open a document's chunks.
    page.click("button[data-tab=documents]")
    page.wait_for_selector("#docs tbody tr.st-failed")
    assert page.locator("#docs tbody tr").count() == 4
    failed = page.inner_text("#docs tbody tr.st-failed")
    assert "broken.pdf" in failed and page.inner_text("#docs tbody tr.st-failed .reason").strip()
    shot(page, "documents")
    page.fill("#docs-filter", "xlsx")
    expect(page.locator("#docs tbody tr")).to_have_count(1, timeout=60_000)  # no string predicates: CSP
    assert "1" in page.inner_text("#docs tbody tr td:nth-child(13)")  # in version 1
    page.click("#docs tbody tr .chunks-btn")
    page.wait_for_selector("#doc-chunks .chunk")
    assert "sheet" in page.inner_text("#doc-chunks .chunk .muted")
    shot(page, "chunks")

    # Retrieval test: hits with each score and the query's terms highlighted; the filter applied is shown.
    page.click("button[data-tab=retrieval]")
    expect(page.locator("#rt-kb")).to_have_value("docs", timeout=60_000)
    page.fill("#rt-query", "报销 材料")
    page.select_option("#rt-mode", "hybrid")
    page.click("#rt-form button")
    page.wait_for_selector("#rt-hits tbody tr mark")
    assert "employee_handbook.md" in page.inner_text("#rt-hits tbody tr:first-child")
    assert "tenant_ids" in page.inner_text("#rt-meta")
    shot(page, "retrieval")

    # Chat, thumbs-down, then the feedback panel shows it and exports it as an eval set.
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "docs")
    page.fill("#question", "报销需要什么材料？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .cite")
    page.once("dialog", lambda dialog: dialog.accept("needs the form number"))
    page.click(".msg.assistant .feedback .down")
    page.wait_for_selector(".msg.assistant .feedback .down:disabled")
    page.click("button[data-tab=feedback]")
    page.wait_for_selector("#fb tbody tr")
    assert "needs the form number" in page.inner_text("#fb tbody tr")
    shot(page, "feedback")
    with page.expect_download() as download:
        page.click("#fb-export")
    rows = [json.loads(line) for line in Path(download.value.path()).read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in rows] == ["报销需要什么材料？"]

    # Chat history: a new chat, then continue the earlier session from the list.
    page.click("button[data-tab=chat]")
    page.click("#new-chat")
    page.focus("#history")
    expect(page.locator("#history option").nth(1)).to_be_attached(timeout=60_000)
    page.select_option("#history", index=1)
    page.wait_for_selector(".msg.user")
    assert "报销需要什么材料" in page.inner_text("#messages")

    # Keys: create one (secret shown once, and it works), then revoke it.
    page.click("button[data-tab=keys]")
    page.wait_for_selector("#keys tbody tr")
    page.fill("#key-name", "reader")
    page.fill("#key-roles", "employee")
    page.click("#key-form button")
    page.wait_for_selector("#key-secret:not(.hidden)")
    new_secret = page.inner_text("#key-secret").split()[-1]
    assert lore.catalog.authenticate(new_secret) is not None
    shot(page, "keys")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#keys tbody tr:last-child .revoke")
    page.wait_for_selector("#keys tbody tr.revoked")
    assert lore.catalog.authenticate(new_secret) is None


def test_console_explains_what_a_key_may_not_do(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    _, reader = lore.catalog.create_api_key("default", ["employee"])
    sign_in(page, url, reader)
    page.click("button[data-tab=keys]")
    page.wait_for_selector("#tab-keys .denied:not(.hidden)")
    assert "may not" in page.inner_text("#tab-keys .denied") and "admin" in page.inner_text(
        "#tab-keys .denied"
    )
