"""OCR of rendered PDF pages, page regions and pictures with RapidOCR (offline weights, loaded once per
process)."""

from __future__ import annotations

import logging
import statistics
import threading
from typing import Any

import numpy as np
import pymupdf
from pymupdf import mupdf

# 200 DPI reads 9-pt scans correctly (150 DPI garbled lines of the medical-report fixture).
OCR_DPI = 200
# Safety cap for huge pages (RapidOCR itself shrinks input to 2000 px; rendering a bit above
# that and letting it downscale read the journal fixture better than rendering at 2000).
MAX_SIDE_PX = 3000

# Pictures smaller than this on either side are icons and bullets, not text worth OCR.
MIN_IMAGE_SIDE_PX = 24
MAX_IMAGE_PIXELS = 80_000_000  # a decoded picture larger than this is refused, not rendered

Box = tuple[float, float, float, float, str]  # x0, y0, x1, y1, text

_engine: Any = None
_engine_lock = threading.Lock()


def get_engine() -> Any:
    """The shared RapidOCR engine, created on first use (model loading takes a while)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            from rapidocr import RapidOCR

            _engine = RapidOCR(params={"Global.log_level": "error"})
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
        return _engine


def ocr_region(page: pymupdf.Page, clip: pymupdf.Rect | None = None) -> str:
    """Render `page` (or the `clip` part of it) and return the recognised text in reading order."""
    rect = clip if clip is not None else page.rect
    zoom = min(OCR_DPI / 72, MAX_SIDE_PX / max(rect.width, rect.height, 1.0))
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, colorspace=pymupdf.csRGB, alpha=False)  # type: ignore[no-untyped-call]
    if pix.width < 8 or pix.height < 8:
        return ""
    rgb = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, 3)
    return ocr_image(np.ascontiguousarray(rgb[:, :, ::-1]))  # RapidOCR takes arrays as BGR


class ImageTooLarge(ValueError):
    """An image whose header states more pixels than may be decoded."""


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) as the image's header states them, nothing decoded (a 30000x30000 PNG of a few
    hundred bytes would take 900 MB and more once decoded). ValueError when MuPDF cannot read it."""
    try:
        image = mupdf.fz_new_image_from_buffer(mupdf.fz_new_buffer_from_copied_data(data))
    except mupdf.FzErrorLimit as exc:  # MuPDF's own cap: the decoded size would overflow
        size = _png_size(data)
        shown = f"{size[0]}x{size[1]} pixels" if size else "dimensions over the decoder's limit"
        raise _too_large(shown) from exc
    except Exception as exc:
        raise ValueError("not a decodable image") from exc
    return int(image.w()), int(image.h())


def _too_large(shown: str) -> ImageTooLarge:
    return ImageTooLarge(f"image of {shown} is over the {MAX_IMAGE_PIXELS:,}-pixel limit")


def _check_pixels(width: int, height: int) -> None:
    if width * height > MAX_IMAGE_PIXELS:
        raise _too_large(f"{width}x{height} pixels")


def _as_png(data: bytes) -> bytes:
    """An image MuPDF cannot read (WebP, …) re-encoded as PNG by Pillow, its size checked from the header
    first; ValueError when Pillow cannot read it either."""
    import io
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # the pixel limit is checked below, from the header
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
        with image:
            _check_pixels(*image.size)
            out = io.BytesIO()
            image.convert("RGB").save(out, format="PNG")
    except Image.DecompressionBombError as exc:
        raise _too_large("dimensions over the decoder's limit") from exc
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError("not a decodable image") from exc
    return out.getvalue()


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def ocr_image_bytes(data: bytes, min_side: int = MIN_IMAGE_SIDE_PX) -> str:
    """Text of an encoded image (PNG, JPEG, GIF, BMP, TIFF through MuPDF; WebP and others MuPDF cannot read
    re-encoded by Pillow); "" for icons smaller than `min_side`.

    Raises ValueError for bytes that neither can decode (e.g. EMF/WMF drawings), and `ImageTooLarge` (from
    the header, before decoding) for more than `MAX_IMAGE_PIXELS` pixels.
    """
    try:
        width, height = image_size(data)
    except ImageTooLarge:
        raise
    except ValueError:
        data = _as_png(data)
        width, height = image_size(data)
    if min(width, height) < min_side:
        return ""
    _check_pixels(width, height)
    try:
        pix = pymupdf.Pixmap(data)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ValueError("not a decodable image") from exc
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)  # type: ignore[no-untyped-call]
    if pix.colorspace is None or pix.colorspace.n != 3:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)  # type: ignore[no-untyped-call]
    rgb = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]
    return ocr_image(np.ascontiguousarray(rgb[:, :, ::-1]))


