"""Pictures in every common format are read, not refused: GIF, BMP and TIFF through MuPDF and OCR, WebP
re-encoded by Pillow first, and SVG drawings for the words they carry (never resolving entities)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders import load_file, supported_suffixes

WORDS = "Approved office supplies stapler"


def picture(path: Path) -> Path:
    image = Image.new("RGB", (900, 160), "white")
    ImageDraw.Draw(image).text((20, 50), WORDS, font=ImageFont.load_default(size=44), fill="black")
    image.save(path)
    return path


@pytest.mark.parametrize("suffix", [".gif", ".bmp", ".tiff", ".webp"])
def test_a_raster_picture_is_read_by_ocr(tmp_path: Path, suffix: str) -> None:
    assert suffix in supported_suffixes()
    (doc,) = load_file(picture(tmp_path / f"supplies{suffix}"))
    assert doc.sections[0].text.lower().split() == WORDS.lower().split()
    assert doc.ocr_pages == [1]


def test_a_webp_whose_header_is_over_the_pixel_limit_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.webp"
    Image.new("1", (9500, 9500)).save(path, lossless=True, quality=0, method=0)  # 90 M pixels in 34 bytes
    with pytest.raises(LoadError) as caught:
        load_file(path)
    assert caught.value.kind == LoadErrorKind.TOO_LARGE and "pixel limit" in caught.value.reason


def test_an_svg_is_read_for_its_title_and_text_and_no_entity_is_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET", encoding="utf-8")
    path = tmp_path / "chart.svg"
    path.write_text(
        f'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<svg xmlns="http://www.w3.org/2000/svg"><title>审批流程 Approval flow</title><rect/>'
        '<text x="1" y="2">Manager <tspan>approves</tspan></text><text>&x;报销上限 200 元</text></svg>',
        encoding="utf-8",
    )
    (doc,) = load_file(path)
    text = doc.sections[0].text
    assert text.splitlines()[:2] == ["审批流程 Approval flow", "Manager approves"]
    assert "报销上限 200 元" in text and "TOPSECRET" not in text


@pytest.mark.parametrize(
    ("body", "kind", "words"),
    [
        ('<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>', LoadErrorKind.NO_TEXT, "without text"),
        ("<svg><text>unclosed", LoadErrorKind.CORRUPT, "not a valid SVG"),
        ("<html><text>hi</text></html>", LoadErrorKind.CORRUPT, "not an SVG drawing"),
    ],
)
def test_an_svg_without_words_or_not_an_svg_gets_a_reason(
    tmp_path: Path, body: str, kind: LoadErrorKind, words: str
) -> None:
    path = tmp_path / "x.svg"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(LoadError) as caught:
        load_file(path)
    assert (
        caught.value.kind == kind
        and words in caught.value.reason
        and str(tmp_path) not in caught.value.reason
    )
