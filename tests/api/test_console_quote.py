"""The console's sources list shows each source's quote, the cited sentence marked, in a real browser."""

from __future__ import annotations

import re
from pathlib import Path

from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import SHARED

LAW = SHARED / "datasets" / "enterprise_dev" / "docs" / "zh" / "劳动合同法.md"


def test_the_sources_list_quotes_the_cited_sentence(site, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    lines = LAW.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("第四十四条"))
    law = tmp_path / "劳动合同终止与经济补偿.md"
    law.write_text("# 劳动合同终止与经济补偿\n\n" + "\n".join(lines[start : start + 28]), encoding="utf-8")
    sign_in(page, url, secret)
    new_kb_with_files(page, "law", [law])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active", timeout=120_000)
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "law")
    page.fill("#question", "哪些情形下用人单位应当向劳动者支付经济补偿？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .sources .quote mark", timeout=120_000)
    quote = page.inner_text(".msg.assistant .sources .quote >> nth=0")
    marked = page.inner_text(".msg.assistant .sources .quote mark >> nth=0")
    flat = re.sub(r"\s+", "", law.read_text(encoding="utf-8"))
    assert marked and re.sub(r"\s+", "", marked) in flat  # the cited sentence, as the file says it
    assert marked in quote and len(quote) <= len(marked) + 2 * 80 + 2  # with a little context only
    items = page.locator(".msg.assistant .text li").all_inner_texts()  # clause items: Markdown list lines,
    assert len(items) >= 5 and items[0].startswith("（一）"), items  # rendered as a list
