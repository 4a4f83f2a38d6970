"""PDF loader (PyMuPDF): one section per page, OCR for pages whose text is only in images."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders import ocr as ocr_mod
from lore.ingest.loaders.base import LoadOptions
from lore.schema import LoadedDocument, Section

# A page is "image-only" when its text layer has fewer visible characters than this and it shows
# an image of at least MIN_IMAGE_SHARE of the page. That catches scans (no text) and pages like
# chatchat_ocr_test.pdf (4 characters of text beside an image holding the rest). Pages with a real
# text layer are never OCR'd: their figures rarely carry text worth ~2-10 s per page.
SHORT_TEXT = 50
MIN_IMAGE_SHARE = 0.02
# Images covering this share of the page: OCR the whole rendered page instead of image by image.
FULL_PAGE_SHARE = 0.5

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # glyphs without Unicode (bullets, icons)
_TEXT_FLAGS = (pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES) | pymupdf.TEXT_DEHYPHENATE


def load_pdf(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Read a PDF; `options.ocr=False` skips OCR and records a warning for each image-only page."""
    try:
        doc = pymupdf.open(path, filetype="pdf")  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise LoadError(str(path), f"not a valid PDF ({exc})") from exc
    with doc:
        if doc.needs_pass:
            raise LoadError(str(path), "encrypted PDF (password required)", LoadErrorKind.ENCRYPTED)
        if doc.page_count == 0:
            raise LoadError(str(path), "PDF has no pages", LoadErrorKind.EMPTY)
        loaded = LoadedDocument(path=str(path), sections=[], title=(doc.metadata or {}).get("title") or None)
        outline = _Outline(doc)
        image_only = 0
        for page in doc:  # type: ignore[attr-defined]
            number = page.number + 1
            text, regions = _text_and_image_regions(page)
            if regions:
                image_only += 1
                if options.ocr:
                    try:
                        text = _ocr_page(page, regions)
                    except Exception as exc:  # noqa: BLE001 - one bad page must not lose the others
                        loaded.warnings.append(f"page {number}: OCR failed ({type(exc).__name__}: {exc})")
                        continue
                    loaded.ocr_pages.append(number)
                    if not text:
                        loaded.warnings.append(f"page {number}: OCR found no text")
                else:
                    loaded.warnings.append(f"page {number}: image-only page, text not read (OCR disabled)")
            heading_path = outline.path_for(number, text)
            if text:
                loaded.sections.append(Section(text=text, page=number, heading_path=heading_path))
    _drop_page_furniture(loaded.sections)
    if not loaded.sections:
        if image_only and options.ocr:
            raise LoadError(str(path), "image-only PDF and OCR found no text", LoadErrorKind.NO_TEXT)
        if image_only:
            raise LoadError(str(path), "image-only PDF (OCR disabled)", LoadErrorKind.NO_TEXT)
        raise LoadError(str(path), "no text found (the PDF has no text layer)", LoadErrorKind.NO_TEXT)
    return [loaded]


# "pdf2": running headers and footers that number the pages are dropped (PDFs read before are read again).
load_pdf.version = "pdf2"  # type: ignore[attr-defined]


def _text_and_image_regions(page: pymupdf.Page) -> tuple[str, list[pymupdf.Rect]]:
    """The page's text layer, and the image areas to OCR if the page is image-only (else [])."""
    text = _CONTROL.sub("", page.get_text("text", flags=_TEXT_FLAGS)).strip()  # type: ignore[no-untyped-call]
    if sum(not ch.isspace() for ch in text) >= SHORT_TEXT:
        return text, []
    area = abs(page.rect)
    regions = []
    for info in page.get_image_info():
        rect = pymupdf.Rect(info["bbox"]) & page.rect  # type: ignore[no-untyped-call]
        if not rect.is_empty and abs(rect) >= MIN_IMAGE_SHARE * area:
            regions.append(rect)
    return text, regions


def reads_by_ocr(page: pymupdf.Page) -> bool:
    """Is the page image-only, so that its text is read by OCR (the console asks for its review)?"""
    return bool(_text_and_image_regions(page)[1])


