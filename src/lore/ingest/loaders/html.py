"""HTML loader (BeautifulSoup + lxml): text under h1-h6 headings, tables as `table_row` sections."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction, Tag
from bs4.element import NavigableString

from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.encoding import decode_bytes
from lore.ingest.loaders.page_pictures import PagePictures
from lore.ingest.loaders.table import MergedCell, merged_table_rows
from lore.schema import LoadedDocument, Section

_DROP = ["script", "style", "nav", "noscript", "template", "svg", "iframe", "object"]
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {
    "p", "div", "section", "article", "main", "aside", "header", "footer", "li", "ul", "ol", "dl", "dt",
    "dd", "blockquote", "pre", "figure", "figcaption", "form", "fieldset", "address", "hr", "details",
}  # fmt: skip
_SPACES = re.compile(r"\s+")
_SKIP_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def load_html(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Visible text split at headings; scripts, styles and navigation dropped."""
    data = path.read_bytes()
    declared = _META_CHARSET.search(data[:4096])
    text, encoding = decode_bytes(data, str(path), declared.group(1).decode("ascii") if declared else None)
    return [html_document(text, str(path), encoding, PagePictures(path, options))]


# `<img>` read (its picture's text, else its alt text): files read before are re-read.
load_html.version = "html2"  # type: ignore[attr-defined]


def html_document(
    text: str, path: str, encoding: str | None = None, pictures: PagePictures | None = None
) -> LoadedDocument:
    """An HTML text as a document: sections under its headings, tables as rows; with `pictures`, an
    `<img>` becomes its picture's text (a file of the same ingest) or its alt text."""
    soup = BeautifulSoup(text, "lxml")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for tag in soup(_DROP):
        tag.decompose()
    if soup.head is not None:
        soup.head.decompose()
    walker = _Walker(pictures)
    walker.walk(soup.body or soup)
    walker.flush()
    return LoadedDocument(path=path, sections=walker.sections, title=title or None, encoding=encoding)


class _Walker:
    """Collects text in document order, cutting a new section at every heading and table."""

    def __init__(self, pictures: PagePictures | None = None) -> None:
        self.pictures = pictures
        self.sections: list[Section] = []
        self.stack: list[tuple[int, str]] = []
        self.parts: list[str] = []

    def path(self) -> list[str]:
        return [t for _, t in self.stack if t]

    def flush(self) -> None:
        lines = (" ".join(line.split()) for line in "".join(self.parts).split("\n"))
        text = "\n".join(line for line in lines if line)
        if text:
            self.sections.append(Section(text=text, heading_path=self.path()))
        self.parts.clear()

    def walk(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, _SKIP_STRINGS):
                continue
            if isinstance(child, NavigableString):
                self.parts.append(_SPACES.sub(" ", str(child)))
            elif isinstance(child, Tag):
                self.tag(child)

    def tag(self, tag: Tag) -> None:
        name = tag.name
        if name in _HEADINGS:
            self.flush()
            level = _HEADINGS[name]
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, tag.get_text(" ", strip=True)))
        elif name == "table" and tag.find("table") is None:  # tables holding tables are layout
            self.flush()
            self.sections.extend(_table_sections(tag, self.path()))
        elif name == "br":
            self.parts.append("\n")
        elif name == "img" and self.pictures is not None:
            alt, src = tag.get("alt"), tag.get("src")
            shown = self.pictures.replacement(
                alt if isinstance(alt, str) else "", src if isinstance(src, str) else ""
            )
            self.parts.append(f" {shown} " if "\n" not in shown else shown)
        elif name == "pre":
            self.parts.append("\n" + tag.get_text() + "\n")
        else:
            block = name in _BLOCKS or name in {"table", "tr"}
            if block:
                self.parts.append("\n")
            self.walk(tag)
            if block:
                self.parts.append("\n")


def _table_sections(table: Tag, heading_path: list[str]) -> list[Section]:
    grid = [row for row in _table_grid(table) if any(text for _, text in row)]
    if not grid:
        return []
    if len(grid) == 1:
        text = " | ".join(dict.fromkeys(text for _, text in grid[0] if text))
        return [Section(text=text, heading_path=list(heading_path), kind="table")]
    header, rows = merged_table_rows(grid)
    return [
        Section(text=text, heading_path=list(heading_path), kind="table_row", header=header)
        for _, text in rows
    ]


def _table_grid(table: Tag) -> list[list[MergedCell]]:
    """Cells per grid position with colspan/rowspan expanded (spanned positions share a key)."""
    grid: list[list[MergedCell]] = []
    pending: dict[tuple[int, int], MergedCell] = {}  # positions covered by rowspans from above
    rows = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    for r, tr in enumerate(rows):
        row: list[MergedCell] = []
        for cell in tr.find_all(["td", "th"], recursive=False):
            while (r, len(row)) in pending:
                row.append(pending.pop((r, len(row))))
            entry: MergedCell = (object(), cell.get_text(" ", strip=True))
            colspan, rowspan = _span(cell, "colspan", 100), _span(cell, "rowspan", 1000)
            for dc in range(colspan):
                for dr in range(1, rowspan):
                    pending[(r + dr, len(row) + dc)] = entry
            row.extend([entry] * colspan)
        while (r, len(row)) in pending:
            row.append(pending.pop((r, len(row))))
        grid.append(row)
    return grid


def _span(cell: Any, attr: str, limit: int) -> int:
    try:
        return max(1, min(int(str(cell.get(attr, "1")).strip()), limit))
    except ValueError:
        return 1
