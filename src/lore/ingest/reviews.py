"""OCR review: a reviewer's mark that a scanned page's OCR text was checked (and fixed by chunk edits).

A PDF page without a text layer is read by OCR; until a reviewer marks it reviewed it counts as an
unreviewed OCR page in the documents table. A mark holds for the file's content it was made on: a new
upload (another sha256) of the file is unreviewed again.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import LoreError
from lore.ingest.pages import scanned_pages

_LOCK = threading.Lock()


@dataclass(frozen=True)
class PageReview:
    """Page `page` of `file` (at content `sha256`) was reviewed by `by` at `at`."""

    file: str
    page: int
    sha256: str
    by: str
    at: str


class OcrReviews:
    """The OCR page reviews of one knowledge base, in `<storage dir>/ocr_reviews/<kb>.json`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def all(self) -> list[PageReview]:
        if not self.path.is_file():
            return []
        return [PageReview(**r) for r in json.loads(self.path.read_text(encoding="utf-8"))]

    def reviewed(self, file: str, sha256: str) -> dict[int, PageReview]:
        """The file's reviewed pages, for its current content."""
        return {r.page: r for r in self.all() if r.file == file and r.sha256 == sha256}

    def mark(self, file: str, page: int, sha256: str, by: str, reviewed: bool = True) -> PageReview | None:
        """Mark (or unmark) a page reviewed; the mark, or None once unmarked."""
        review = PageReview(file, page, sha256, by, datetime.now(UTC).isoformat(timespec="seconds"))
        with _LOCK:
            rest = [r for r in self.all() if (r.file, r.page) != (file, page)]
            self._save([*rest, review] if reviewed else rest)
        return review if reviewed else None

    def _save(self, reviews: list[PageReview]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        body = json.dumps([asdict(r) for r in reviews], ensure_ascii=False, indent=1)
        tmp.write_text(body, encoding="utf-8")
        tmp.replace(self.path)


def unreviewed(reviews: OcrReviews, files: list[tuple[str, Path, str]]) -> dict[str, Any]:
    """The quality report's count of OCR'd PDF pages no reviewer marked, of `files` (name, path, sha256)."""
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
