"""Loader behaviour on small files written by the tests: formats, encodings and bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import docx
import openpyxl
import pymupdf
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from lore.errors import LoadError
from lore.ingest.loaders import load_file, loader_for, supported_suffixes
from lore.ingest.loaders.encoding import decode_bytes
from lore.ingest.loaders.ocr import reading_order
from lore.ingest.loaders.table import table_sections

HANDBOOK_MD = """# 员工手册
欢迎加入。

## 报销
报销需要审批。

### 材料
- 发票
- 审批单

```bash
# 这不是标题
echo ok
```

## 请假 ##
年假五天。
"""


def _write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def test_registry_knows_every_format() -> None:
    office = {".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".tsv", ".doc", ".xls", ".ppt", ".rtf", ".odt"}
    assert {".eml", ".png", ".jpg", ".jpeg"} <= set(supported_suffixes())
    text = {".txt", ".md", ".markdown", ".html", ".htm", ".jsonl"}
    assert office | text <= set(supported_suffixes())
    assert loader_for(Path("A.PDF")) is loader_for(Path("b.pdf"))


def test_unsupported_suffix(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="unsupported file type '.xyz'"):
        load_file(_write(tmp_path / "notes.xyz", "hello"))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="empty"):
        load_file(_write(tmp_path / "empty.txt", b""))


def test_binary_txt_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="binary"):
        load_file(_write(tmp_path / "blob.txt", b"PK\x03\x04\x00\x00binary\x00data"))


def test_gbk_txt_decodes(tmp_path: Path) -> None:
    text = "员工手册：报销需要提交发票和审批单。请假需要提前三天申请。"
    (doc,) = load_file(_write(tmp_path / "gbk.txt", text.encode("gbk")))
    assert doc.sections[0].text == text
    assert doc.encoding == "gb18030"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("名前,年齢\n佐藤太郎,30\n".encode("cp932"), "cp932"),
        ("\ufeffabc 中文".encode(), "utf-8-sig"),
        ("abc 中文".encode("utf-16"), "utf-16"),
        (b"plain ascii", "utf-8"),
    ],
)
def test_decode_bytes(data: bytes, encoding: str) -> None:
    text, found = decode_bytes(data, "x.txt")
    assert found == encoding
    assert "\ufeff" not in text and text.strip()


def test_decode_bytes_uses_declared_charset() -> None:
    text, found = decode_bytes("报销".encode("gbk"), "x.html", hint="gb2312")
    assert (text, found) == ("报销", "gb18030")


def test_markdown_heading_paths(tmp_path: Path) -> None:
    (doc,) = load_file(_write(tmp_path / "handbook.md", HANDBOOK_MD))
    paths = [s.heading_path for s in doc.sections]
    assert paths == [["员工手册"], ["员工手册", "报销"], ["员工手册", "报销", "材料"], ["员工手册", "请假"]]
    assert doc.title == "员工手册"
    assert "# 这不是标题" in doc.sections[2].text  # a comment inside a code fence is no heading
    assert doc.sections[3].text == "年假五天。"


def test_html_headings_tables_and_charset(tmp_path: Path) -> None:
    page = """<html><head><meta charset="gb2312"><title>员工手册</title>
    <script>var hidden = 1;</script><style>p {}</style></head><body>
    <nav><a href="/">首页导航</a></nav>
    <h1>员工手册</h1><p>欢迎加入公司。</p>
    <h2>报销</h2><p>报销流程<br>第二行</p>
    <table><tr><th>项目</th><th>上限</th></tr><tr><td>住宿</td><td>500元</td></tr>
    <tr><td colspan="2">超标需审批</td></tr></table>
    <h2>请假</h2><div>年假 <b>5</b> 天</div></body></html>"""
    (doc,) = load_file(_write(tmp_path / "page.html", page.encode("gbk")))
    assert doc.title == "员工手册"
    everything = "\n".join(s.text for s in doc.sections)
    assert "hidden" not in everything and "首页导航" not in everything
    rows = [s for s in doc.sections if s.kind == "table_row"]
    assert [r.text for r in rows] == ["项目: 住宿; 上限: 500元", "项目 / 上限: 超标需审批"]
    assert rows[0].header == "项目 | 上限" and rows[0].heading_path == ["员工手册", "报销"]
    assert doc.sections[-1].heading_path == ["员工手册", "请假"]
    assert doc.sections[-1].text == "年假 5 天"


def test_jsonl_records(tmp_path: Path) -> None:
    lines = [
        {"_id": "d1", "title": "Vitamin D", "text": "Vitamin D helps bones."},
        {"_id": 42, "title": "", "text": "No title here."},
    ]
    path = _write(tmp_path / "corpus.jsonl", "\n".join(json.dumps(r) for r in lines) + "\n\n")
    docs = load_file(path)
    assert [d.document_id for d in docs] == ["d1", "42"]
    # The title is kept apart (chunking puts it before every chunk), not in the section text.
    assert (docs[0].title, docs[0].sections[0].text) == ("Vitamin D", "Vitamin D helps bones.")
    assert (docs[1].title, docs[1].sections[0].text) == (None, "No title here.")


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", '{"_id": "1", "text": "ok"}\n{broken\n')
    with pytest.raises(LoadError, match=r"corpus\.jsonl: line 2: invalid JSON"):
        load_file(path)
    with pytest.raises(LoadError, match='line 1: record has no "_id"'):
        load_file(_write(tmp_path / "noid.jsonl", '{"text": "ok"}\n'))


def test_jsonl_is_fast(tmp_path: Path) -> None:
    record = {"title": "A study of things", "text": "word " * 300}
    body = "\n".join(json.dumps({"_id": str(i), **record}) for i in range(5000))
    path = _write(tmp_path / "big.jsonl", body)
    start = time.perf_counter()
    docs = load_file(path)
    assert len(docs) == 5000
    assert time.perf_counter() - start < 5.0


def test_corrupt_pdf(tmp_path: Path) -> None:
    path = _write(tmp_path / "broken.pdf", bytes(range(256)) * 40)
    with pytest.raises(LoadError, match="not a valid PDF"):
        load_file(path)


def test_encrypted_pdf(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret salary table")
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    with pytest.raises(LoadError, match="encrypted"):
        load_file(path)


def test_pdf_without_any_text(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page()
    path = tmp_path / "blank.pdf"
    doc.save(path)
    with pytest.raises(LoadError, match="no text"):
        load_file(path)


def test_image_only_pdf_with_ocr_disabled(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 280), False)
    pix.clear_with(255)
    page.insert_image(page.rect, pixmap=pix)
    path = tmp_path / "scan.pdf"
    doc.save(path)
    with pytest.raises(LoadError, match=r"image-only PDF \(OCR disabled\)"):
        load_file(path, ocr=False)


def test_running_page_numbers_are_dropped_but_titles_and_figures_stay(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for n in (1, 2, 3):
        page = doc.new_page()
        page.insert_text((300, 40), f"- {n + 10} -")  # a page number at the top, numbered from 11
        page.insert_text((72, 60), "Annual Report")  # the same on every page, no changing figure: kept
        page.insert_text((72, 120), f"Section {n} says something about the budget.")
        page.insert_text((72, 760), f"Lanternfish - annual report - page {n} of 3")
        page.insert_text((72, 780), f"Total: {n * 7},234.56")  # the last line, but no page number
    path = tmp_path / "report.pdf"
    doc.save(path)
    sections = load_file(path)[0].sections
    assert [s.page for s in sections] == [1, 2, 3]
    for n, section in enumerate(sections, start=1):
        assert "page" not in section.text and f"- {n + 10} -" not in section.text, section.text
        assert "Annual Report" in section.text and f"Total: {n * 7},234.56" in section.text


def test_pages_whose_only_line_counts_them_keep_it(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for n in (1, 2, 3):
        doc.new_page().insert_text((72, 120), f"Step {n} of 3: check the battery")
    path = tmp_path / "steps.pdf"
    doc.save(path)
    assert [s.text for s in load_file(path)[0].sections] == [
        f"Step {n} of 3: check the battery" for n in (1, 2, 3)
    ]


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_office_file_that_is_not_a_zip(tmp_path: Path, suffix: str) -> None:
    with pytest.raises(LoadError, match="not a valid|zip"):
        load_file(_write(tmp_path / f"fake{suffix}", b"this is not a zip package at all"))


def test_docx_headings_styles_outline_levels_and_table_order(tmp_path: Path) -> None:
    document = docx.Document()
    cover = document.add_paragraph("封面：2024 版")
    sdt, content = OxmlElement("w:sdt"), OxmlElement("w:sdtContent")  # a content control
    cover._p.addprevious(sdt)
    sdt.append(content)
    content.append(cover._p)
    document.add_heading("员工手册", level=1)
    document.add_paragraph("总则内容")
    document.styles.add_style("标题 2", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("报销", style="标题 2")
    document.add_paragraph("报销正文")
    outlined = document.add_paragraph("材料")
    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "2")
    outlined._p.get_or_add_pPr().append(level)
    table = document.add_table(rows=3, cols=2)
    for r, values in enumerate([("材料", "份数"), ("发票", "1"), ("审批单", "2")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    document.add_paragraph("表后说明")
    path = tmp_path / "handbook.docx"
    document.save(str(path))

    (doc,) = load_file(path)
    got = [(s.kind, s.heading_path, s.text) for s in doc.sections]
    assert got == [
        ("text", [], "封面：2024 版"),
        ("text", ["员工手册"], "总则内容"),
        ("text", ["员工手册", "报销"], "报销正文"),
        ("table_row", ["员工手册", "报销", "材料"], "材料: 发票; 份数: 1"),
        ("table_row", ["员工手册", "报销", "材料"], "材料: 审批单; 份数: 2"),
        ("text", ["员工手册", "报销", "材料"], "表后说明"),
    ]
    assert doc.sections[3].header == "材料 | 份数"


def test_xlsx_rows_sheets_and_empty_workbook(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "价格"
    ws.append(["产品", "价格", None])
    ws.append(["A 型", 12.5, "含税"])
    wb.create_sheet("空表")
    path = tmp_path / "prices.xlsx"
    wb.save(path)
    (doc,) = load_file(path)
    (row,) = doc.sections
    assert (row.sheet, row.row, row.kind) == ("价格", 2, "table_row")
    assert row.text == "产品: A 型; 价格: 12.5; col 3: 含税"
    assert row.header == "产品 | 价格 | col 3"

    empty = openpyxl.Workbook()
    empty.save(tmp_path / "empty.xlsx")
    with pytest.raises(LoadError, match="workbook has no data"):
        load_file(tmp_path / "empty.xlsx")


def test_csv_delimiters_and_bom(tmp_path: Path) -> None:
    (doc,) = load_file(_write(tmp_path / "semi.csv", "\ufeffname;city\nAnna;Berlin\n"))
    assert doc.sections[0].text == "name: Anna; city: Berlin"
    (doc,) = load_file(_write(tmp_path / "tabs.tsv", "name\tcity\nBo\tOslo, Norway\n"))
    assert doc.sections[0].text == "name: Bo; city: Oslo, Norway"
    assert (doc.sections[0].sheet, doc.sections[0].row) == ("tabs", 2)


def test_table_blocks_spacer_rows_and_side_by_side_tables() -> None:
    grid = [
        ["id", "amount", "", "", "key", "value"],
        ["1", "10", "", "", "a", "x"],
        ["", "", "", "", "b", "y"],
        ["2", "20", "", "", "", ""],
        ["", "", "", "", "", ""],
        ["Note: amounts in CNY", "", "", "", "", ""],
    ]
    got = [(s.row, s.kind, s.text) for s in table_sections(grid, "S")]
    assert got == [
        (2, "table_row", "id: 1; amount: 10"),
        (2, "table_row", "key: a; value: x"),
        (3, "table_row", "key: b; value: y"),
        (4, "table_row", "id: 2; amount: 20"),  # after a spacer row: same columns, same header
        (6, "text", "Note: amounts in CNY"),
    ]


def test_reading_order_columns_and_table_rows() -> None:
    def box(x0: float, y0: float, x1: float, text: str) -> tuple[float, float, float, float, str]:
        return (x0, y0, x1, y0 + 10, text)

    header = [box(0, 0, 200, "Title across the page")]
    left = [box(0, 20 + 14 * i, 95, f"L{i}") for i in range(5)]
    right = [box(105, 20 + 14 * i, 200, f"R{i}") for i in range(5)]
    texts = [b[4] for b in reading_order(header + right + left)]
    assert texts == ["Title across the page", *[f"L{i}" for i in range(5)], *[f"R{i}" for i in range(5)]]

    # Short cells in columns are a table, read row by row.
    table = [box(x, 14 * r, x + 20, f"{r}{c}") for r in range(4) for c, x in enumerate((0, 60, 120))]
    texts = [b[4] for b in reading_order(table)]
    assert texts == [f"{r}{c}" for r in range(4) for c in range(3)]


def _text_box(paragraph: object, text: str) -> None:
    """Anchor a DrawingML text box (with its VML fallback copy, as Word writes it) in `paragraph`."""
    from docx.oxml import parse_xml

    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    box = f'<w:txbxContent xmlns:w="{w}"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>'
    run = parse_xml(
        f'<w:r xmlns:w="{w}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
        ' xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
        ' xmlns:v="urn:schemas-microsoft-com:vml"><mc:AlternateContent>'
        f'<mc:Choice Requires="wps"><w:drawing><wps:txbx>{box}</wps:txbx></w:drawing></mc:Choice>'
        f"<mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r>"
    )
    paragraph._p.append(run)  # type: ignore[attr-defined]


def test_docx_headers_footers_and_text_boxes(tmp_path: Path) -> None:
    document = docx.Document()
    first = document.sections[0]
    first.header.paragraphs[0].text = "Acme\tConfidential"
    first.different_first_page_header_footer = True
    first.first_page_header.paragraphs[0].text = "Cover page header"
    footer_table = first.footer.add_table(rows=2, cols=2, width=first.page_width)
    for r, values in enumerate([("Owner", "Phone"), ("IT desk", "8000")]):
        for c, value in enumerate(values):
            footer_table.cell(r, c).text = value
    first.even_page_header.paragraphs[0].text = "Even pages are not shown"  # setting off: not read
    body = document.add_paragraph("Body text")
    _text_box(body, "Boxed warning")
    second = document.add_section()  # the same header part again, and then linked: read once
    second.header.is_linked_to_previous = True
    third = document.add_section()
    third.header.is_linked_to_previous = False
    third.header.paragraphs[0].text = "Acme Confidential"  # same text again: once
    third.footer.is_linked_to_previous = False
    third.footer.paragraphs[0].text = "Appendix footer"
    third.footer.add_paragraph("- 3 -")  # a page number alone: left out
    path = tmp_path / "headers.docx"
    document.save(str(path))

    (doc,) = load_file(path)
    got = [(s.kind, s.heading_path, s.text) for s in doc.sections]
    assert got == [
        ("text", [], "Body text\nBoxed warning"),
        ("text", ["Header"], "Acme Confidential"),
        ("text", ["Header"], "Cover page header"),
        ("table_row", ["Footer"], "Owner: IT desk; Phone: 8000"),
        ("text", ["Footer"], "Appendix footer"),
    ]
