"""From upload to ready the Documents panel shows a file's status changing at least every 2 s, while a real
build OCRs a scanned PDF (a long parse the server sends no event during).

The page runs on Playwright's fake clock, paused: time moves only in the test's 2-s steps, so what changes
in a step is what the panel draws on its own in 2 s (a 5-s refresh would leave the text as it was), and no
assertion depends on how long the real parse takes.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import EXAMPLES, SHARED

SCAN = (
    SHARED / "fixtures" / "documents" / "markitdown_MEDRPT-2024-PAT-3847_medical_report_scan.pdf"
)  # 3 pages
STEP_MS = 2000
MAX_STEPS = 20_000  # fake-time steps (a bound, not a timing); the loop ends when the file is ready


def test_documents_status_changes_every_2_s_from_upload_to_ready(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    page.clock.install()
    sign_in(page, url, secret)
    new_kb_with_files(page, "scans", [EXAMPLES / "faq.csv", SCAN])
    page.click("button[data-tab=documents]")
    page.select_option("#docs-kb", "scans")
    cell = page.locator("#docs tbody tr", has_text=SCAN.name).locator(".file-status")
    expect(cell).to_have_text("queued")  # uploaded, no build yet: waiting, and saying so
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    page.click("button[data-tab=admin]")
    page.click("#build")
    page.click("button[data-tab=documents]")
    expect(cell).not_to_have_text("queued")  # the build has begun: the row follows it

    seen: list[str] = [cell.inner_text()]
    for _ in range(MAX_STEPS):
        page.clock.run_for(STEP_MS)
        now = cell.inner_text()
        if now.startswith("ready"):
            seen.append(now)
            break
        assert now != seen[-1], f"no change in {STEP_MS} ms: {seen[-3:]} -> {now!r}"
        seen.append(now)
    assert seen[-1].startswith("ready"), seen[-5:]

    # The OCR (read, not yet chunked: no counts) lasted several steps with no event from the server, yet
    # each step drew a new text.
    reading = [s for s in seen if s.startswith("parsing") and "chunks" not in s]
    assert len(reading) >= 3, seen[:10]
    assert lore.catalog.get_file(lore.catalog.get_kb("scans").id, SCAN.name).ocr_pages == 3
