"""Image files (PNG, JPEG, GIF, BMP, TIFF, WebP) read through OCR: one section with the recognised text."""

from __future__ import annotations

import io
import warnings
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
        text = ocr.ocr_image_bytes(_decodable(path.read_bytes()), min_side=1)
    except ocr.ImageTooLarge as exc:
        raise LoadError(str(path), str(exc), LoadErrorKind.TOO_LARGE) from exc
    except ValueError as exc:
        raise LoadError(str(path), f"not a readable image: {exc}") from exc
    if not text.strip():
        raise LoadError(str(path), "image file and OCR found no text", LoadErrorKind.NO_TEXT)
    return [LoadedDocument(path=str(path), sections=[Section(text=text)], ocr_pages=[1])]


def _decodable(data: bytes) -> bytes:
    """`data` as it is when MuPDF reads it, else (WebP, …) re-encoded as PNG by Pillow, whose header check
    keeps the pixel limit before anything is decoded."""
    try:
        ocr.image_size(data)
        return data
    except ocr.ImageTooLarge:
        raise
    except ValueError:
        pass
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # the pixel limit is checked here, from the header
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
        with image:
            width, height = image.size
            if width * height > ocr.MAX_IMAGE_PIXELS:
                raise ocr.ImageTooLarge(
                    f"image of {width}x{height} pixels is over the {ocr.MAX_IMAGE_PIXELS:,}-pixel limit"
                )
            out = io.BytesIO()
            image.convert("RGB").save(out, format="PNG")
    except Image.DecompressionBombError as exc:
        raise ocr.ImageTooLarge(f"image over the {ocr.MAX_IMAGE_PIXELS:,}-pixel limit") from exc
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError("not a decodable image") from exc
    return out.getvalue()
