"""Every real-world fixture in ../shared/fixtures/documents loads with the expected content.

The four PDFs that need OCR are covered in test_ocr.py; here they are only checked with OCR off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.errors import LoadError
from lore.ingest.loaders import load_file
from lore.schema import LoadedDocument, Section

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "documents"
OCR_FIXTURES = {
    "chatchat_ocr_test.pdf",
    "rapidocrpdf_image.pdf",
    "markitdown_MEDRPT-2024-PAT-3847_medical_report_scan.pdf",
    "rapidocrpdf_direct_and_image.pdf",
}

# The fixtures are part of the test contract: a missing folder fails loudly rather than skipping.
assert FIXTURES.is_dir(), f"fixtures not found at {FIXTURES} (../shared must sit beside the repo)"


def load(name: str) -> LoadedDocument:
    docs = load_file(FIXTURES / name)
    assert len(docs) == 1
    return docs[0]


def all_text(doc: LoadedDocument) -> str:
    return "\n".join(s.text for s in doc.sections)


def rows(doc: LoadedDocument) -> list[Section]:
    return [s for s in doc.sections if s.kind == "table_row"]


def test_every_fixture_is_covered() -> None:
    """Each fixture has a test named after it here (OCR ones in test_ocr.py)."""
    names = {p.name for p in FIXTURES.iterdir() if p.name != "README.md"}
    assert len(names) == 20 and names >= OCR_FIXTURES
    for name in names - OCR_FIXTURES:
        test_name = "test_" + "".join(ch if ch.isalnum() else "_" for ch in name).lower()
        assert test_name in globals(), f"no test for {name} ({test_name})"


def test_pymupdf_chinese_tables_pdf() -> None:
    doc = load("pymupdf_chinese-tables.pdf")
    (page,) = doc.sections
    assert page.page == 1 and doc.ocr_pages == []
    assert "盐城高新区投资集团有限公司2023 年度第四期超短期融资券募集说明书" in page.text
    assert "发行人历史信用评级情况" in page.text
    assert len(page.text) > 900


def test_docling_2305_03393v1_pg9_pdf() -> None:
    doc = load("docling_2305.03393v1-pg9.pdf")
    (page,) = doc.sections
    assert page.heading_path == ["Optimized Table Tokenization for Table Structure Recognition"]
    assert "PubTabNet" in page.text and "TED score" in page.text


def test_docling_redp5110_sampled_pdf() -> None:
    doc = load("docling_redp5110_sampled.pdf")
    assert [s.page for s in doc.sections] == [p for p in range(1, 19) if p != 17]  # page 17 is blank
    assert doc.ocr_pages == []  # the cover photo is not OCR'd: the page has a text layer
    assert "Row and Column Access Control" in doc.sections[0].text
    assert "Contents" in doc.sections[1].text


def test_unstructured_layout_parser_paper_fast_pdf() -> None:
    doc = load("unstructured_layout-parser-paper-fast.pdf")
    assert [s.page for s in doc.sections] == [1, 2]
    assert "LayoutParser: A Unified Toolkit" in doc.sections[0].text  # the "fi" ligature is expanded
    assert "\x00" not in all_text(doc)


def test_unstructured_korean_text_with_tables_pdf() -> None:
    doc = load("unstructured_korean-text-with-tables.pdf")
    (page,) = doc.sections
    assert "적립 제외 대상" in page.text and "삼성카드" in page.text
    assert "\x07" not in page.text


def test_ocr_fixtures_with_ocr_disabled() -> None:
    with pytest.raises(LoadError, match=r"image-only PDF \(OCR disabled\)"):
        load_file(FIXTURES / "rapidocrpdf_image.pdf", ocr=False)
    with pytest.raises(LoadError, match=r"image-only PDF \(OCR disabled\)"):
        load_file(FIXTURES / "markitdown_MEDRPT-2024-PAT-3847_medical_report_scan.pdf", ocr=False)

    (mixed,) = load_file(FIXTURES / "rapidocrpdf_direct_and_image.pdf", ocr=False)
    assert [s.page for s in mixed.sections] == [1] and "ABCNet" in mixed.sections[0].text
    assert mixed.warnings == ["page 2: image-only page, text not read (OCR disabled)"]

    (chatchat,) = load_file(FIXTURES / "chatchat_ocr_test.pdf", ocr=False)
    assert chatchat.sections[0].text == "我是文字" and chatchat.ocr_pages == []
    assert "OCR disabled" in chatchat.warnings[0]


def test_docling_word_sample_docx() -> None:
    doc = load("docling_word_sample.docx")
    assert doc.title == "Swimming in the lake"
    swim = next(s for s in doc.sections if "Paddle about" in s.text)
    assert swim.heading_path == ["Swimming in the lake", "Let’s swim!"]
    assert "- Paddle about" in swim.text
    eat = next(s for s in doc.sections if "respectful duck" in s.text)
    assert eat.heading_path == ["Swimming in the lake", "Let’s swim!", "Let’s eat"]
    table = rows(doc)
    assert [r.text for r in table] == [
        "col 1: Leaves; Food: Ash, Elm, Maple; Calories per portion: 50",
        "col 1: Berries; Food: Blueberry, Strawberry, Cranberry; Calories per portion: 150",
        "col 1: Grain; Food: Corn, Buckwheat, Barley; Calories per portion: 200",
    ]
    assert table[0].header == "col 1 | Food | Calories per portion"
    # Body order: the table comes after the paragraph introducing it, before the closing list.
    order = [s.text for s in doc.sections]
    assert order.index(eat.text) + 1 == order.index(table[0].text)
    assert doc.sections[-1].text.startswith("And let’s add another list in the end:\n- Leaves")


def test_docling_word_tables_docx() -> None:
    doc = load("docling_word_tables.docx")
    texts = [r.text for r in rows(doc)]
    assert "Header 0.0: Cell 1.0; Header 0.1: Cell 1.1; Header 0.2: Cell 1.2" in texts
    # A horizontally merged cell is read once, under both of its headers.
    assert "Header 0.0: Cell 1.0; Header 0.1 / Header 0.2: Merged Cell 1.1 1.2" in texts
    # A vertically merged cell belongs to each row it spans.
    assert "Header 0.0: Cell 1.0; Header 0.1: Merged Cell 1.1 2.1; Header 0.2: Cell 1.2" in texts
    assert "Header 0.0: Cell 2.0; Header 0.1: Merged Cell 1.1 2.1; Header 0.2: Cell 2.2" in texts
    # A row starting late keeps its cell under the right header.
    assert "Header 0.1: Cell 1.1" in texts
    assert all(r.heading_path == ["Test with tables"] for r in rows(doc))
    assert "A non-uniform table with vertical spans" in all_text(doc)


def test_chatchat_ocr_test_docx() -> None:
    doc = load("chatchat_ocr_test.docx")
    assert doc.sections[0].text == "我是文字"
    (row,) = rows(doc)
    assert row.header == "我是表格1 | 我是表格2"
    assert row.text == "我是表格1: 我是表格3; 我是表格2: 我是表格4"
    # The picture after the table holds text only OCR reads; with OCR off it is left out.
    assert doc.ocr_pages == [1] and "English text" in doc.sections[-1].text
    (off,) = load_file(FIXTURES / "chatchat_ocr_test.docx", ocr=False)
    assert off.ocr_pages == [] and "English text" not in all_text(off)


def test_docling_powerpoint_sample_pptx() -> None:
    doc = load("docling_powerpoint_sample.pptx")
    slides = {s.slide for s in doc.sections}
    assert slides == {1, 2, 3}
    second = next(s for s in doc.sections if s.slide == 2 and s.kind == "text")
    assert second.heading_path == ["Second slide title"]
    assert (
        "Let’s introduce a list" in second.text and "A rectangle shape with this text inside." in second.text
    )
    assert second.text.endswith("Notes: Some notes on the second slide.")
    third = next(s for s in doc.sections if s.slide == 3)
    assert third.text.index("List item4") < third.text.index("I1") < third.text.index("l1")
    assert "Notes: Final notes on the third slide.\nSecond line of notes." in third.text
    table = rows(doc)
    assert len(table) == 7 and all(r.slide == 1 for r in table)
    # Two header levels: "Class1" spans three columns above "A merged with B" and "C".
    assert table[0].header == "col 1 | Class1 A merged with B | Class1 C | Class2 A | Class2 B | Class2 C"
    assert table[0].text.startswith("col 1: R1; Class1 A merged with B: True")


def test_markitdown_test_pptx() -> None:
    doc = load("markitdown_test.pptx")
    by_slide = {s.slide: s for s in doc.sections if s.kind == "text"}
    assert sorted(by_slide) == [1, 2, 3, 4, 5, 6]
    assert by_slide[1].heading_path == [
        "AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation"
    ]
    assert "AutoGen is an open-source framework" in by_slide[2].text
    assert "Chart: a3f6004b-6f4f-4ea8-bee3-3741f4dc385f" in by_slide[4].text
    assert "This is a nested shape with content in 2 shapes" in by_slide[5].text  # inside a group
    table = rows(doc)
    assert {r.slide for r in table} == {3}
    assert table[0].header == "ColA | ColB | ColC | ColD | ColE | ColF"
    assert "ColD: 1b92870d-e3b5-4e65-8153-919f4ff45592" in table[1].text


def test_chatchat_ocr_test_pptx() -> None:
    doc = load("chatchat_ocr_test.pptx")
    first = doc.sections[0]
    assert first.slide == 1 and first.text.startswith("我是文字\n")
    assert "English text" in first.text and doc.ocr_pages == [1]  # the picture's text, read by OCR
    (off,) = load_file(FIXTURES / "chatchat_ocr_test.pptx", ocr=False)
    assert off.sections[0].text == "我是文字" and off.ocr_pages == []
    (row,) = rows(doc)
    assert (row.slide, row.text) == (1, "我是表格1: 我是表格3; 我是表格5: 我是表格4")


def test_docling_xlsx_01_xlsx() -> None:
    doc = load("docling_xlsx_01.xlsx")
    got = {(s.sheet, s.row, s.text) for s in rows(doc)}
    assert {s.sheet for s in doc.sections} == {"Sheet1", "Sheet2", "Sheet3", "Sheet4"}
    assert ("Sheet1", 2, "first: 1; second: 5; third: 9") in got
    assert ("Sheet1", 7, "first: 6; second: 0; third: -6") in got
    # Sheet2: a table at A1:D9, one beside it at G5:I9 and one below at C14:E18.
    assert ("Sheet2", 6, "col-1: 5; col-2: 10; col-3: 15; col-4: 20") in got
    assert ("Sheet2", 6, "col-1: 1; col-2: 2; col-3: 3") in got
    assert ("Sheet2", 18, "col-1: 4; col-2: 8; col-3: 12") in got
    # Sheet3: two tables with two-row headers, the second starting on the first one's last row.
    assert ("Sheet3", 3, "first: 1; header second: 2; third: 3") in got
    assert ("Sheet3", 7, "first: 10") in got
    assert ("Sheet3", 9, "first (f): 1; header (f) second: 2; third: 3") in got
    assert ("Sheet4", 2, "header: 1") in got
    assert len(got) == 33


def _check_issues(doc: LoadedDocument, sheet: str) -> None:
    table = rows(doc)
    assert len(table) == 172
    first = table[0]
    assert (first.sheet, first.row) == (sheet, 2)
    assert first.header == "col 1 | title | file | url | detail | id"
    assert "title: 加油~以及一些建议" in first.text
    assert "url: https://github.com/imClumsyPanda/langchain-ChatGLM/issues/2" in first.text
    assert table[-1].row == 173


def test_chatchat_langchain_chatglm_closed_xlsx() -> None:
    _check_issues(load("chatchat_langchain-ChatGLM_closed.xlsx"), "Sheet1")


def test_chatchat_langchain_chatglm_closed_csv() -> None:
    doc = load("chatchat_langchain-ChatGLM_closed.csv")
    assert doc.encoding == "utf-8"
    _check_issues(doc, "chatchat_langchain-ChatGLM_closed")


def test_markitdown_test_mskanji_csv() -> None:
    doc = load("markitdown_test_mskanji.csv")
    assert doc.encoding == "cp932"
    assert [(r.row, r.text) for r in doc.sections] == [
        (2, "名前: 佐藤太郎; 年齢: 30; 住所: 東京"),
        (3, "名前: 三木英子; 年齢: 25; 住所: 大阪"),
        (4, "名前: 髙橋淳; 年齢: 35; 住所: 名古屋"),
    ]
    assert doc.sections[0].header == "名前 | 年齢 | 住所"


def test_chatchat_llm_inference_optimization_zh_md() -> None:
    doc = load("chatchat_llm_inference_optimization_zh.md")
    assert doc.title == "大模型推理优化策略"
    assert all(s.heading_path == ["大模型推理优化策略"] for s in doc.sections)
    assert "PagedAttention" in all_text(doc) and "显存优化" in all_text(doc)
