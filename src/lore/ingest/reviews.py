"""OCR review: a reviewer's mark that a scanned page's OCR text was checked (and fixed by chunk edits).

A PDF page without a text layer is read by OCR; until a reviewer marks it reviewed it counts as an
unreviewed OCR page in the documents table. A mark holds for the file's content it was made on: a new
upload (another sha256) of the file is unreviewed again. The marks are catalog rows (every replica sees
them); a KB's old `ocr_reviews/<kb>.json` file is imported on first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lore.catalog.console import PageReview
from lore.catalog.legacy import KbRows
from lore.errors import LoreError

__all__ = ["OcrReviews", "PageReview", "legacy_page_reviews", "unreviewed"]


def legacy_page_reviews(path: Path) -> list[PageReview]:
    """The marks of an old `ocr_reviews/<kb>.json` file (a list of review objects)."""
    return [PageReview(**r) for r in json.loads(path.read_text(encoding="utf-8"))]


class OcrReviews(KbRows):
    """The OCR page reviews of one knowledge base, in the catalog (the old JSON file imported once)."""

    def load_legacy(self, path: Path) -> list[PageReview]:
        return legacy_page_reviews(path)

    def store_legacy(self, data: list[PageReview]) -> int:
        return self.catalog.import_page_reviews(self.kb.id, data)

    def all(self) -> list[PageReview]:
        self.import_legacy()
        return self.catalog.list_page_reviews(self.kb.id)

    def reviewed(self, file: str, sha256: str) -> dict[int, PageReview]:
        """The file's reviewed pages, for its current content."""
        self.import_legacy()
        return {r.page: r for r in self.catalog.list_page_reviews(self.kb.id, file) if r.sha256 == sha256}

    def mark(self, file: str, page: int, sha256: str, by: str, reviewed: bool = True) -> PageReview | None:
        """Mark (or unmark) a page reviewed; the mark, or None once unmarked."""
        self.import_legacy()
        review = PageReview(file, page, sha256, by, "") if reviewed else None
        return self.catalog.set_page_review(self.kb.id, file, page, review)


def unreviewed(reviews: OcrReviews, files: list[tuple[str, Path, str]]) -> dict[str, Any]:
    """The quality report's count of OCR'd PDF pages no reviewer marked, of `files` (name, path, sha256)."""
    from lore.ingest.pages import scanned_pages  # PyMuPDF loads only when pages are looked at

    pages = []
    for name, path, sha in files:
        if not name.lower().endswith(".pdf"):
            continue  # only PDF pages have a page image to review against
        try:
            done = reviews.reviewed(name, sha)
            pages += [{"file": name, "page": p} for p in scanned_pages(path) if p not in done]
        except LoreError:
            continue
    return {"unreviewed_pages": len(pages), "unreviewed": pages[:100]}
