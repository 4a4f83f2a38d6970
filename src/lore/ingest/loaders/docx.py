"""Word (.docx) loader: paragraphs, text boxes and tables in body order, headings from styles or outline
levels, then page headers and footers (once each, however many sections repeat them)."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lore.errors import LoadError
from lore.ingest.loaders import ocr
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.table import MergedCell, merged_table_rows
from lore.schema import LoadedDocument, Section

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
_W_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
_R_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def load_docx(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Text sections grouped under their heading path; each table row as a `table_row` section.

    Text boxes and pictures (OCR, with `options.ocr`) are read where they stand; page headers and footers
    come last as sections under "Header" / "Footer".
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise LoadError(str(path), f"not a valid .docx (corrupt or not a zip package: {exc})") from exc
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # open headings (level, title)
    lines: list[str] = []
    title = (document.core_properties.title or "").strip() or None
    loaded = LoadedDocument(path=str(path), sections=sections, title=title)

    def path_now() -> list[str]:
        return [t for _, t in stack]

    def flush() -> None:
        if lines:
            sections.append(Section(text="\n".join(lines), heading_path=path_now()))
            lines.clear()

    for block in _body_blocks(document.element.body, document):
        if isinstance(block, Table):
            flush()
            sections.extend(_table_sections(block, path_now()))
            continue
        text = block.text.strip()
        style = (block.style.name or "").lower() if block.style is not None else ""
        if options.ocr:
            lines.extend(_picture_texts(block, document, loaded))
        boxes = _text_box_lines(block._p, document)  # after the paragraph's own text
        if not text or style.startswith("toc"):  # table-of-contents entries repeat the headings
            lines.extend(boxes)
            continue
        level = _heading_level(block)
        if level is None:
            lines.append(f"- {text}" if "list" in style else text)
            lines.extend(boxes)
            continue
        flush()
        if level == 0 and loaded.title is None:
            loaded.title = text
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        lines.extend(boxes)
    flush()
    sections.extend(_header_footer_sections(document))
    return [loaded]


def _header_footer_sections(document: Any) -> list[Section]:
    """Text of the headers and footers Word shows, de-duplicated across document sections (pictures not
    read: there they are mostly logos)."""
    from docx.table import Table

    even = bool(document.settings.odd_and_even_pages_header_footer)
    seen: set[str] = set()
    found: list[Section] = []
    for part_name, label in (("header", "Header"), ("footer", "Footer")):
        for doc_section in document.sections:
            kinds = [part_name]
            if doc_section.different_first_page_header_footer:
                kinds.append(f"first_page_{part_name}")
            if even:
                kinds.append(f"even_page_{part_name}")
            for kind in kinds:
                part = getattr(doc_section, kind)
                if part.is_linked_to_previous:
                    continue  # no own definition: shows the previous section's (or none)
                for block in _body_blocks(part._element, part):
                    if isinstance(block, Table):
                        rows = _table_sections(block, [label])
                    else:
                        lines = [_clean(block.text), *_text_box_lines(block._p, part)]
                        rows = [Section(text="\n".join(t for t in lines if t), heading_path=[label])]
                    for row in rows:  # a page number alone ("2", "- 2 -") is no content
                        if any(ch.isalpha() for ch in row.text) and row.text not in seen:
                            seen.add(row.text)
                            found.append(row)
    return found


def _text_box_lines(element: Any, parent: Any) -> list[str]:
    """Paragraph texts inside the text boxes anchored in `element` (the VML fallback copy skipped)."""
    from docx.text.paragraph import Paragraph

    lines = []
    for content in element.iter(f"{_W_NS}txbxContent"):
        if any(a.tag == _MC_FALLBACK for a in content.iterancestors()):
            continue
        for child in content.iterchildren(f"{_W_NS}p"):
            text = _clean(Paragraph(child, parent).text)
            if text:
                lines.append(text)
    return lines


def _clean(text: str) -> str:
    """Tabs (header columns) as spaces, outer blanks trimmed."""
    return " ".join(part.strip() for part in text.split("\t") if part.strip())


def _picture_texts(paragraph: Any, document: Any, loaded: LoadedDocument) -> list[str]:
    """OCR text of the pictures in a paragraph; each picture with text is counted in `loaded.ocr_pages`."""
    texts = []
    for blip in paragraph._p.iter(_BLIP):
        part = document.part.related_parts.get(blip.get(_R_EMBED, ""))
        if part is None or not hasattr(part, "blob"):
            continue
        number = len(loaded.ocr_pages) + 1
        text = ocr.ocr_picture(part.blob, loaded.warnings, f"picture {number}")
        if text:
            loaded.ocr_pages.append(number)
            texts.append(text)
    return texts


def _body_blocks(parent: Any, document: Any) -> Iterator[Any]:
    """Paragraphs and tables in body order, including those inside content controls (w:sdt)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for child in parent.iterchildren():
        if child.tag == f"{_W_NS}p":
            yield Paragraph(child, document)
        elif child.tag == f"{_W_NS}tbl":
            yield Table(child, document)
        elif child.tag == f"{_W_NS}sdt":
            content = child.find(f"{_W_NS}sdtContent")
            if content is not None:
                yield from _body_blocks(content, document)


def _heading_level(paragraph: Any) -> int | None:
    """0 for a Title, 1-9 for headings (style name or outline level), None for body text."""
    outline = _outline_level(paragraph._p.pPr)
    if outline is not None:
        return outline
    style = paragraph.style
    while style is not None:
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        outline = _outline_level(style.element.pPr)
        if outline is not None:
            return outline
        style = style.base_style
    return None


def _outline_level(ppr: Any) -> int | None:
    """Heading level from a `w:outlineLvl` in paragraph properties (9 means body text)."""
    if ppr is None:
        return None
    node = ppr.find(f"{_W_NS}outlineLvl")
    if node is None:
        return None
    value = int(node.get(f"{_W_NS}val", "9"))
    return value + 1 if value < 9 else None


def _table_sections(table: Any, heading_path: list[str]) -> list[Section]:
    """One `table_row` section per body row; a one-row table is a single `table` section."""
    grid = [row for row in (_row_cells(r) for r in table.rows) if any(text for _, text in row)]
    if len(grid) == 1:
        text = " | ".join(_unique_texts(grid[0]))
        return [Section(text=text, heading_path=list(heading_path), kind="table")]
    if not grid:
        return []
    header, rows = merged_table_rows(grid)
    return [
        Section(text=text, heading_path=list(heading_path), kind="table_row", header=header)
        for _, text in rows
    ]


def _row_cells(row: Any) -> list[MergedCell]:
    """(cell element, text) per layout-grid column; a spanned cell repeats, missing ones are None."""
    cells: list[MergedCell] = [(None, "")] * row.grid_cols_before
    for cell in row.cells:
        cells.append((cell._tc, _cell_text(cell)))
    return cells


def _cell_text(cell: Any) -> str:
    """A cell's paragraphs and the text of any nested tables, on one line."""
    parts = [p.text.strip() for p in cell.paragraphs]
    for inner in cell.tables:
        for row in inner.rows:
            parts.extend(_unique_texts(_row_cells(row)))
    return " ".join(p for p in parts if p)


def _unique_texts(row: list[MergedCell]) -> list[str]:
    seen: list[Any] = []
    texts = []
    for tc, text in row:
        if text and not any(tc is s for s in seen):
            texts.append(text)
        seen.append(tc)
    return texts
