"""Answers in the console rendered as Markdown, in a real browser against a real `lore serve` whose LLM is a
local server speaking the chat-completions protocol: tables, lists, links and code render, the citation
markers stay buttons that open their passage (also in a reopened chat), and a document's HTML never runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.answer.chat_server import Action, FakeServer, answer, serve
from tests.api.conftest import LiveServer
from tests.api.test_web_ui import new_kb_with_files, sign_in

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
DOCUMENT = (
    "Expense claims need the original receipt. Taxi rides are refunded up to 100 yuan per trip.\n"
    f"Hotel nights are refunded up to 500 yuan. {PAYLOAD}\n"
)


def markdown_answer(llm: FakeServer) -> Action:
    """An answer in Markdown that quotes the passage line carrying the document's HTML, as an LLM may."""

    def act(h: BaseHTTPRequestHandler) -> None:
        prompt = "\n".join(str(m.get("content", "")) for m in llm.requests[-1]["messages"])
        quoted = next(line for line in prompt.splitlines() if "onerror" in line)
        text = (
            "Claims need the original receipt [1].\n\n| item | limit |\n|---|---|\n| taxi | 100 yuan [1] |\n"
            "| hotel | 500 yuan |\n\n- keep the **original** receipt\n- send it within `30` days\n\n"
            f"See [the policy](https://example.com/policy). The passage reads: {quoted}"
        )
        answer(*[text[i : i + 40] for i in range(0, len(text), 40)])(h)

    return act


@pytest.fixture()
def llm() -> Iterator[FakeServer]:
    with serve() as server:
        yield server


@pytest.fixture()
def site(tmp_path: Path, llm: FakeServer) -> Iterator[tuple[str, str, Lore]]:
    """A live service answering through the local LLM server, and an admin key."""
    settings = load_settings(
        home=tmp_path / "home", answer={"generator": "openai", "llm_model": "m", "llm_base_url": llm.url}
    )
    lore = Lore(settings)
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret, lore
    lore.close()


def test_an_answer_renders_as_markdown_with_citations_and_no_document_html_runs(  # type: ignore[no-untyped-def]
    site, llm: FakeServer, page, tmp_path: Path
) -> None:
    url, secret, _ = site
    doc = tmp_path / "expenses.txt"
    doc.write_text(DOCUMENT, encoding="utf-8")
    sign_in(page, url, secret)
    new_kb_with_files(page, "md", [doc])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")

    llm.script = [markdown_answer(llm)]
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "md")
    page.fill("#question", "What do expense claims need?")
    page.press("#question", "Enter")
    text = page.locator(".msg.assistant .text")
    expect(text.locator("table td .cite")).to_have_count(1, timeout=60_000)
    assert text.locator("table th").all_inner_texts() == ["item", "limit"]
    items = text.locator("li").all_inner_texts()  # Lore may append a sentence's citation marker
    assert [i.removesuffix("[1]") for i in items] == ["keep the original receipt", "send it within 30 days"]
    assert (
        text.locator("li strong").inner_text() == "original" and text.locator("li code").inner_text() == "30"
    )
    link = text.locator("a[href='https://example.com/policy']")
    assert link.get_attribute("target") == "_blank" and "noopener" in (link.get_attribute("rel") or "")
    # The document's HTML shows as text: no element made from it, nothing of it ran.
    assert "onerror" in text.inner_text() and "<script>" in text.inner_text()
    assert text.locator("img, script, [onerror]").count() == 0
    assert page.evaluate("window.__pwned") is None
    # A marker inside the table still opens its passage.
    text.locator("table td .cite").click()
    expect(page.locator("#passage-text")).to_contain_text("original receipt")

    # The chat reopened from the history: the same Markdown, its markers still open the passage.
    page.click("#new-chat")
    page.focus("#history")
    expect(page.locator("#history option").nth(1)).to_be_attached()
    page.select_option("#history", index=1)
    again = page.locator(".msg.assistant .text")
    expect(again.locator("table td .cite")).to_have_count(1)
    assert again.locator("li").count() == 2 and again.locator("img, script, [onerror]").count() == 0
    assert page.locator("#passage").is_hidden()
    again.locator(".cite").first.click()
    expect(page.locator("#passage-text")).to_contain_text("original receipt")
    assert page.evaluate("window.__pwned") is None
    assert json.dumps(llm.requests[-1]).count("onerror") >= 1  # the HTML did reach the LLM from the document
