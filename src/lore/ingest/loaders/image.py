"""Image files (PNG, JPEG, GIF, BMP, TIFF, WebP) read through OCR: one section with the recognised text."""

from __future__ import annotations

from pathlib import Path

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders import ocr
from lore.ingest.loaders.base import LoadOptions
from lore.schema import LoadedDocument, Section


def load_image(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """The picture's text in reading order; refused when OCR is off or finds nothing."""
    if not options.ocr:
        raise LoadError(str(path), "image file, text not read (OCR disabled)", LoadErrorKind.NO_TEXT)
    try:
        text = ocr.ocr_image_bytes(path.read_bytes(), min_side=1)
    except ocr.ImageTooLarge as exc:
        raise LoadError(str(path), str(exc), LoadErrorKind.TOO_LARGE) from exc
    except ValueError as exc:
        raise LoadError(str(path), f"not a readable image: {exc}") from exc
    if not text.strip():
        raise LoadError(str(path), "image file and OCR found no text", LoadErrorKind.NO_TEXT)
    return [LoadedDocument(path=str(path), sections=[Section(text=text)], ocr_pages=[1])]
