"""Excel 97-2003 (.xls) loader with xlrd: every sheet's grid through the same table finder as .xlsx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.table import format_cell, table_sections
from lore.schema import LoadedDocument, Section


def load_xls(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Cell values (dates as dates, numbers without ".0"); empty sheets skipped."""
    import xlrd

    try:
        book = xlrd.open_workbook(str(path), on_demand=True)
    except xlrd.XLRDError as exc:
        kind = LoadErrorKind.ENCRYPTED if "encrypted" in str(exc).lower() else LoadErrorKind.CORRUPT
        raise LoadError(str(path), f"not a readable .xls workbook ({exc})", kind) from exc
    except (OSError, ValueError, AssertionError, IndexError) as exc:  # xlrd's checks on broken files
        raise LoadError(str(path), "not a valid .xls workbook (damaged or unreadable)") from exc
    sections: list[Section] = []
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            grid = [[_cell(book, cell) for cell in sheet.row(r)] for r in range(sheet.nrows)]
            sections.extend(table_sections(grid, sheet.name))
            book.unload_sheet(index)
    finally:
        book.release_resources()
    if not sections:
        raise LoadError(str(path), "workbook has no data (every sheet is empty)", LoadErrorKind.EMPTY)
    return [LoadedDocument(path=str(path), sections=sections)]


def _cell(book: Any, cell: Any) -> str:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return format_cell(xlrd.xldate.xldate_as_datetime(cell.value, book.datemode))
        except (xlrd.xldate.XLDateError, OverflowError):
            return format_cell(cell.value)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return format_cell(bool(cell.value))
    if cell.ctype in (xlrd.XL_CELL_ERROR, xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return ""
    return format_cell(cell.value)
