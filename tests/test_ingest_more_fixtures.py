"""The real legacy-Office, e-mail, image, RTF and ODT files in ../shared/fixtures/more through the whole
ingest pipeline (OCR on, LibreOffice installed by `make office`): every file is indexed and the phrase
its README names is found again by search, in that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from tests.conftest import REPO, SHARED

MORE = SHARED / "fixtures" / "more"
# file -> phrases its README lists (one or more), each must come back from search in that file.
PHRASES = {
    "docling_legacy_sample.doc": ["Enjoy summer warmth", "Calories per portion"],
    "poi_61490.doc": ["下面是表格3x3", "章节1的内容，一段话", "页脚内容"],  # the last one in the footer
    "wordextractor_test11.doc": [
        "这是一个用来测试nodejs解析Word文档",
        "This is a test for parsing the Word file in node.",
    ],
    "unstructured_tests-example.xls": ["Bagpipes are awesome.", "Question Format Abbreviations"],
    "poi_44235.xls": ["还原利润表", "房地产贷款利息收入", "个人活期存款利息支出"],
    "docling_legacy_sample.ppt": [
        "A merged with B",
        "A rectangle shape with this text inside.",
        "Some notes on the second slide.",
    ],
    "flanker_attached-pdf.eml": ["Test - body content"],
    "flanker_charset-gb2312.eml": ["提示：您的企业成员暂时无法登录邮件客户端", "腾讯企业邮箱团队"],
    "docling_qr_bill_example.jpg": ["Thank you for the assignment", "Garden work", "Bill no. 3139"],
    "unstructured_chi_sim_image.jpeg": ["适用人群", "清道夫"],
    "markitdown_docx_complex_layout.docx": ["Security notice:", "SSL Certificate Expires 2025-12-31"],
    "markitdown_pptx_complex_layout.pptx": ["Our products lead the market", "Market Share: 35%"],
    "kreuzberg_extraction_test.rtf": [
        "Comprehensive Extraction Test Document",
        "This is content in the third section",
    ],
    "docling_text_document_03.odt": [
        "Table with nested table",
        "Mixed content - list and regular text in different cells",
    ],
}


def readme_phrases() -> dict[str, set[str]]:
    """file -> the backticked phrases in the last column of the fixtures README's table."""
    found: dict[str, set[str]] = {}
    for line in (MORE / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and (MORE / cells[0]).is_file():
            found[cells[0]] = set(re.findall(r"`([^`]+)`", cells[-1]))
    return found


def readme_table() -> dict[str, tuple[str, int, int]]:
    """file -> (status, documents, OCR count) from the rows of Lore's README table of these fixtures."""
    rows = {}
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in PHRASES:
            rows[cells[0]] = (cells[1], int(cells[2]), int(cells[3]))
    return rows


def test_phrases_are_the_readmes() -> None:
    """Every phrase the README names is searched for (the PDF attachment's `Test.` by its own check)."""
    readme = readme_phrases()
    assert set(readme) == set(PHRASES)
    missing = {n: p - set(PHRASES[n]) for n, p in readme.items() if p - set(PHRASES[n])}
    assert missing == {"flanker_attached-pdf.eml": {"Test."}}


def _squash(text: str) -> str:
    return "".join(text.split()).lower()


@pytest.mark.slow
def test_every_more_fixture_is_read_and_its_phrase_found(tmp_path: Path) -> None:
    assert MORE.is_dir(), f"fixtures not found at {MORE}"
    assert set(PHRASES) == {p.name for p in MORE.iterdir()} - {"README.md"}, "a fixture without phrases"
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("more")
    report = lore.ingest("more", [MORE])
    by_name = {Path(f.name).name: f for f in report.files}
    assert {n: (f.status, f.error) for n, f in by_name.items() if f.status != "ingested"} == {}
    for name in (
        "docling_qr_bill_example.jpg",
        "unstructured_chi_sim_image.jpeg",
        "markitdown_docx_complex_layout.docx",
        "markitdown_pptx_complex_layout.pptx",
    ):
        assert by_name[name].ocr_pages >= 1, name  # their key text is only in a picture
    assert by_name["flanker_attached-pdf.eml"].documents == 2  # the message and its PDF attachment
    got = {n: (f.status, f.documents, f.ocr_pages) for n, f in by_name.items() if n in PHRASES}
    assert got == readme_table(), "README's fixture table differs from what ingest gives"

    for name, phrases in PHRASES.items():
        for phrase in phrases:
            hits = lore.search("more", phrase, SearchOptions(top_k=5))
            found = [
                h
                for h in hits
                if h.chunk.file_path == f"more/{name}"
                and _squash(phrase) in _squash(" ".join([*h.chunk.heading_path, h.chunk.text]))
            ]
            assert found, (name, phrase, [(h.chunk.file_path, h.chunk.text[:80]) for h in hits])

    attachment = lore.search("more", "Test.", SearchOptions(top_k=10, mode="bm25"))
    pdf = [h for h in attachment if h.chunk.heading_path[:1] == ["Attachment: test.pdf"]]
    assert pdf and pdf[0].chunk.page == 1 and pdf[0].chunk.file_path == "more/flanker_attached-pdf.eml"
    lore.close()
