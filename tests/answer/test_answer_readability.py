"""Answers read well on statute-style and web-style documents: clause items as list lines, article headings
as a lead-in, links as their text, no images or HTML comments; each source quotes the cited sentence."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from lore.answer.citations import attach_missing
from lore.answer.generators.base import Passage
from lore.answer.generators.extractive import ExtractiveGenerator
from lore.answer.pipeline import AskContext, cite
from lore.answer.readable import clean_markup, list_item
from lore.app.access import REDACTED, redact_end
from lore.cli.render import source_quote
from lore.retrieve.search import SearchOptions
from lore.schema import Hit
from tests.chunks import make_chunk

DOCS = Path("/work/shared/datasets/enterprise_dev/docs")


def lines_from(path: Path, first: str, count: int) -> str:
    """`count` lines of a real document from the one starting with `first`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return "\n".join(lines[start : start + count])


# 劳动合同法 第四十四条 to 第四十六条: 第四十六条 lists its cases as （一）…（七）.
STATUTE = lines_from(DOCS / "zh/劳动合同法.md", "第四十四条", 28)
# The start of 18f's leave page: links to other pages, to anchors and to a Google document.
LEAVE = lines_from(DOCS / "en/18f-leave.md", "Before you take leave", 20)


def passage(n: int, text: str) -> Passage:
    chunk = make_chunk(
        chunk_id=f"c{n}", text=text, parent_text=text, document_id=f"d{n}", file_path=f"f{n}.md"
    )
    return Passage(n, text, [Hit(chunk, 1.0 / n)])


def answer(question: str, passages: list[Passage]) -> str:
    return "".join(ExtractiveGenerator().stream(question, passages))


def cited(question: str, passages: list[Passage]) -> AskContext:
    """The answer after the pipeline's cite stage, with its citation records."""
    ctx = AskContext(question, SearchOptions())
    ctx.passages = passages
    ctx.answer = answer(question, passages)
    cite(ctx)
    return ctx


def test_statute_clause_items_are_list_lines_under_a_bold_article_lead_in() -> None:
    assert "（一）劳动者依照本法第三十八条规定解除劳动合同的；" in STATUTE  # the real text, as expected
    text = answer("哪些情形下用人单位应当向劳动者支付经济补偿？", [passage(1, STATUTE)])
    lines = text.splitlines()
    assert lines[0].startswith("**第四十六条** 有下列情形之一的，用人单位应当向劳动者支付经济补偿")
    assert "- （一）劳动者依照本法第三十八条规定解除劳动合同的[1]；" in lines
    assert "- （二）用人单位依照本法第三十六条规定" in text
    items = [line for line in lines if line.startswith("- （")]
    assert len(items) >= 2 and all(line.endswith(("；", "。")) for line in items)
    # No item is glued into running text, nor closed as a sentence of its own.
    assert "的[1]。" not in text.replace("的情形外", "")
    assert not any("（一）" in line and not line.startswith("- （一）") for line in lines)
    # Asked about one case: the items said are list lines ("…的[1]。（二）…" read as one paragraph before).
    items = answer(
        "劳动者依照本法第三十八条规定解除劳动合同的，用人单位要支付经济补偿吗？", [passage(1, STATUTE)]
    )
    assert items.splitlines()[0] == "- （一）劳动者依照本法第三十八条规定解除劳动合同的[1]；"
    assert all(line.startswith("- （") for line in items.splitlines())
    # An article after a list starts its own paragraph ("…终止:[1]第四十五条" ran on before).
    text = answer("以完成一定工作任务为期限的劳动合同什么时候终止？", [passage(1, STATUTE)])
    assert "[1]第四十五条" not in text and ":[1]**第" not in text


def test_list_markers_become_markdown_list_lines() -> None:
    assert list_item("（一）劳动者依照本法") == "- （一）劳动者依照本法"
    assert list_item("(2) the employee") == "- (2) the employee"
    assert list_item("a) the first") == "- a) the first"
    assert list_item("• Tea") == "- Tea"
    assert list_item("* Annual Leave") == "- Annual Leave"
    assert list_item("1. Open a ticket") == "1. Open a ticket"  # already a Markdown list line
    assert list_item("一、总则") == "- 一、总则"
    assert list_item("2026 was a good year.") is None
    assert list_item("**Bold** start") is None
    assert list_item("-5 degrees") is None


def test_markdown_links_are_said_as_their_text() -> None:
    assert "[Workforce Relations HR Specialist](https://docs.google.com" in LEAVE
    text = answer("Who do I talk with about ways to combine leave types?", [passage(1, LEAVE)])
    assert "Talk with your Workforce Relations HR Specialist about ways to combine leave types[1]." in text
    assert "](" not in text and "http" not in text and "[Workforce" not in text
    page = answer("What should I check before I take leave?", [passage(1, LEAVE)])
    assert "Before you take leave, check out of office expectations[1]." in page
    assert "{%" not in page and "](" not in page


