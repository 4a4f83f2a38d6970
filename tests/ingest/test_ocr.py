"""OCR of image-only and mostly-image PDF pages with the real RapidOCR models (slow: ~2-10 s a page)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from lore.errors import LoadError
from lore.ingest.loaders import load_file
from lore.ingest.loaders.ocr import get_engine
from lore.schema import LoadedDocument

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "documents"

pytestmark = pytest.mark.slow
assert FIXTURES.is_dir(), f"fixtures not found at {FIXTURES} (../shared must sit beside the repo)"


def load(name: str) -> LoadedDocument:
    (doc,) = load_file(FIXTURES / name)
    return doc


def test_engine_is_created_once() -> None:
    assert get_engine() is get_engine()


def test_chatchat_ocr_test_pdf_merges_text_layer_and_image_text() -> None:
    doc = load("chatchat_ocr_test.pdf")
    assert doc.ocr_pages == [1]
    (page,) = doc.sections
    assert page.text.startswith("我是文字")  # the text layer, above the image
    for words in ["横向文本框", "竖向文本框", "English text"]:  # horizontal, vertical and Latin text
        assert words in page.text


def test_rapidocrpdf_image_pdf_reads_columns_in_order() -> None:
    doc = load("rapidocrpdf_image.pdf")
    assert doc.ocr_pages == [1]
    text = doc.sections[0].text
    assert "Page 6 of 14" in text and "glycoprotein" in text
    # Two-column page: the whole left column comes before the right one.
    assert text.index("Principal component analysis") < text.index("larger difference between the two")
    assert text.index("larger difference between the two") < text.index("Functional and pathway differences")


def test_markitdown_medical_report_scan_pdf() -> None:
    doc = load("markitdown_MEDRPT-2024-PAT-3847_medical_report_scan.pdf")
    assert doc.ocr_pages == [1, 2, 3]
    assert [s.page for s in doc.sections] == [1, 2, 3]
    first, second, third = (s.text for s in doc.sections)
    assert "SEATTLE GENERAL HOSPITAL" in first and "Jonathan Michael Harrison" in first
    assert "Blood Pressure 142/88 mmHg" in first  # a table row stays on one line
    assert "LABORATORY RESULTS" in second and "HbA1c" in second
    assert "TREATMENT PLAN" in third and "destroy all copies" in third
    # the footer that numbers the pages ("Page 3 of 3") is dropped; the running header (no page number) stays
    assert not any("of 3" in s.text for s in doc.sections) and third.startswith("MEDRPT-2024-PAT-3847")


def test_rapidocrpdf_direct_and_image_pdf_ocrs_only_the_scanned_page() -> None:
    doc = load("rapidocrpdf_direct_and_image.pdf")
    assert doc.ocr_pages == [2]
    first, second = doc.sections
    assert first.page == 1 and "ABCNet: Real-time Scene Text Spotting" in first.text
    assert second.page == 2 and "Defending Ukraine" in second.text and "cyberattacks" in second.text


def test_image_only_pdf_where_ocr_finds_nothing(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=400)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 150, 200), False)
    pix.clear_with(255)
    page.insert_image(page.rect, pixmap=pix)
    path = tmp_path / "white.pdf"
    doc.save(path)
    with pytest.raises(LoadError, match="image-only PDF and OCR found no text"):
        load_file(path)
