"""The 20 real fixture files through the whole ingest pipeline: each one is indexed or reported.

OCR is switched off here (the loader tests cover OCR page by page), so the image-only scans must be
reported by name with a clear reason while everything else is indexed and searchable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from tests.conftest import SHARED

FIXTURES = SHARED / "fixtures" / "documents"
IMAGE_ONLY = {"rapidocrpdf_image.pdf", "markitdown_MEDRPT-2024-PAT-3847_medical_report_scan.pdf"}


@pytest.mark.slow
def test_every_fixture_is_ingested_or_reported(tmp_path: Path) -> None:
    assert FIXTURES.is_dir(), f"fixtures not found at {FIXTURES}"
    lore = Lore(load_settings(home=tmp_path / "home", ingest={"ocr": False}))
    lore.create_kb("fx")
    report = lore.ingest("fx", [FIXTURES])
    by_name = {Path(f.name).name: f for f in report.files}
    assert set(by_name) == {p.name for p in FIXTURES.iterdir()}
    assert by_name["README.md"].status == "ingested"
    for name in IMAGE_ONLY:
        assert by_name[name].status == "failed" and "image-only" in by_name[name].error
    ok = {n for n, f in by_name.items() if f.status == "ingested"}
    assert ok == set(by_name) - IMAGE_ONLY, {n: (f.status, f.error) for n, f in by_name.items()}
    kb = lore.catalog.get_kb("fx")
    assert lore.catalog.get_file(kb.id, "documents/rapidocrpdf_image.pdf").error

    def first(query: str, **kw: object):
        return lore.search("fx", query, SearchOptions(top_k=1, **kw))[0].chunk

    # Words of the PDF's own page: the fixtures README's table row names it "盐城高新区投资集团…募集说明书"
    # too, and since table rows are chunks of their own, that row is an equally exact hit for those words.
    hit = first("盐城高新区投资集团 超短期融资券 发行人历史信用评级")
    assert hit.file_path.endswith("pymupdf_chinese-tables.pdf") and hit.page == 1
    row = first("佐藤太郎 東京")
    assert row.file_path.endswith("markitdown_test_mskanji.csv") and row.row is not None
    sheet = first("langchain-ChatGLM 安装 报错", mode="bm25")
    assert sheet.source_type == "table_row" and sheet.sheet
    lore.close()
