"""Limits checked before parsing: ZIP-based documents' entries, decompressed size and ratio; PDF pages."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pymupdf
import pytest

from lore.errors import LoadError
from lore.ingest.loaders import load_file
from lore.ingest.loaders.limits import FileLimits, check_file
from tests.conftest import EXAMPLES


def _padded_docx(path: Path, *, extra_entries: int = 0, zeros_mb: int = 0) -> Path:
    """The sample DOCX plus `extra_entries` tiny parts and a part of `zeros_mb` MB of zeros."""
    with (
        zipfile.ZipFile(EXAMPLES / "travel_policy.docx") as src,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        for i in range(extra_entries):
            dst.writestr(f"extra/item{i}.xml", "<a/>")
        if zeros_mb:
            dst.writestr("word/media/zeros.bin", bytes(zeros_mb << 20))
    return path


def test_real_office_files_pass_the_default_limits() -> None:
    for name in ("travel_policy.docx", "price_list.xlsx", "product_sheet.pdf"):
        check_file(EXAMPLES / name, FileLimits())
        assert load_file(EXAMPLES / name)  # the default limits apply when none are given


def test_zip_entry_count_size_and_ratio(tmp_path: Path) -> None:
    many = _padded_docx(tmp_path / "many.docx", extra_entries=60)
    with pytest.raises(LoadError, match=r"archive has \d+ entries, limit 50"):
        check_file(many, FileLimits(max_zip_entries=50))
    zeros = _padded_docx(tmp_path / "zeros.docx", zeros_mb=20)  # ~20 KB on disk, ~1000 times smaller
    with pytest.raises(LoadError, match="decompresses to 21.8 MB, limit 10 MB"):
        check_file(zeros, FileLimits(max_unzipped_bytes=10_000_000))
    with pytest.raises(LoadError, match=r"decompresses \d+ times its size"):
        load_file(zeros)  # under 200 MB, but far over the default ratio of 200
    check_file(zeros, FileLimits(max_zip_ratio=1e6))  # within limits that allow it


def test_pdf_page_count(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for i in range(4):
        doc.new_page().insert_text((72, 72), f"page {i + 1}")
    doc.save(tmp_path / "four.pdf")
    with pytest.raises(LoadError, match="PDF has 4 pages, limit 3"):
        check_file(tmp_path / "four.pdf", FileLimits(max_pdf_pages=3))
    check_file(tmp_path / "four.pdf", FileLimits(max_pdf_pages=4))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    check_file(tmp_path / "broken.pdf", FileLimits())  # left to the PDF loader, which names the problem
