"""PowerPoint (.pptx) loader: one section per slide plus one `table_row` section per table row."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from lore.errors import LoadError
from lore.ingest.loaders import ocr
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.table import MergedCell, merged_table_rows
from lore.schema import LoadedDocument, Section

_ROW_TOLERANCE_EMU = 228600  # a quarter inch


def load_pptx(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Slide text from every shape (groups and placeholders included), the title as heading, notes last.

    Pictures are read by OCR (with `options.ocr`); slides with picture text are listed in `ocr_pages`.
    """
    import pptx
    from pptx.exc import PackageNotFoundError

    try:
        presentation = pptx.Presentation(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise LoadError(str(path), f"not a valid .pptx (corrupt or not a zip package: {exc})") from exc
    sections: list[Section] = []
    loaded = LoadedDocument(
        path=str(path), sections=sections, title=(presentation.core_properties.title or "").strip() or None
    )
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = _clean(title_shape.text_frame.text) if title_shape is not None else ""
        heading = [title] if title else []
        texts: list[str] = [title] if title else []
        tables: list[Section] = []
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            _collect(shape, texts, tables, number, heading)
        if options.ocr:
            pictures = [t for t in (_picture_text(s, loaded, number) for s in _pictures(slide.shapes)) if t]
            texts.extend(pictures)
            if pictures:
                loaded.ocr_pages.append(number)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                texts.append(f"Notes: {notes}")
        if texts:
            sections.append(Section(text="\n".join(texts), slide=number, heading_path=heading))
        sections.extend(tables)
    return [loaded]


def _pictures(shapes: Any) -> list[Any]:
    """Picture shapes in reading order, inside groups too."""
    from pptx.shapes.group import GroupShape
    from pptx.shapes.picture import Picture

    found: list[Any] = []
    for shape in _reading_order(shapes):
        if isinstance(shape, GroupShape):
            found.extend(_pictures(shape.shapes))
        elif isinstance(shape, Picture):
            found.append(shape)
    return found


def _picture_text(picture: Any, loaded: LoadedDocument, slide: int) -> str:
    try:
        blob = picture.image.blob
    except (AttributeError, KeyError, ValueError):  # linked, not embedded
        return ""
    return ocr.ocr_picture(blob, loaded.warnings, f"slide {slide}")


def _collect(shape: Any, texts: list[str], tables: list[Section], slide: int, heading: list[str]) -> None:
    """Add a shape's text to `texts` (recursing into groups) and its table rows to `tables`."""
    from pptx.shapes.group import GroupShape

    if isinstance(shape, GroupShape):
        for child in _reading_order(shape.shapes):
            _collect(child, texts, tables, slide, heading)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        tables.extend(_table_sections(shape.table, slide, heading))
        return
    if getattr(shape, "has_chart", False) and shape.has_chart:
        chart = shape.chart
        if chart.has_title and chart.chart_title.has_text_frame:
            title = _clean(chart.chart_title.text_frame.text)
            if title:
                texts.append(f"Chart: {title}")
        return
    if shape.has_text_frame:
        text = _clean(shape.text_frame.text)
        if text:
            texts.append(text)


def _table_sections(table: Any, slide: int, heading: list[str]) -> list[Section]:
    grid = _table_grid(table)
    grid = [row for row in grid if any(text for _, text in row)]
    if not grid:
        return []
    if len(grid) == 1:
        text = " | ".join(dict.fromkeys(text for _, text in grid[0] if text))
        return [Section(text=text, slide=slide, heading_path=list(heading), kind="table")]
    header, rows = merged_table_rows(grid)
    return [
        Section(text=text, slide=slide, heading_path=list(heading), kind="table_row", header=header)
        for _, text in rows
    ]


def _table_grid(table: Any) -> list[list[MergedCell]]:
    """(key, text) per grid position; every position of a merged range carries its origin's key."""
    n_rows, n_cols = len(table.rows), len(table.columns)
    grid: list[list[MergedCell]] = [[(None, "")] * n_cols for _ in range(n_rows)]
    for r in range(n_rows):
        for c in range(n_cols):
            cell = table.cell(r, c)
            if cell.is_spanned:
                continue  # filled from its merge origin
            entry: MergedCell = (object(), _clean(cell.text))
            height = cell.span_height if cell.is_merge_origin else 1
            width = cell.span_width if cell.is_merge_origin else 1
            for dr in range(height):
                for dc in range(width):
                    if r + dr < n_rows and c + dc < n_cols:
                        grid[r + dr][c + dc] = entry
    return grid


def _reading_order(shapes: Any) -> list[Any]:
    """Shapes in rows (tops within a quarter inch) read left to right; unplaced shapes last."""
    placed = sorted((s for s in shapes if s.top is not None and s.left is not None), key=lambda s: s.top)
    rows: list[list[Any]] = []
    for shape in placed:
        if rows and shape.top - rows[-1][0].top <= _ROW_TOLERANCE_EMU:
            rows[-1].append(shape)
        else:
            rows.append([shape])
    ordered = [s for row in rows for s in sorted(row, key=lambda s: s.left)]
    return ordered + [s for s in shapes if s.top is None or s.left is None]


def _clean(text: str) -> str:
    """Strip each line, drop empty ones; PowerPoint uses vertical tab for soft line breaks."""
    lines = (line.strip() for line in text.replace("\v", "\n").replace("\xa0", " ").splitlines())
    return "\n".join(line for line in lines if line)
