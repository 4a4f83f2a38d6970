"""A page of a PDF as a PNG (the console shows scanned pages beside their OCR text, and cited pages)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from lore.errors import LoreError, NotFoundError

MAX_PIXELS = 4_000_000  # a rendered page is scaled down to stay under this


def render_page(path: Path, page: int, zoom: float = 1.5) -> bytes:
    """Page `page` (1-based) of the PDF at `path` as PNG bytes; a page it does not have is a NotFoundError."""
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise LoreError(f"{path.name}: not a readable PDF ({exc})") from None
    with doc:
        if not doc.is_pdf:
            raise LoreError(f"{path.name}: not a PDF")
        if not 1 <= page <= doc.page_count:
            raise NotFoundError(f"{path.name} has no page {page} (pages: {doc.page_count})")
        p = doc[page - 1]
        area = p.rect.width * p.rect.height * zoom * zoom
        if area > MAX_PIXELS:
            zoom *= (MAX_PIXELS / area) ** 0.5
        pix = p.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
        return bytes(pix.tobytes("png"))
