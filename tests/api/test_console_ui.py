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
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from tests.api.conftest import LiveServer
from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import EXAMPLES, SHARED
from tests.scenario.conftest import copy_scenarios

FIXTURES = SHARED / "fixtures" / "documents"
SHOTS = os.environ.get("LORE_SCREENSHOTS")


@pytest.fixture()
def site(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, str, Lore]]:
    """A live service; parametrized (indirect) with a scenario id, that sample scenario is built first."""
    scenarios = copy_scenarios(tmp_path / "scenarios") if hasattr(request, "param") else tmp_path / "none"
    lore = Lore(load_settings(home=tmp_path / "home", scenario={"scenarios_dir": scenarios}))
    if hasattr(request, "param"):
        build_scenario(lore, Scenarios(scenarios).get(request.param), activate=True)
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

    # A second version with one more file; the diff of the two, scored on an uploaded eval set.
    page.set_input_files("#files", [str(EXAMPLES / "travel_policy.docx")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr:nth-child(5)")
    page.click("#build")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("2", timeout=120_000)
    evals = tmp_path / "evals.jsonl"
    evals.write_text(
        '{"question": "报销需要什么材料？", "files": ["employee_handbook.md"]}\n', encoding="utf-8"
    )
    page.select_option("#diff-base", "1")
    page.select_option("#diff-cand", "2")
    page.set_input_files("#diff-eval-file", [str(evals)])
    page.fill("#diff-save-as", "smoke")
    page.click("#diff-run")
    page.wait_for_selector("#diff-result table.diff-metrics")
    assert "travel_policy.docx" in page.inner_text("#diff-result .diff-added")
    assert "Recall@" in page.inner_text("#diff-result") and "MRR@" in page.inner_text("#diff-result")
    expect(page.locator("#diff-eval option[value=smoke]")).to_be_attached(timeout=60_000)  # saved for later
    # Roll back, confirmed with a reason: the activation log shows who did it and why.
    page.once("dialog", lambda dialog: dialog.accept("docx not reviewed yet"))
    page.click("#rollback")
    expect(page.locator("#activations tbody tr").first).to_contain_text(
        "docx not reviewed yet", timeout=60_000
    )
    assert "key:" in page.inner_text("#activations tbody tr:first-child") and "2 → 1" in page.inner_text(
        "#activations tbody tr:first-child"
    )
    shot(page, "versions")

    # Documents: every file with its status; the broken one says why; filter and open a document's chunks.
    page.click("button[data-tab=documents]")
    page.wait_for_selector("#docs tbody tr.st-failed")
    assert page.locator("#docs tbody tr").count() == 5
    docx = page.locator("#docs tbody tr", has_text="travel_policy.docx")
    assert docx.locator("td:nth-child(12)").inner_text().strip() == "2"  # in version 2 only (rolled back)
    failed = page.inner_text("#docs tbody tr.st-failed")
    assert "broken.pdf" in failed and page.inner_text("#docs tbody tr.st-failed .reason").strip()
    shot(page, "documents")
    page.fill("#docs-filter", "xlsx")
    expect(page.locator("#docs tbody tr")).to_have_count(1, timeout=60_000)  # no string predicates: CSP
    assert page.inner_text("#docs tbody tr td:nth-child(12)") == "1, 2"  # in versions 1 and 2
    page.click("#docs tbody tr .chunks-btn")
    page.wait_for_selector("#doc-chunks .chunk")
    assert "sheet" in page.inner_text("#doc-chunks .chunk .muted")
    # Fix a chunk's text and switch another off: a versioned KB takes both in its next build (pending).
    first = page.locator("#doc-chunks .chunk").first
    first.locator(".chunk-edit").click()
    first.locator(".chunk-text").fill("Price list, corrected by the administrator.")
    first.locator(".chunk-save").click()
    expect(page.locator("#doc-chunks .chunk").first.locator(".badge.pending")).to_contain_text(
        "next build", timeout=60_000
    )
    page.locator("#doc-chunks .chunk").nth(1).locator(".chunk-off").click()
    expect(page.locator("#doc-chunks .chunk.off .badge.pending")).to_contain_text(
        "switched off", timeout=60_000
    )
    edits = lore.chunk_edits("docs").all()
    assert [(e.chunk_index, e.off, e.applied_in) for e in edits] == [
        (0, False, None),
        (1, True, None),
    ] and edits[0].text == "Price list, corrected by the administrator."
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
    page.select_option("#key-roles", "employee")  # the roles the server knows, as a select
    page.click("#key-form button")
    page.wait_for_selector("#key-secret:not(.hidden)")
    new_secret = page.inner_text("#key-secret").split()[-1]
    assert lore.catalog.authenticate(new_secret) is not None
    shot(page, "keys")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#keys tbody tr:last-child .revoke")
    page.wait_for_selector("#keys tbody tr.revoked")
    assert lore.catalog.authenticate(new_secret) is None


def test_console_deletes_an_upload_and_the_next_build_drops_it(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    sign_in(page, url, secret)
    new_kb_with_files(page, "del", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")
    page.once("dialog", lambda dialog: dialog.accept())  # the confirmation
    page.click(".delete-file[data-name='faq.csv']")
    expect(page.locator("#uploads tbody tr")).to_have_count(1, timeout=60_000)
    expect(page.locator("#toast")).to_contain_text("next build", timeout=60_000)
    page.click("#build")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("2", timeout=120_000)
    counts = page.inner_text("#versions tbody tr.active td:nth-child(3)")
    assert counts == "0/0/1/1"  # files added/changed/removed/reused
    kb = lore.catalog.get_kb("del")
    assert [f.path for f in lore.catalog.list_files(kb.id)] == ["employee_handbook.md"]
    assert {"upload", "delete_file"} <= {e.action for e in lore.catalog.audit_log(kb="del")}


def test_console_explains_what_a_key_may_not_do(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    _, reader = lore.catalog.create_api_key("default", ["employee"])
    sign_in(page, url, reader)
    page.click("button[data-tab=keys]")
    page.wait_for_selector("#tab-keys .denied:not(.hidden)")
    assert "may not" in page.inner_text("#tab-keys .denied") and "admin" in page.inner_text(
        "#tab-keys .denied"
    )


@pytest.mark.parametrize("site", ["hr"], indirect=True)
def test_console_scenario_faq_and_routing(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    _, admin = lore.catalog.create_api_key("bluefin", ["admin"])
    sign_in(page, url, admin)
    page.click("button[data-tab=scenarios]")
    page.wait_for_selector("#faq tbody tr")
    assert "hr-desk@bluefin.example" in page.inner_text("#sc-config")
    # Malformed rows are flagged with their reason; the managers' row is not this key's to see.
    assert "empty question" in page.inner_text("#faq tbody tr.faq-invalid >> nth=0")
    assert "调薪" not in page.inner_text("#faq") and "not shown" in page.inner_text("#faq-meta")

    # Routing test: a greeting, then a risky question (guarded profile, the plan's reasons).
    page.fill("#sc-question", "出差可以预支多少钱？")
    page.click("#sc-route-form button")
    page.wait_for_selector("#sc-route:not(.hidden) table")
    routed = page.inner_text("#sc-route")
    assert "guarded" in routed and "pricing" in routed and "expense" in routed

    # Add a row that answers an existing question differently: saved, flagged as a conflict.
    page.click("#faq-add")
    page.fill("#faq-q", "年假有几天？")
    page.fill("#faq-a", "二十天。")
    page.select_option("#faq-source", "leave")
    page.click("#faq-form button:not([type=button])")
    page.wait_for_selector("#faq tbody tr.faq-conflict")
    assert "line 3" in page.inner_text("#faq tbody tr.faq-conflict")
    shot(page, "scenarios")
    # Disable it: kept in the file, no longer indexed at the next build.
    page.click("#faq tbody tr.faq-conflict .faq-toggle")
    page.wait_for_selector("#faq tbody tr.faq-disabled")
    assert not page.locator("#faq tbody tr.faq-conflict").count()
    # Edit a malformed row into a valid one.
    page.click("#faq tbody tr.faq-invalid >> nth=0 >> .faq-edit")
    page.fill("#faq-q", "缺少问题的那一行？")
    page.click("#faq-form button:not([type=button])")
    expect(page.locator("#faq tbody tr", has_text="缺少问题的那一行")).to_have_class("faq-ok", timeout=60_000)

    # The same panel in Chinese.
    page.click("#lang")
    page.click("button[data-tab=scenarios]")
    expect(page.locator("#tab-scenarios h3").first).to_have_text("路由测试", timeout=60_000)
    expect(page.locator("#faq tbody tr.faq-disabled")).to_contain_text("已停用", timeout=60_000)
    expect(page.locator("#faq-meta")).to_contain_text("未显示")


def test_console_scanned_pdf_page_beside_its_text_and_cited_page(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    sign_in(page, url, secret)
    new_kb_with_files(
        page, "scans", [FIXTURES / "rapidocrpdf_image.pdf", FIXTURES / "docling_2305.03393v1-pg9.pdf"]
    )
    page.click("#ingest")
    expect(page.locator("#build-status")).to_have_text("Done", timeout=300_000)
    page.click("button[data-tab=documents]")
    page.select_option("#docs-kb", "scans")
    page.wait_for_selector("#docs tbody tr .chunks-btn")
    scan_row = page.locator("#docs tbody tr", has_text="rapidocrpdf_image.pdf")
    assert scan_row.locator("td:nth-child(7)").inner_text().strip().startswith("1")  # one OCR page,
    expect(scan_row.locator(".ocr-unreviewed")).to_contain_text("1 unreviewed")  # not reviewed yet
    scan_row.locator(".chunks-btn").click()
    page.wait_for_selector("#doc-chunks .side .page-img")  # scanned: the page image beside the OCR text
    assert page.locator("#doc-chunks .page-img").first.evaluate("i => i.naturalWidth") > 100
    views = page.locator("#doc-chunks .page-view").count()
    expect(page.locator("#doc-chunks .page-img")).to_have_count(views, timeout=60_000)  # every page shown
    shot(page, "scanned")
    # OCR review: the reviewer checked the page's text against its image and promotes it.
    page.click("#doc-chunks .ocr-review .review-btn")
    expect(page.locator("#doc-chunks .ocr-review")).to_contain_text("OCR reviewed by", timeout=60_000)
    expect(scan_row.locator(".ocr-unreviewed")).to_have_count(0, timeout=60_000)
    assert [r.page for r in lore.ocr_reviews("scans").all()] == [1]
    # Chat: a citation of a text PDF opens its page with the passage's region highlighted.
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "scans")
    page.fill("#question", "Which data set was chosen to perform HPO for table structure recognition?")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .sources a")
    page.locator(".msg.assistant .sources a", has_text="docling").first.click()
    page.wait_for_selector("#passage-page:not(.hidden) img.page-img")
    expect(page.locator("#passage-page .region-marked")).to_contain_text("highlighted")
    page.locator("#passage-page img.page-img").scroll_into_view_if_needed()
    shot(page, "citation-region")
    # A citation of the scanned PDF: no text layer, so the whole page, and the panel says why.
    expect(page.locator("#ask-form button")).to_be_enabled()  # the first answer's stream has closed
    page.fill("#question", "What fold change and significance level were used for glycoprotein expression?")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant >> nth=1 >> .sources a")
    page.locator(".msg.assistant >> nth=1").locator(".sources a", has_text="rapidocr").first.click()
    expect(page.locator("#passage-page .region-no-text-layer")).to_contain_text(
        "scanned page", timeout=60_000
    )
    page.locator("#passage-page img.page-img").scroll_into_view_if_needed()
    shot(page, "citation-page")
