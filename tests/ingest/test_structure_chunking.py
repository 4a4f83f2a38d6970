"""Structure-aware chunking on real enterprise documents (shared enterprise_dev set): statute articles and
clauses, handbook lists with their lead sentence, HTML table rows with their header, no front-matter or
HTML comments in chunks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lore.ingest.chunking import Chunker, ChunkParams, Piece
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.text import load_markdown
from lore.text.units import text_units

DOCS = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "enterprise_dev" / "docs"
ARTICLE = re.compile(r"^第[一二三四五六七八九十百零]+条(?=\s)", re.M)
STATUTES = ["劳动合同法.md", "工伤保险条例.md", "职工带薪年休假条例.md", "社会保险法.md"]


def _pieces(path: Path, params: ChunkParams | None = None) -> list[Piece]:
    [doc] = load_markdown(path, LoadOptions())
    return list(Chunker(params or ChunkParams()).split(doc.sections))


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _articles(raw: str) -> list[tuple[str, str]]:
    """(label, text) of every article in a statute file, up to the next article or heading."""
    body = raw.split("<!-- INFO END -->", 1)[1]
    starts = [m.start() for m in ARTICLE.finditer(body)]
    out = []
    for a, b in zip(starts, [*starts[1:], len(body)], strict=True):
        text = body[a:b].split("\n#", 1)[0]
        out.append((ARTICLE.match(text).group(0), text.strip()))  # type: ignore[union-attr]
    return out


@pytest.mark.parametrize("name", STATUTES)
def test_every_article_that_fits_is_whole_in_one_chunk_of_its_own(name: str) -> None:
    path = DOCS / "zh" / name
    pieces = _pieces(path)
    articles = _articles(path.read_text(encoding="utf-8"))
    assert len(articles) >= 10
    flat = [_flat(p.text) for p in pieces]
    for label, text in articles:
        if text_units(text) <= ChunkParams().child_size:
            assert any(_flat(text) in f for f in flat), f"{name} {label} is cut across chunks"
    for p in pieces:
        if p.heading_path and ARTICLE.match(p.heading_path[-1] + " "):  # inside the articles
            assert ARTICLE.match(p.text), f"{name}: a chunk starts mid-article: {p.text[:40]!r}"
            assert p.text.startswith(p.heading_path[-1])
            assert len(ARTICLE.findall(p.text)) == 1, "a searched chunk mixes two articles"
        assert not p.text.rstrip().endswith("第"), "a dangling 第 at a chunk's end"
        assert text_units(p.text) <= ChunkParams().child_size


def test_heading_path_is_chapter_then_article() -> None:
    pieces = _pieces(DOCS / "zh" / "劳动合同法.md")
    [art17] = [p for p in pieces if p.text.startswith("第十七条")]
    assert art17.heading_path[-2:] == ["第二章 劳动合同的订立", "第十七条"]
    assert "（九）法律、法规规定应当纳入劳动合同的其他事项。" in art17.text  # lead and all nine clauses
    assert art17.text.splitlines()[0] == "第十七条 劳动合同应当具备以下条款:"
    assert {p.parent_key for p in pieces if "第十七条" in p.heading_path} == {art17.parent_key}


def test_an_over_long_article_is_split_at_clauses_each_piece_led_by_its_heading() -> None:
    params = ChunkParams(child_size=160, child_overlap=10, parent_size=600)
    pieces = _pieces(DOCS / "zh" / "工伤保险条例.md", params)
    art = [p for p in pieces if p.heading_path and p.heading_path[-1] == "第三十七条"]
    assert len(art) >= 2
    assert all(p.text.startswith("第三十七条") and text_units(p.text) <= 160 for p in art)
    items = [line for p in art for line in p.text.splitlines() if line.startswith("(")]
    raw = (DOCS / "zh" / "工伤保险条例.md").read_text(encoding="utf-8")
    assert all(line in raw.splitlines() for line in items)  # every clause whole, never cut


@pytest.mark.parametrize(
    ("lead", "items"),
    [
        ("A remote workday:", ["is not shorter than", "is not less productive", "is not an excuse"]),
        (
            "Always take the following steps to let the team know:",
            ["Post in #office", "Update your calendar"],
        ),
    ],
)
def test_a_handbook_list_stays_with_its_lead_sentence(lead: str, items: list[str]) -> None:
    pieces = _pieces(DOCS / "en" / "clef-working-remotely.md")
    [with_lead] = [p for p in pieces if lead in p.text]
    assert all(f"* {item}" in with_lead.text for item in items)


def test_a_small_list_fits_with_its_lead_when_the_chunk_is_small() -> None:
    params = ChunkParams(child_size=60, child_overlap=10, parent_size=300)
    pieces = _pieces(DOCS / "en" / "clef-working-remotely.md", params)
    lead = "A non-exhaustive list of things to ensure are in order are:"
    item_chunks = [p for p in pieces if "* You will have" in p.text]
    assert item_chunks and all(lead in p.text for p in item_chunks)  # every piece of the list carries it


def test_html_table_rows_keep_their_header_and_comments_are_not_indexed() -> None:
    pieces = _pieces(DOCS / "en" / "clef-salary-and-equity-compensation.md")
    rows = [p for p in pieces if "| Less than 5 Years Experience | $100k | $70k |" in p.text]
    assert rows and all("| Years Experience | Technical | Non-Technical |" in p.text for p in rows)
    assert not any("<td>" in p.text for p in pieces)
    for name in ("劳动法.md", "社会保险法.md"):
        assert not any("<!--" in p.text or "INFO END" in p.text for p in _pieces(DOCS / "zh" / name))


def test_front_matter_and_comments_are_dropped_from_a_markdown_page(tmp_path: Path) -> None:
    body = (DOCS / "en" / "18f-overtime.md").read_text(encoding="utf-8")
    page = tmp_path / "overtime.md"
    page.write_text(
        "---\ntitle: Overtime\ntags:\n  - overtime secret-tag\n---\n<!-- draft: do not publish -->\n" + body,
        encoding="utf-8",
    )
    pieces = _pieces(page)
    joined = "\n".join(p.text + p.parent_text for p in pieces)
    assert "secret-tag" not in joined and "do not publish" not in joined and "title: Overtime" not in joined
    assert _flat(body[:200]) in _flat("".join(p.text for p in pieces))
