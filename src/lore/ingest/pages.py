"""A page of a PDF as a PNG (the console shows scanned pages beside their OCR text, and cited pages)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pymupdf

from lore.errors import LoreError, NotFoundError
from lore.ingest.loaders.pdf import reads_by_ocr

MAX_PIXELS = 4_000_000  # a rendered page is scaled down to stay under this


def render_page(path: Path, page: int, zoom: float = 1.5, marks: list[Rect] | None = None) -> bytes:
    """Page `page` (1-based) of the PDF at `path` as PNG bytes, the rectangles `marks` (page points) under a
    translucent highlight; a page it does not have is a NotFoundError."""
    with _open(path, page) as doc:
        p = doc[page - 1]
        for r in marks or []:  # drawn on the in-memory copy only
            p.draw_rect(pymupdf.Rect(r) * p.derotation_matrix, color=None, fill=(1, 0.8, 0), fill_opacity=0.4)  # type: ignore[no-untyped-call]
        area = p.rect.width * p.rect.height * zoom * zoom
        if area > MAX_PIXELS:
            zoom *= (MAX_PIXELS / area) ** 0.5
        pix = p.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)  # type: ignore[no-untyped-call]
        return bytes(pix.tobytes("png"))


Rect = tuple[float, float, float, float]
FRAGMENT = 60  # characters searched at a time: the text layer's line breaks defeat longer searches
MAX_FRAGMENTS = 60


@dataclass
class Region:
    """Where a passage's text is on a page: its rectangles (page points), or none found; a page without a
    text layer (scanned) has no findable region."""

    rects: list[Rect]
    text_layer: bool

    @property
    def state(self) -> str:
        return "marked" if self.rects else ("not-found" if self.text_layer else "no-text-layer")


def _fragments(text: str, size: int = FRAGMENT) -> list[str]:
    """The passage as search fragments of up to `size` characters, split at spaces (CJK runs by length)."""
    out: list[str] = []
    cur = ""
    for word in text.split():
        pieces = [word[i : i + size] for i in range(0, len(word), size)]
        for piece in pieces:
            if cur and len(cur) + 1 + len(piece) > size:
                out.append(cur)
                cur = ""
            cur = f"{cur} {piece}" if cur else piece
    if cur:
        out.append(cur)
    return [f for f in out if len(f) >= 6][:MAX_FRAGMENTS]


def _halves(fragment: str) -> list[str]:
    """A fragment not found whole (it crosses a line or column break) as two halves, split at a space."""
    mid = len(fragment) // 2
    cut = fragment.rfind(" ", 0, mid + 10)
    cut = cut if cut > 5 else mid
    return [h for h in (fragment[:cut].strip(), fragment[cut:].strip()) if len(h) >= 6]


def _merge(rects: list[Rect]) -> list[Rect]:
    """Rectangles on one line that touch or overlap become one (so the highlight is even)."""
    merged: list[Rect] = []
    for r in sorted(set(rects), key=lambda r: (round(r[1]), r[0])):
        last = merged[-1] if merged else None
        if last and abs(last[1] - r[1]) < 2 and abs(last[3] - r[3]) < 2 and r[0] <= last[2] + 4:
            merged[-1] = (last[0], min(last[1], r[1]), max(last[2], r[2]), max(last[3], r[3]))
        else:
            merged.append(r)
    return merged


def _find(p: pymupdf.Page, text: str) -> Region:
    if not p.get_text("text").strip():  # type: ignore[no-untyped-call]
        return Region([], text_layer=False)
    found: list[Rect] = []
    for fragment in _fragments(text):
        hits = p.search_for(fragment) or [h for half in _halves(fragment) for h in p.search_for(half)]
        found += [tuple(r) for r in hits]
    return Region(_merge(found), text_layer=True)


def _open(path: Path, page: int) -> pymupdf.Document:
    try:
        doc = pymupdf.open(path, filetype="pdf")  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise LoreError(f"{path.name}: not a readable PDF ({exc})") from None
    if not doc.is_pdf:
        doc.close()  # type: ignore[no-untyped-call]
        raise LoreError(f"{path.name}: not a PDF")
    if not 1 <= page <= doc.page_count:
        count = doc.page_count
        doc.close()  # type: ignore[no-untyped-call]
        raise NotFoundError(f"{path.name} has no page {page} (pages: {count})")
    return doc


def passage_region(path: Path, page: int, text: str) -> Region:
    """Where `text` (a passage) is on page `page` of the PDF, found by its fragments in the text layer."""
    with _open(path, page) as doc:
        return _find(doc[page - 1], text)


def scanned_pages(path: Path) -> list[int]:
    """The PDF's image-only pages (read by OCR, so their text wants a review), 1-based."""
    with _open(path, 1) as doc:
        return [i + 1 for i, p in enumerate(doc) if reads_by_ocr(p)]