def _ocr_page(page: pymupdf.Page, regions: list[pymupdf.Rect]) -> str:
    """OCR the page, or only its image regions merged with the text layer outside them."""
    union = pymupdf.Rect(regions[0])  # type: ignore[no-untyped-call]
    for rect in regions[1:]:
        union |= rect
    if abs(union) >= FULL_PAGE_SHARE * abs(page.rect):
        return ocr_mod.ocr_region(page)  # the rendering includes the text layer too
    pieces: list[tuple[float, float, str]] = []
    for x0, y0, x1, y1, block_text, _no, block_type in page.get_text("blocks", flags=_TEXT_FLAGS):  # type: ignore[no-untyped-call]
        block = pymupdf.Rect(x0, y0, x1, y1)  # type: ignore[no-untyped-call]
        # Text drawn over an image is read by OCR from the rendering; keep it only once.
        inside = any(abs(block & rect) > 0.5 * abs(block) for rect in regions)
        block_text = _CONTROL.sub("", block_text).strip()
        if block_type == 0 and block_text and not inside:
            pieces.append((y0, x0, block_text))
    for rect in regions:
        found = ocr_mod.ocr_region(page, clip=rect)
        if found:
            pieces.append((rect.y0, rect.x0, found))
    return "\n".join(text for _, _, text in sorted(pieces))


_EDGE = 2  # lines at the top and at the bottom of a page where running headers and footers sit
_FIGURES = re.compile(r"\d+")
_WORDS = re.compile(r"[^\W\d_]{3,}|[\u4e00-\u9fff]")
_PAGE_NUMBER = re.compile(r"[-–—\s(\[]*\d{1,4}[-–—\s)\]]*")


def _drop_page_furniture(sections: list[Section]) -> None:
    """Remove running headers and footers that number the pages ("Product sheet - page 1 of 2"): a line at
    the top or bottom of most pages, the same on each but for a figure that counts the pages. A repeated
    title or table header (no figure), or a total at the foot of each page (figures unrelated to the page's
    number), stays."""
    if len(sections) < 2:
        return
    edges = [_edge_lines(s.text) for s in sections]
    found: dict[str, list[tuple[int, list[int]]]] = {}
    for section, lines in zip(sections, edges, strict=True):
        for key, line in dict(lines.values()).items():
            found.setdefault(key, []).append((section.page or 0, [int(f) for f in _FIGURES.findall(line)]))
    furniture = {
        k for k, seen in found.items() if len(seen) >= max(2, len(sections) / 2) and _counts_pages(seen)
    }
    if not furniture:
        return
    kept = [
        "\n".join(
            x for i, x in enumerate(s.text.splitlines()) if lines.get(i, ("",))[0] not in furniture
        ).strip()
        for s, lines in zip(sections, edges, strict=True)
    ]
    if not any(kept):  # every line "numbers its page": body text, not furniture
        return
    for section, text in zip(sections, kept, strict=True):
        section.text = text
    sections[:] = [s for s in sections if s.text]


def _edge_lines(text: str) -> dict[int, tuple[str, str]]:
    """Line number -> (the line with its figures as #, the line) for the first and last `_EDGE` non-blank
    lines of a page that could number it: words around a figure ("page 1 of 2", "第 3 页") or a page number
    alone ("- 12 -")."""
    lines = [(i, x.strip()) for i, x in enumerate(text.splitlines()) if x.strip()]
    out = {}
    for i, line in lines[:_EDGE] + lines[-_EDGE:]:
        key = _FIGURES.sub("#", line)
        if key != line and (_WORDS.search(key) or _PAGE_NUMBER.fullmatch(line)):
            out[i] = (key, line)
    return out


def _counts_pages(seen: list[tuple[int, list[int]]]) -> bool:
    """Whether one of the line's figures is the page's number plus a constant (a printed page number)."""
    width = min(len(figures) for _, figures in seen)
    return any(len({figures[j] - page for page, figures in seen}) == 1 for j in range(width))


class _Outline:
    """Heading paths from the PDF outline, trusting an entry only if its title is on its page."""

    def __init__(self, doc: pymupdf.Document) -> None:
        self.entries: dict[int, list[tuple[int, str]]] = {}
        for level, title, page, *_ in doc.get_toc(simple=True):
            if page > 0 and title.strip():
                self.entries.setdefault(page, []).append((level, title.strip()))
        self.stack: list[tuple[int, str]] = []

    def path_for(self, page: int, text: str) -> list[str]:
        """The path at the page's first heading, else the one carried over from earlier pages."""
        found = _alnum(text)
        first: list[str] | None = None
        for level, title in self.entries.get(page, []):
            if _alnum(title)[:40] not in found:
                continue  # outlines copied from a longer document point at missing pages
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, title))
            if first is None:
                first = [t for _, t in self.stack]
        return first if first is not None else [t for _, t in self.stack]


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())
