"""New formats read from the real files in ../shared/fixtures/more (structure, not only text), and the
typed reasons a file is refused."""

from __future__ import annotations

import email.message
from pathlib import Path

import pytest

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders import load_file
from tests.conftest import SHARED

MORE = SHARED / "fixtures" / "more"


def test_chinese_xls_keeps_sheet_rows_and_headers() -> None:
    (doc,) = load_file(MORE / "poi_44235.xls")
    assert {s.sheet for s in doc.sections} == {"Sheet1"}  # the two empty sheets are skipped
    title = doc.sections[0]
    assert (title.text, title.row, title.kind) == ("还原利润表", 2, "text")
    row = next(s for s in doc.sections if "房地产贷款利息收入" in s.text)
    assert row.kind == "table_row" and row.row == 8 and "科目号: A5010004" in row.text


def test_xls_with_three_sheets() -> None:
    (doc,) = load_file(MORE / "unstructured_tests-example.xls")
    assert {s.sheet for s in doc.sections} == {"Example Test", "Format Abbr.", "Readme"}
    abbr = [s.text for s in doc.sections if s.sheet == "Format Abbr." and s.kind == "table_row"]
    assert "Abbreviation: TF; Question Type: True/False" in abbr


def test_chinese_doc_through_libreoffice_keeps_headings_and_table() -> None:
    (doc,) = load_file(MORE / "poi_61490.doc")
    assert doc.path.endswith("poi_61490.doc")
    intro = next(s for s in doc.sections if s.text == "下面是表格3x3")
    assert intro.heading_path == ["章节1", "章节1.2"]
    rows = [s.text for s in doc.sections if s.kind == "table_row"]
    assert rows == ["11: 21; 12: 22; 13: 23", "11: 31; 12: 32; 13: 33"]
    page = [(s.heading_path, s.text) for s in doc.sections if s.heading_path[:1] in (["Header"], ["Footer"])]
    assert page == [(["Header"], "页眉左 页眉中 页眉右"), (["Footer"], "页脚内容")]  # once, not per page


def test_ppt_keeps_slides_and_speaker_notes() -> None:
    (doc,) = load_file(MORE / "docling_legacy_sample.ppt")
    second = next(s for s in doc.sections if s.slide == 2)
    assert second.heading_path == ["Second slide title"]
    assert "A rectangle shape with this text inside." in second.text
    assert "Notes: Some notes on the second slide." in second.text


def test_gb2312_email_headers_and_html_body() -> None:
    (doc,) = load_file(MORE / "flanker_charset-gb2312.eml")
    assert doc.title == "提示：您的企业成员暂时无法登录邮件客户端"  # raw GB2312 bytes in the Subject
    assert doc.sections[0].text.startswith('From: "腾讯企业邮箱" <10000@qq.com>')
    assert "腾讯企业邮箱团队" in doc.sections[-1].text and "\ufffd" not in doc.sections[-1].text


def test_email_attachment_is_a_child_document(tmp_path: Path) -> None:
    message, pdf = load_file(MORE / "flanker_attached-pdf.eml")
    assert [s.text for s in message.sections][-1] == "Test - body content"
    assert pdf.document_id and pdf.document_id != message.document_id
    assert pdf.path == message.path and pdf.sections[0].heading_path == ["Attachment: test.pdf"]
    assert pdf.sections[0].page == 1 and pdf.sections[0].text == "Test."


def test_unreadable_attachment_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"] = "Quarterly numbers", "cfo@example.com"
    msg.set_content("The figures are in the attached workbook.")
    msg.add_attachment(b"not a workbook", maintype="application", subtype="vnd.ms-excel", filename="q3.xls")
    msg.add_attachment(b"\x00\x01", maintype="application", subtype="octet-stream", filename="blob.xyz")
    path = tmp_path / "numbers.eml"
    path.write_bytes(msg.as_bytes())
    (doc,) = load_file(path)
    assert doc.title == "Quarterly numbers" and "attached workbook" in doc.sections[-1].text
    assert any(w.startswith("attachment q3.xls: not") for w in doc.warnings), doc.warnings
    assert any("blob.xyz: unsupported file type" in w for w in doc.warnings), doc.warnings


@pytest.mark.parametrize(
    ("name", "data", "kind", "reason"),
    [
        ("notes.xyz", b"hello", LoadErrorKind.UNSUPPORTED, "unsupported file type '.xyz'"),
        ("empty.txt", b"", LoadErrorKind.EMPTY, "empty"),
        ("broken.xls", b"\xd0\xcf\x11\xe0 not really", LoadErrorKind.CORRUPT, "not a"),
        ("fake.doc", b"plain words, not Word", LoadErrorKind.CORRUPT, "not a Word 97-2003 file"),
        ("fake.odt", b"plain words", LoadErrorKind.CORRUPT, "not an OpenDocument file"),
        ("empty.ppt", b"", LoadErrorKind.EMPTY, "empty"),
        ("blank.eml", b"  \n", LoadErrorKind.EMPTY, "empty"),
        ("noise.png", b"\x89PNG\r\n\x1a\n broken", LoadErrorKind.CORRUPT, "not a readable image"),
    ],
)
def test_refusals_carry_a_kind(
    tmp_path: Path, name: str, data: bytes, kind: LoadErrorKind, reason: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(LoadError, match=reason) as info:
        load_file(path)
    assert info.value.kind is kind


def test_image_with_ocr_off_is_no_text() -> None:
    with pytest.raises(LoadError, match="OCR disabled") as info:
        load_file(MORE / "unstructured_chi_sim_image.jpeg", ocr=False)
    assert info.value.kind is LoadErrorKind.NO_TEXT


def test_missing_libreoffice_is_unsupported_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_SOFFICE", "")
    with pytest.raises(LoadError, match="needs LibreOffice.*make office") as info:
        load_file(MORE / "wordextractor_test11.doc")
    assert info.value.kind is LoadErrorKind.UNSUPPORTED


def test_encrypted_pdf_is_encrypted(tmp_path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret plans")
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="pw")
    with pytest.raises(LoadError, match="encrypted") as info:
        load_file(path)
    assert info.value.kind is LoadErrorKind.ENCRYPTED
