"""CSV, TSV and XLSX loaders: one `table_row` section per data row, each carrying its header.

How tables are found in a sheet (checked against docling_xlsx_01.xlsx, which has stacked and
side-by-side tables and a two-row header):

* Blocks: the sheet is cut recursively at fully blank rows and then fully blank columns (an
  XY-cut), so tables separated by a gap, above/below or side by side, become separate blocks.
* Header: the first row of a block. If that row has gaps, the next row is all text and numbers
  follow below, the next row is another header level (up to 3); levels join per column.
* A block below a gap with the same columns as the block above continues that table (a spacer
  row) unless its first row looks like a header: all text, with numbers in a later row.
* Any other one-row block (a title or a note) becomes a plain text section.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.base import LoadOptions
from lore.ingest.loaders.encoding import read_text
from lore.schema import LoadedDocument, Section

Grid = list[list[str]]
Box = tuple[int, int, int, int]  # rows [r0, r1), columns [c0, c1)
MergedCell = tuple[object | None, str]  # (identity of the possibly merged cell, its text)

_NUMBER = re.compile(r"[-+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?%?")
_MAX_HEADER_ROWS = 3


def load_csv(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """A delimited text file as one sheet named after the file stem."""
    text, encoding = read_text(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else _sniff_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    grid = [[cell.strip() for cell in row] for row in reader]
    sections = table_sections(grid, path.stem)
    return [LoadedDocument(path=str(path), sections=sections, encoding=encoding)]


def load_xlsx(path: Path, options: LoadOptions) -> list[LoadedDocument]:
    """Every worksheet of a workbook (cached formula values, not formulas); empty sheets skipped."""
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, OSError, KeyError, ValueError) as exc:
        # openpyxl's messages name the file's full path: the reason says what is wrong in words.
        raise LoadError(str(path), f"not a valid Excel workbook ({_xlsx_problem(exc)})") from exc
    sections: list[Section] = []
    try:
        for ws in wb.worksheets:
            if not hasattr(ws, "iter_rows"):  # chartsheets hold no cells
                continue
            ws.reset_dimensions()  # some writers store a wrong used range; read what is there
            grid = [[format_cell(v) for v in row] for row in ws.iter_rows(values_only=True)]
            sections.extend(table_sections(grid, ws.title))
    finally:
        wb.close()
    if not sections:
        raise LoadError(str(path), "workbook has no data (every sheet is empty)", LoadErrorKind.EMPTY)
    return [LoadedDocument(path=str(path), sections=sections)]


def _xlsx_problem(exc: Exception) -> str:
    if isinstance(exc, zipfile.BadZipFile):
        return "damaged, or not a ZIP package"
    if isinstance(exc, KeyError):
        return "a part of the workbook is missing"
    if isinstance(exc, ValueError):
        return "a part of the workbook holds invalid XML or values"
    return "damaged or unreadable"


def table_sections(grid: Grid, sheet: str) -> list[Section]:
    """Sections for every table found in one sheet's grid of cell texts."""
    width = max((len(row) for row in grid), default=0)
    grid = [row + [""] * (width - len(row)) for row in grid]
    sections: list[Section] = []
    headers: dict[tuple[int, int], list[str]] = {}  # column span -> header names of the last table
    for r0, r1, c0, c1 in _blocks(grid, (0, len(grid), 0, width)):
        rows = [grid[r][c0:c1] for r in range(r0, r1)]
        names = headers.get((c0, c1))
        if names is None and len(rows) == 1:
            text = " | ".join(cell for cell in rows[0] if cell)
            sections.append(Section(text=text, sheet=sheet, row=r0 + 1))
            continue
        if names is None or _looks_like_header(rows):
            n_header = _header_rows(rows)
            names = _header_names(rows[:n_header], c0)
            headers[(c0, c1)] = names
        else:
            n_header = 0
        for offset, cells in enumerate(rows[n_header:], start=r0 + n_header + 1):
            pairs = zip(names, cells, strict=False)  # a short row has fewer cells
            text = "; ".join(f"{name}: {cell}" for name, cell in pairs if cell)
            sections.append(
                Section(text=text, sheet=sheet, row=offset, kind="table_row", header=" | ".join(names))
            )
    return sections


