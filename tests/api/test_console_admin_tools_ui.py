"""The console's administrator tools of issue 39 in a real browser against a real `lore serve`, as an admin on
a phone (390×844) and a wide screen (1600×1000): a KB's chunking with its preview, feedback made a FAQ
entry, and the quality report as a page. Each view: no horizontal scroll of the page, no serious or
critical axe-core violation, no browser console error."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from lore.scenario.config import Scenarios
from tests.api import test_console_ui
from tests.api.conftest import auth, sse_events
from tests.api.test_console_a11y import serious_violations
from tests.api.test_console_admin_ui import console_errors, signed_in
from tests.api.test_console_ui import shot
from tests.api.test_web_ui import new_kb_with_files
from tests.conftest import EXAMPLES

site = test_console_ui.site  # a live service and an admin + platform-admin key (tenant "default")
SIZES = pytest.mark.parametrize("size", [(390, 844), (1600, 1000)], ids=["phone", "wide"])


def fits(page) -> None:  # type: ignore[no-untyped-def]
    """The page does not scroll sideways (a wide table scrolls inside its own box)."""
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths


@SIZES
def test_chunking_settings_and_preview(site, page, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md"])
    page.click("button[data-tab=documents]")
    page.click("button[data-tab=admin]")  # the section loads with the tab
    expect(page.locator("#ck-child")).to_have_value(str(lore.settings.chunk.child_size), timeout=60_000)
    expect(page.locator("#ck-file option[value='employee_handbook.md']")).to_be_attached()
    expect(page.locator("#ck-strategy")).to_have_value(lore.settings.chunk.strategy)
    expect(page.get_by_role("combobox", name="Chunking strategy")).to_have_id("ck-strategy")  # its label
    page.fill("#ck-child", "80")
    page.fill("#ck-overlap", "0")
    page.fill("#ck-parent", "300")
    page.select_option("#ck-file", "employee_handbook.md")
    page.click("#ck-preview")
    page.wait_for_selector("#ck-list li.ck-chunk")
    shown = page.locator("#ck-list li.ck-chunk").count()
    assert shown > 3 and "nothing was built" in page.inner_text("#ck-summary")
    assert page.inner_text("#ck-summary").startswith("structure-aware:")
    assert page.locator("#ck-list .ck-path").count() > 0  # heading paths are shown
    assert lore.catalog.list_versions(lore.catalog.get_kb("docs").id) == []  # a preview builds nothing
    fits(page)
    assert not serious_violations(page)
    shot(page, f"chunking-{size[0]}")
    page.select_option("#ck-strategy", "semantic")  # previewed, then saved with the sizes
    page.click("#ck-preview")
    expect(page.locator("#ck-summary")).to_contain_text("semantic:", timeout=60_000)
    assert page.locator("#ck-list li.ck-chunk").count() > 0
    page.click("#ck-save")
    expect(page.locator("#ck-state")).to_contain_text("own sizes", timeout=60_000)
    kb = lore.catalog.get_kb("docs")
    own = lore.catalog.get_chunk_settings(kb.id)
    assert own is not None and own.sizes == (80, 0, 300) and own.strategy == "semantic"
    assert lore.kb_chunk_params(kb).schema.startswith("semantic-v1")
    page.select_option("#ck-strategy", "structure")  # not saved: the tab loads the KB's own again
    page.fill("#ck-child", "90")
    page.click("button[data-tab=documents]")
    page.click("button[data-tab=admin]")
    expect(page.locator("#ck-strategy")).to_have_value("semantic", timeout=60_000)
    expect(page.locator("#ck-child")).to_have_value("80")
    page.click("#ck-reset")
    expect(page.locator("#ck-state")).to_contain_text("configured sizes", timeout=60_000)
    expect(page.locator("#ck-strategy")).to_have_value(lore.settings.chunk.strategy)
    assert lore.catalog.get_chunk_settings(kb.id) is None
    assert not errors, errors


@SIZES
@pytest.mark.parametrize("site", ["hr"], indirect=True)
def test_feedback_becomes_a_faq_entry(site, page, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    errors = console_errors(page)
    admin = lore.catalog.create_api_key("bluefin", ["admin"], name="hr admin")[1]
    employee = lore.catalog.create_api_key("bluefin", ["employee"])[1]
    question = "How many days of annual leave do new hires get?"
    r = httpx.post(
        f"{url}/api/ask", json={"scenario": "hr", "question": question}, headers=auth(employee), timeout=120
    )
    trace = next(d for e, d in sse_events(r.text) if e == "end")["trace_id"]
    made = httpx.post(
        f"{url}/api/feedback", json={"trace_id": trace, "rating": -1}, headers=auth(employee), timeout=30
    )
    assert made.status_code == 201, made.text
    page.set_viewport_size({"width": size[0], "height": size[1]})
    signed_in(page, url, admin)
    page.click("button[data-tab=feedback]")
    page.click(f"#fb tbody tr:has-text('{question}') .fb-to-faq")
    expect(page.locator("#fb-faq")).to_be_visible(timeout=60_000)
    expect(page.locator("#fb-faq-q")).to_have_value(question)
    expect(page.locator("#fb-faq-scenario")).to_have_value("hr")
    page.fill("#fb-faq-a", "New hires get fifteen days of annual leave.")
    fits(page)
    assert not serious_violations(page)
    shot(page, f"feedback-faq-{size[0]}")
    page.click("#fb-faq-save")
    expect(page.locator("#fb tbody tr .fb-handled")).to_contain_text("faq:hr:", timeout=60_000)
    expect(page.locator("#fb-faq")).to_be_hidden()
    sc = Scenarios(lore.settings.scenario.scenarios_dir).get("hr")
    rows = httpx.get(f"{url}/api/scenarios/hr/faq", headers=auth(admin), timeout=30).json()["rows"]
    assert any(x["question"] == question and "fifteen days" in x["answer"] for x in rows), sc.faq_path
    fb = next(f for f in lore.catalog.list_feedback(kb=sc.kb_name) if f.trace_id == trace)
    assert fb.handled_at is not None and fb.handled_as and fb.handled_as.startswith("faq:hr:")
    fits(page)
    assert not serious_violations(page)
    assert not errors, errors


@SIZES
def test_quality_report_page(site, page, size: tuple[int, int], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    errors = console_errors(page)
    broken = tmp_path / "a_broken_file_with_a_rather_long_name_that_does_not_fit_a_phone.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not really a PDF")
    page.set_viewport_size({"width": size[0], "height": size[1]})
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv", broken])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")
    page.click("#versions tbody tr.active .rep")
    page.wait_for_selector("#report .rp")
    report = page.inner_text("#report")
    assert "Quality report" in report and "Summary" in report and "{" not in report  # a page, not JSON
    assert page.locator("#report .rp-fig").count() >= 5
    failures = page.locator("#report table.rp-table").first
    assert broken.name in failures.inner_text()  # the failure with its reason
    per_file = page.locator("#report table.rp-table").nth(1).inner_text()
    assert "employee_handbook.md" in per_file and "faq.csv" in per_file
    assert "Eval set" in report
    fits(page)
    assert not serious_violations(page)
    shot(page, f"report-{size[0]}")
    # The printable layout: the report alone.
    page.evaluate("document.body.classList.add('print-report')")
    page.emulate_media(media="print")
    assert page.evaluate("getComputedStyle(document.querySelector('#report')).visibility") == "visible"
    assert page.evaluate("getComputedStyle(document.querySelector('#tab-admin h3')).visibility") == "hidden"
    assert page.evaluate("getComputedStyle(document.querySelector('#rp-print')).display") == "none"
    page.emulate_media(media="screen")
    assert not errors, errors