def test_an_image_alone_is_never_the_answer_and_comments_never_show() -> None:
    page = (
        "![Annual leave accrual chart for new employees](/images/annual-leave-accrual.png)\n\n"
        "New employees accrue 4 hours of annual leave per pay period.<!-- TODO: confirm with HR --> "
        "The accrual chart shows the rate by years of service."
    )
    text = answer("annual leave accrual chart for new employees", [passage(1, page)])
    assert text and "!" not in text and "/images/" not in text and ".png" not in text
    assert "<!--" not in text and "TODO" not in text
    assert clean_markup("A [![badge](b.svg)](https://ci) build <!-- x\ny --> passes.") == "A  build  passes."
    assert (
        clean_markup('See <a href="https://x">the chart</a> or <https://y>.') == "See the chart or https://y."
    )
    assert clean_markup("Cited [1][2] stays.") == "Cited [1][2] stays."
    assert clean_markup("if x<b and c>d") == "if x<b and c>d"  # no tag: a formula


def test_a_table_row_quoted_alone_is_said_in_words() -> None:
    # The page's HTML table as the Markdown rows ingest makes of it.
    cells = re.findall(r"<td>(.*?)</td>", (DOCS / "en/clef-holiday-list.md").read_text(encoding="utf-8"))
    rows = [f"| {a.strip()} | {b.strip()} |" for a, b in zip(cells[::2], cells[1::2], strict=True)]
    holidays = "Clef Observed Holiday List\n\n" + "\n".join(rows)
    assert "| Cesar Chavez Day | March 31 |" in holidays
    ctx = cited("Is Cesar Chavez Day a paid holiday?", [passage(1, holidays)])
    assert ctx.answer.startswith("Cesar Chavez Day: March 31[1]")
    assert "|" not in ctx.answer
    [c] = ctx.citations
    assert c.quote[slice(*c.quote_span)].startswith("| Cesar Chavez Day | March 31 |")


def test_the_citation_quotes_the_cited_sentence_not_the_passage_start() -> None:
    ctx = cited("哪些情形下用人单位应当向劳动者支付经济补偿？", [passage(1, STATUTE)])
    [c] = ctx.citations
    start, end = c.quote_span
    assert c.quote[start:end] == "第四十六条 有下列情形之一的，用人单位应当向劳动者支付经济补偿:"
    assert not c.quote.startswith("第四十四条") and "第四十四条 有下列情形之一的，劳动合同终止" not in c.quote
    assert c.text == STATUTE  # the whole passage is still there
    assert c.to_json()["quote"] == c.quote and c.to_json()["quote_span"] == [start, end]
    assert len(c.quote) <= (end - start) + 2 * 80 + 2
    # The list lines survive the cite stage as the generator wrote them.
    assert ctx.answer == answer("哪些情形下用人单位应当向劳动者支付经济补偿？", [passage(1, STATUTE)])


def test_an_english_quote_shows_link_text_and_is_cut_between_words() -> None:
    ctx = cited("Who do I talk with about ways to combine leave types?", [passage(1, LEAVE)])
    [c] = ctx.citations
    start, end = c.quote_span
    assert c.quote[start:end].startswith("Talk with your Workforce Relations HR Specialist")
    assert "](" not in c.quote and "https" not in c.quote
    assert not c.quote.startswith("Before you take leave")  # more than 80 characters before the sentence
    words = c.quote.strip("…").split()
    assert all(w in clean_markup(LEAVE) for w in (words[0], words[-1]))


def test_attaching_missing_markers_keeps_list_lines_and_paragraphs() -> None:
    p = passage(1, STATUTE)
    text = (
        "有下列情形之一的，用人单位应当向劳动者支付经济补偿:\n"
        "- （一）劳动者依照本法第三十八条规定解除劳动合同的；\n\n本法另有规定的除外。"
    )
    out = attach_missing(text, [p])
    assert out.splitlines() == [
        "有下列情形之一的，用人单位应当向劳动者支付经济补偿:[1]",
        "- （一）劳动者依照本法第三十八条规定解除劳动合同的[1]；",
        "",
        "本法另有规定的除外。",
    ]


def test_cli_sources_list_shows_the_quote_with_the_sentence_in_bold() -> None:
    ctx = cited("哪些情形下用人单位应当向劳动者支付经济补偿？", [passage(1, STATUTE)])
    data = ctx.citations[0].to_json()
    shown = source_quote(data)
    assert shown.plain == data["quote"]
    [span] = [s for s in shown.spans if s.style == "bold"]
    assert shown.plain[span.start : span.end].startswith("第四十六条")
    console = Console(width=200, record=True)
    console.print(shown)
    assert "第四十四条 有下列情形之一的" not in console.export_text()
    # A citation without a quote (an older server's) still shows the passage's start.
    assert source_quote({"text": "a\nb" * 200}).plain == ("a b" * 200)[:200]


def test_a_hidden_citation_loses_its_quote_with_its_text() -> None:
    ctx = cited("哪些情形下用人单位应当向劳动者支付经济补偿？", [passage(1, STATUTE)])
    end = {"answer": ctx.answer, "citations": [c.to_json() for c in ctx.citations]}
    [c] = redact_end(end, {"c1"})["citations"]
    assert c["text"] == REDACTED and c["quote"] == REDACTED and c["quote_span"] is None
