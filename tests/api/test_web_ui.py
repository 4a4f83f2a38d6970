"""The web UI in a real browser (Playwright driving Debian's chromium) against a real uvicorn."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright import sync_api

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.conftest import EXAMPLES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

if CHROMIUM is None:  # `make test` installs it; a missing browser must not pass silently
    pytest.fail("chromium not found: install it with `apt-get install -y chromium` (make test does)",
                pytrace=False)


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str, Lore]]:
    lore = Lore(load_settings(home=tmp_path / "home"))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret, lore
    lore.close()


@pytest.fixture()
def page(site: tuple[str, str, Lore]) -> Iterator[object]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(locale="en-US", accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def test_upload_build_ask_open_citation(site: tuple[str, str, Lore], page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    page.goto(url + "/")
    page.fill("#key", secret)
    page.dispatch_event("#key", "change")

    page.click("button[data-tab=admin]")
    page.fill("#new-kb", "docs")
    page.click("#create-kb button")
    page.wait_for_function("document.querySelector('#admin-kb').value === 'docs'")
    page.set_input_files("#files", [str(EXAMPLES / "employee_handbook.md"), str(EXAMPLES / "faq.csv")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr:nth-child(2)")
    page.click(".preview-btn[data-name='faq.csv']")
    page.wait_for_selector("#preview .chunk")
    assert "VPN" in page.inner_text("#preview")
    page.click("#build")
    page.wait_for_function("document.querySelector('#build-status').textContent === 'Done'")
    page.wait_for_selector("#versions tbody tr.active")
    assert page.inner_text("#versions tbody tr.active td:first-child") == "1"

    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "docs")
    page.fill("#question", "报销需要什么材料？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .cite")
    answer = page.inner_text(".msg.assistant .text")
    assert "发票原件" in answer
    page.click(".msg.assistant .cite")
    page.wait_for_selector("#passage:not(.hidden)")
    assert "发票原件" in page.inner_text("#passage-text")
    assert "employee_handbook.md" in page.inner_text("#passage-where")
    page.wait_for_selector("#passage-link:not(.hidden)")  # the uploaded original is linked
    with page.expect_download() as download:
        page.click("#passage-link")
    assert Path(download.value.path()).read_bytes() == (EXAMPLES / "employee_handbook.md").read_bytes()

    page.on("dialog", lambda dialog: dialog.accept("missing the approval form"))
    page.click(".msg.assistant .feedback .down")  # thumbs-down asks for a note, then is recorded
    page.wait_for_selector(".msg.assistant .feedback .down:disabled")
    bad = lore.catalog.list_feedback(rating=-1)
    assert [(f.question, f.note) for f in bad] == [("报销需要什么材料？", "missing the approval form")]

    page.click("button[data-tab=traces]")
    page.wait_for_selector("#traces tbody tr")
    page.click("#traces tbody tr")
    page.wait_for_selector("#trace-detail:not(.hidden)")
    assert "retrieve" in page.inner_text("#trace-detail")


def test_chinese_interface_and_refusal(site: tuple[str, str, Lore], page) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    page.goto(url + "/")
    page.fill("#key", secret)
    page.dispatch_event("#key", "change")
    page.click("#lang")
    assert page.inner_text("button[data-tab=chat]") == "问答"
    assert page.get_attribute("#question", "placeholder") == "请输入问题…"
    page.click("button[data-tab=admin]")
    page.fill("#new-kb", "zh")
    page.click("#create-kb button")
    page.wait_for_function("document.querySelector('#admin-kb').value === 'zh'")
    page.set_input_files("#files", [str(EXAMPLES / "faq.csv")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr")
    page.click("#ingest")
    page.wait_for_function("document.querySelector('#build-status').textContent === '完成'")
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "zh")
    page.fill("#question", "量子计算机的原理是什么？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .badge.refused")
    assert page.inner_text(".msg.assistant .badge.refused") == "知识库中没有相关内容"
    assert "知识库" in page.inner_text(".msg.assistant .text")