def ocr_picture(data: bytes, warnings: list[str], where: str) -> str:
    """Text of a picture inside a document; a picture that cannot be read adds a warning instead."""
    try:
        return ocr_image_bytes(data)
    except Exception as exc:  # noqa: BLE001 - one bad picture must not lose the document
        warnings.append(f"{where}: picture not read ({exc})")
        return ""


def ocr_image(bgr: np.ndarray) -> str:
    """Text lines of a BGR image, joined in reading order (columns before rows)."""
    result = get_engine()(bgr)
    if result.boxes is None or not result.txts:
        return ""
    boxes: list[Box] = []
    for quad, text in zip(result.boxes, result.txts, strict=True):
        xs, ys = quad[:, 0], quad[:, 1]
        if text.strip():
            boxes.append((float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()), text.strip()))
    return "\n".join(_lines(reading_order(boxes)))


def reading_order(boxes: list[Box], depth: int = 0) -> list[Box]:
    """Order text boxes: split into text columns where a clear gutter exists, else top to bottom.

    A recursive XY-cut that only takes vertical cuts between real text columns (both sides hold
    several lines that fill their width), so table rows keep reading left to right.
    """
    if len(boxes) < 2 or depth > 40:
        return _line_sort(boxes)
    column_cut = _column_cut(boxes)
    if column_cut is not None:
        left = [b for b in boxes if b[2] <= column_cut]
        right = [b for b in boxes if b[2] > column_cut]
        return reading_order(left, depth + 1) + reading_order(right, depth + 1)
    strips = _horizontal_strips(boxes)
    if len(strips) < 2:
        return _line_sort(boxes)
    return [b for strip in strips for b in reading_order(strip, depth + 1)]


def _column_cut(boxes: list[Box]) -> float | None:
    """An x position no box crosses, with a text column on each side, or None."""
    height = statistics.median(b[3] - b[1] for b in boxes)
    items = sorted(boxes, key=lambda b: b[0])
    reach = items[0][2]
    best: tuple[float, float] | None = None  # (gap, cut x)
    for i in range(1, len(items)):
        gap = items[i][0] - reach
        wider = best is None or gap > best[0]
        if gap > 0.5 * height and wider and _is_column(items[:i]) and _is_column(items[i:]):
            best = (gap, reach)
        reach = max(reach, items[i][2])
    return None if best is None else best[1]


def _is_column(boxes: list[Box]) -> bool:
    if len(boxes) < 3:
        return False
    span = max(b[2] for b in boxes) - min(b[0] for b in boxes)
    fill = statistics.mean(b[2] - b[0] for b in boxes) / max(span, 1.0)
    return fill >= 0.6


def _horizontal_strips(boxes: list[Box]) -> list[list[Box]]:
    """Split at the widest vertical gaps (those at least half the widest) between boxes."""
    items = sorted(boxes, key=lambda b: b[1])
    gaps: list[tuple[int, float]] = []
    reach = items[0][3]
    for i in range(1, len(items)):
        if items[i][1] > reach:
            gaps.append((i, items[i][1] - reach))
        reach = max(reach, items[i][3])
    if not gaps:
        return [items]
    widest = max(g for _, g in gaps)
    cuts = [i for i, g in gaps if g >= widest / 2]
    return [items[a:b] for a, b in zip([0, *cuts], [*cuts, len(items)], strict=True)]


def _line_sort(boxes: list[Box]) -> list[Box]:
    """Top to bottom; boxes whose vertical centres are close form one line, read left to right."""
    ordered: list[Box] = []
    line: list[Box] = []
    for box in sorted(boxes, key=lambda b: (b[1] + b[3]) / 2):
        if line:
            centre = statistics.mean((b[1] + b[3]) / 2 for b in line)
            half = statistics.mean(b[3] - b[1] for b in line) / 2
            if abs((box[1] + box[3]) / 2 - centre) > half:
                ordered.extend(sorted(line, key=lambda b: b[0]))
                line = []
        line.append(box)
    ordered.extend(sorted(line, key=lambda b: b[0]))
    return ordered


def _lines(boxes: list[Box]) -> list[str]:
    """Join boxes that share a line (vertical overlap) with a space; one output line per text line."""
    lines: list[str] = []
    prev: Box | None = None
    for box in boxes:
        if prev is not None and box[0] > prev[0] and _overlap_y(box, prev) > 0.5 * min(_h(box), _h(prev)):
            lines[-1] += " " + box[4]
        else:
            lines.append(box[4])
        prev = box
    return lines


def _overlap_y(a: Box, b: Box) -> float:
    return min(a[3], b[3]) - max(a[1], b[1])


def _h(box: Box) -> float:
    return box[3] - box[1]
