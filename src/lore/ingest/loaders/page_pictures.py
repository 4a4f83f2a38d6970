"""Image links of a Markdown or HTML page replaced by the picture's text (read by `LoadOptions.pictures`,
a file of the same ingest) or by their alt text, so no image syntax is indexed or quoted."""

from __future__ import annotations

import html
import re
from pathlib import Path

from lore.ingest.loaders.base import LoadOptions

# ![alt](ref), ![alt](ref "title"), ![alt](<ref with spaces>)
_MD_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+[\"'(][^)]*)?\s*\)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.I)


class PagePictures:
    """Reads the pictures of one page, at most `options.max_page_pictures` of them."""

    def __init__(self, page: Path, options: LoadOptions) -> None:
        self.page, self.reader, self.left = page, options.pictures, options.max_page_pictures

    def replacement(self, alt: str, ref: str) -> str:
        """ "[Picture: alt]" and the picture's text on the lines after it, or the alt text alone."""
        alt = " ".join(html.unescape(alt).split())
        read = None
        if self.reader is not None and self.left > 0 and ref:
            read = self.reader.text(self.page, html.unescape(ref))
            self.left -= read is not None
        return alt if read is None else f"\n{picture_label(alt)}\n{read}\n"


def with_pictures(text: str, page: Path, options: LoadOptions) -> str:
    """Markdown `text` with each `![alt](ref)` and `<img src alt>` replaced (see `PagePictures`)."""
    pictures = PagePictures(page, options)
    text = _MD_IMAGE.sub(lambda m: pictures.replacement(m.group(1), m.group(2) or m.group(3)), text)
    return _HTML_IMAGE.sub(
        lambda m: pictures.replacement(html_attr(m.group(0), "alt"), html_attr(m.group(0), "src")), text
    )


def picture_label(alt: str) -> str:
    """The line that opens a picture's text inside its page."""
    return f"[Picture: {alt}]" if alt else "[Picture]"


def html_attr(tag: str, name: str) -> str:
    """An attribute's raw value in one HTML tag's source ("" when absent)."""
    found = re.search(rf"""\b{name}\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", tag, re.I)
    return next((g for g in found.groups() if g is not None), "") if found else ""