def merged_table_rows(rows: list[list[MergedCell]]) -> tuple[str, list[tuple[int, str]]]:
    """Header line and (row index, "name: value; ...") per data row of a Word/PowerPoint/HTML table.

    Cells spanning several columns repeat the same key there and are read once. The first row is
    the header; if it has a spanning cell (a group label), the second row is a header level too.
    """
    width = max(len(r) for r in rows)
    rows = [r + [(None, "")] * (width - len(r)) for r in rows]
    n_header = 2 if len(rows) > 2 and _has_span(rows[0]) else 1
    names = []
    for col in range(width):
        parts: list[str] = []
        prev_key: object | None = None
        for key, text in (r[col] for r in rows[:n_header]):
            if text and (key is None or key is not prev_key):
                parts.append(text)
            prev_key = key
        names.append(" ".join(parts) or f"col {col + 1}")
    # Keys of header cells per column: a data cell that is a header cell spanning down is skipped.
    header_keys = [[r[col][0] for r in rows[:n_header] if r[col][0] is not None] for col in range(width)]
    data: list[tuple[int, str]] = []
    for index, row in enumerate(rows[n_header:], start=n_header):
        pairs: list[str] = []
        col = 0
        while col < width:
            key, text = row[col]
            span = 1
            while col + span < width and key is not None and row[col + span][0] is key:
                span += 1
            if text and not any(key is k for k in header_keys[col]):
                pairs.append(f"{' / '.join(dict.fromkeys(names[col : col + span]))}: {text}")
            col += span
        if pairs:
            data.append((index, "; ".join(pairs)))
    return " | ".join(dict.fromkeys(names)), data


def _has_span(row: list[MergedCell]) -> bool:
    return any(a[0] is not None and a[0] is b[0] and a[1] for a, b in itertools.pairwise(row))


def _blocks(grid: Grid, box: Box) -> list[Box]:
    """Cut `box` at blank rows, then blank columns, until no cut is left; top-left order."""
    done: list[Box] = []
    todo = [box]
    while todo:
        r0, r1, c0, c1 = todo.pop()
        row_runs = _runs(r for r in range(r0, r1) if any(grid[r][c0:c1]))
        if len(row_runs) > 1:
            todo.extend((a, b, c0, c1) for a, b in row_runs)
            continue
        if not row_runs:
            continue
        r0, r1 = row_runs[0]
        col_runs = _runs(c for c in range(c0, c1) if any(grid[r][c] for r in range(r0, r1)))
        if len(col_runs) > 1:
            todo.extend((r0, r1, a, b) for a, b in col_runs)
        else:
            done.append((r0, r1, *col_runs[0]))
    return sorted(done)


def _runs(indexes: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive runs of indexes as half-open (start, end) pairs."""
    runs: list[tuple[int, int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _header_rows(rows: Grid) -> int:
    n = 1
    while (
        n < min(_MAX_HEADER_ROWS, len(rows) - 1)
        and not all(rows[n - 1])
        and not any(_NUMBER.fullmatch(c) for c in rows[n])
        and any(_NUMBER.fullmatch(c) for row in rows[n + 1 :] for c in row)
    ):
        n += 1
    return n


def _header_names(header_rows: Grid, c0: int) -> list[str]:
    names = []
    for col, parts in enumerate(zip(*header_rows, strict=False), start=c0 + 1):
        names.append(" ".join(p for p in parts if p) or f"col {col}")
    return names


def _looks_like_header(rows: Grid) -> bool:
    first_is_text = not any(_NUMBER.fullmatch(c) for c in rows[0])
    return first_is_text and any(_NUMBER.fullmatch(c) for row in rows[1:] for c in row)


def _sniff_delimiter(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "," in first:
        return ","
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=";\t|").delimiter
    except csv.Error:
        return ","


def format_cell(value: object) -> str:
    """A cell value as text: whole floats without ".0", dates in ISO form, booleans as TRUE/FALSE."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value).strip()
