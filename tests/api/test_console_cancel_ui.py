"""The console's admin tools in a real browser against a real service: cancelling a running build from the
admin tab (its button disabled while it cancels), and keys made with an expiry that list their last use."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from lore.catalog import JobStatus, VersionStatus
from tests.api import test_console_ui
from tests.api.test_console_admin_ui import console_errors, signed_in
from tests.api.test_web_ui import new_kb_with_files
from tests.conftest import EXAMPLES

site = test_console_ui.site  # a live service in this process and an admin + platform-admin key


def test_a_running_build_is_cancelled_from_the_admin_tab(site, page, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    reached, go = threading.Event(), threading.Event()
    record = lore.catalog.add_job_event

    def hold_after_first_file(job_id: str, event: dict[str, Any]) -> None:
        record(job_id, event)
        if event["data"].get("stage") == "file_done":
            reached.set()  # the build is between two files: hold it until the console has cancelled
            assert go.wait(120)

    monkeypatch.setattr(lore.catalog, "add_job_event", hold_after_first_file)
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    cancel = page.locator("#cancel-build")
    expect(cancel).to_be_hidden()
    try:
        page.click("#build")
        assert reached.wait(120), "the build never finished its first file"
        expect(cancel).to_be_visible(timeout=60_000)
        page.once("dialog", lambda d: d.accept("uploaded the wrong folder"))
        # The button turns "Cancelling…" at once; the catalog is read once the server has answered.
        with page.expect_response(lambda r: r.url.endswith("/cancel"), timeout=60_000) as answered:
            cancel.click()
        assert answered.value.status == 200
        expect(cancel).to_be_disabled(timeout=60_000)
        expect(cancel).to_have_text("Cancelling…")
        kb = lore.catalog.get_kb("docs")
        job = lore.catalog.list_jobs(kb.id)[0]
        assert job.cancelled_by and job.status is JobStatus.RUNNING
    finally:
        go.set()
    expect(page.locator("#build-status")).to_have_text("Build cancelled", timeout=60_000)
    expect(cancel).to_be_hidden()
    assert lore.catalog.list_versions(kb.id)[-1].status is VersionStatus.FAILED
    entry = next(e for e in lore.catalog.audit_log(kb="docs") if e.action == "cancel")
    assert entry.detail["reason"] == "uploaded the wrong folder"
    assert not errors, errors


def test_keys_are_made_with_an_expiry_and_show_their_last_use(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    signed_in(page, url, secret)
    page.click("button[data-tab=keys]")
    page.wait_for_selector("#keys tbody tr")
    page.fill("#key-name", "contractor")
    page.fill("#key-days", "7")
    page.click("#key-form button")
    page.wait_for_selector("#copy-secret:not(.hidden)")
    made = lore.catalog.list_api_keys()[-1]
    assert made.name == "contractor" and made.expires_at is not None
    assert 6.9 < (made.expires_at - made.created_at).total_seconds() / 86400 <= 7.0
    row = page.locator("#keys tbody tr", has_text="contractor")
    expect(row.locator("td").nth(5)).to_have_text(made.expires_at.isoformat()[:16].replace("T", " "))
    expect(row.locator("td").nth(6)).to_have_text("-")  # never used yet
    own = page.locator("#keys tbody tr").first  # the console's own key, used by every request
    expect(own.locator("td").nth(5)).to_have_text("never")
    expect(own.locator("td").nth(6)).not_to_have_text("-")
    assert not errors, errors


def test_one_document_is_parsed_again_as_a_new_version(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    page.click("#build")
    expect(page.locator("#build-status")).to_have_text("Done", timeout=180_000)
    page.wait_for_selector("#versions tbody tr.active")
    page.once("dialog", lambda d: d.accept())
    page.click(".reparse[data-name='faq.csv']")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("2", timeout=120_000)
    version = lore.catalog.list_versions(lore.catalog.get_kb("docs").id)[-1]
    assert (version.seq, version.files_changed, version.files_reused) == (2, 1, 1)  # only faq.csv again
    assert version.description == "re-parse faq.csv"
    assert not errors, errors
