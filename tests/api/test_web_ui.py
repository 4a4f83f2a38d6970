"""The web UI in a real browser (Playwright driving Debian's chromium) against a real uvicorn."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lore.api import create_app
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from tests.api.conftest import CHROMIUM, LiveServer
from tests.conftest import EXAMPLES
from tests.scenario.conftest import copy_scenarios, scenario_lore

if CHROMIUM is None:  # `make test` installs it; a missing browser must not pass silently
    pytest.fail(
        "chromium not found: install it with `apt-get install -y chromium` (make test does)", pytrace=False
    )


def sign_in(page, url: str, secret: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(url + "/")
    page.fill("#key", secret)
    page.dispatch_event("#key", "change")


def new_kb_with_files(page, name: str, files: list[Path]) -> None:  # type: ignore[no-untyped-def]
    """Admin tab: create a KB and upload files into it."""
    page.click("button[data-tab=admin]")
    page.fill("#new-kb", name)
    page.click("#create-kb button")
    expect(page.locator("#admin-kb")).to_have_value(name, timeout=60_000)  # no string predicates: CSP
    page.set_input_files("#files", [str(f) for f in files])
    page.click("#upload")
    page.wait_for_selector(f"#uploads tbody tr:nth-child({len(files)})")


def test_upload_build_ask_open_citation(site: tuple[str, str, Lore], page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    sign_in(page, url, secret)

    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    page.click(".preview-btn[data-name='faq.csv']")
    page.wait_for_selector("#preview .chunk")
    assert "VPN" in page.inner_text("#preview")
    page.click("#build")
    expect(page.locator("#build-status")).to_have_text("Done", timeout=60_000)
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
    sign_in(page, url, secret)
    page.click("#lang")
    assert page.inner_text("button[data-tab=chat]") == "问答"
    assert page.get_attribute("#question", "placeholder") == "请输入问题…"
    new_kb_with_files(page, "zh", [EXAMPLES / "faq.csv"])
    page.click("#ingest")
    expect(page.locator("#build-status")).to_have_text("完成", timeout=60_000)
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "zh")
    page.fill("#question", "量子计算机的原理是什么？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .badge.refused")
    assert page.inner_text(".msg.assistant .badge.refused") == "知识库中没有相关内容"
    assert "知识库" in page.inner_text(".msg.assistant .text")


@pytest.fixture()
def hr_site(tmp_path: Path) -> Iterator[tuple[str, str]]:
    scenarios = copy_scenarios(tmp_path / "scenarios")
    lore = scenario_lore(tmp_path / "home", scenarios)
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    _, secret = lore.catalog.create_api_key("bluefin", ["employee"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret
    lore.close()


def test_scenario_faq_answer_with_route_profile_and_cache_trace(hr_site: tuple[str, str], page) -> None:  # type: ignore[no-untyped-def]
    url, secret = hr_site
    sign_in(page, url, secret)
    page.wait_for_selector("#chat-scenario option[value=hr]", state="attached")
    page.select_option("#chat-scenario", "hr")
    assert page.is_disabled("#chat-kb")  # the scenario decides the knowledge base
    page.fill("#question", "如何申请年假？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .cite")
    assert page.inner_text(".msg.assistant .text").startswith("在 HR 系统「我的假期」中提交年假申请")
    assert page.get_attribute(".msg.assistant .badge.route", "data-route") == "faq_exact"
    assert page.inner_text(".msg.assistant .badge.route") == "Route: FAQ (exact)"
    assert page.inner_text(".msg.assistant .badge.profile").startswith("profile: ")
    page.click(".msg.assistant .cite")
    page.wait_for_selector("#passage:not(.hidden)")
    assert "直属经理审批" in page.inner_text("#passage-text")
    assert page.inner_text("#passage-where").startswith("faq.csv · row 2")

    page.click("#lang")  # the footer labels follow the language
    expect(page.locator("#ask-form button")).to_be_enabled()  # the first answer's stream has closed
    page.fill("#question", "你好")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant:nth-of-type(4) .badge.route")
    assert page.inner_text(".msg.assistant:nth-of-type(4) .badge.route") == "路由: 问候"
    assert "小鳍" in page.inner_text(".msg.assistant:nth-of-type(4) .text")

    page.click("button[data-tab=traces]")
    page.wait_for_selector("#traces tbody tr:nth-child(2)")
    page.click("#traces tbody tr:nth-child(2)")  # newest first: the FAQ question
    page.wait_for_selector("#trace-detail table.cache")
    detail = page.inner_text("#trace-detail")
    assert "如何申请年假" in detail and "检索缓存" in detail and "未命中" in detail


def test_preview_edit_and_commit_chunks(site: tuple[str, str, Lore], page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    sign_in(page, url, secret)
    new_kb_with_files(page, "edited", [EXAMPLES / "employee_handbook.md"])
    page.click(".preview-btn[data-name='employee_handbook.md']")
    page.wait_for_selector("#preview .chunk-text[contenteditable]")
    total = page.locator("#preview .chunk").count()
    assert total > 2
    page.fill("#preview .chunk:nth-of-type(1) .chunk-text", "The office mascot is a blue heron named Lumen.")
    for i in range(2, total + 1):  # keep only the first (edited) and the second chunk
        if i != 2:
            page.check(f"#preview .chunk:nth-of-type({i}) .drop-chunk")
    page.click("#commit-chunks")
    expect(page.locator("#toast")).to_contain_text("committed", timeout=60_000)
    assert page.inner_text("#toast") == "2 chunks committed"
    assert lore.catalog.count_chunks(lore.catalog.get_kb("edited").id) == 2

    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "edited")
    page.fill("#question", "What is the name of the office mascot?")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .cite")
    page.click(".msg.assistant .cite")
    page.wait_for_selector("#passage:not(.hidden)")
    assert "blue heron named Lumen" in page.inner_text("#passage-text")


def test_deep_mode_question_from_the_browser(site: tuple[str, str, Lore], page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    lore.create_kb("hb")
    lore.ingest("hb", [EXAMPLES])
    sign_in(page, url, secret)
    expect(page.locator("#chat-kb option", has_text=re.compile("^hb$"))).to_have_count(1, timeout=60_000)
    page.select_option("#chat-kb", "hb")
    page.check("#chat-deep")
    page.fill("#question", "对比LF-200和LF-500的保修期")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .cite")
    answer = page.inner_text(".msg.assistant .text")
    assert "LF-200" in answer and "LF-500" in answer
    page.click(".msg.assistant .plan summary")  # how deep mode split the question, and what each part found
    parts = page.locator(".msg.assistant .plan li")
    assert (
        parts.count() == 2 and "LF-200" in parts.nth(0).inner_text() and "LF-500" in parts.nth(1).inner_text()
    )
    assert "comparison" in page.inner_text(".msg.assistant .plan summary")
    page.click("button[data-tab=traces]")
    page.wait_for_selector("#traces tbody tr")
    page.click("#traces tbody tr")
    page.wait_for_selector("#trace-detail:not(.hidden)")
    detail = page.inner_text("#trace-detail")
    assert "verdict" in detail and "grade" in detail
