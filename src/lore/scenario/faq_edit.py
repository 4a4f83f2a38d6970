"""Editing a scenario's `faq.csv` (the console's FAQ panel): add a row, change or disable one.

The file is rewritten whole as UTF-8 with every other record as it was (a cell a spreadsheet would run
as a formula gets a leading `'`, which reading removes); a revision (digest of the file)
read with the rows must still match, so one editor never silently overwrites another's change. The
knowledge base sees the change at the scenario's next build.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from lore.errors import ConflictError, LoreError, NotFoundError
from lore.scenario.config import Scenario
from lore.scenario.faq import COLUMNS, FaqEntry, escape_cell, faq_table, parse_faq

FIELDS = ("question", "answer", "source", "tenant", "dataset", "visibility", "roles", "disabled")


def revision(path: Path) -> str:
    """A digest of the file as it is now ("" when there is none yet)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""


def read_table(path: Path, scenario: Scenario) -> tuple[list[str], list[list[str]], list[FaqEntry]]:
    """`faq_table`, or an empty table with the two required columns when there is no file."""
    return faq_table(path, scenario) if path.is_file() else (["question", "answer"], [], [])


def entry_at(path: Path, scenario: Scenario, index: int) -> FaqEntry:
    """The record at `index` (404 if there is none)."""
    entries = read_table(path, scenario)[2]
    if not 0 <= index < len(entries):
        raise NotFoundError(f"FAQ row {index} not found")
    return entries[index]


def preview(path: Path, scenario: Scenario, index: int | None, values: dict[str, str]) -> FaqEntry:
    """The entry the record would become (nothing is written), as the file would read with it."""
    header, records, _ = read_table(path, scenario)
    header, records = _apply(header, records, index, values)
    entries = parse_faq(_csv(header, records), scenario, path)[2]
    return entries[len(records) - 1 if index is None else index]


def save(path: Path, scenario: Scenario, index: int | None, values: dict[str, str], seen: str) -> FaqEntry:
    """Write the record (`index` None: append one) if the file is still at revision `seen` (409 if not)."""
    if revision(path) != seen:
        raise ConflictError(
            f"{path.name} changed since it was read (revision {revision(path) or 'none'}): reload"
        )
    header, records, _ = read_table(path, scenario)
    if index is not None and not 0 <= index < len(records):
        raise NotFoundError(f"FAQ row {index} not found")
    header, records = _apply(header, records, index, values)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_text(_csv(header, records), encoding="utf-8")
    tmp.replace(path)
    return faq_table(path, scenario)[2][len(records) - 1 if index is None else index]


def _csv(header: list[str], records: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([escape_cell(cell) for cell in r] for r in records)  # no formula for a spreadsheet
    return out.getvalue()


def _apply(
    header: list[str], records: list[list[str]], index: int | None, values: dict[str, str]
) -> tuple[list[str], list[list[str]]]:
    """The table with `values` written into record `index` (or a new one); missing columns are added."""
    header, records = list(header), [list(r) for r in records]
    names = [COLUMNS.get(h.strip().lower()) for h in header]
    for name, value in values.items():
        if name not in FIELDS:
            raise LoreError(f"unknown FAQ column {name!r} (columns: {', '.join(FIELDS)})")
        if name not in names and value:
            width = len(header)
            header.append(name)
            names.append(name)
            records = [r + [""] if len(r) == width else r for r in records]
    record = [""] * len(header) if index is None else records[index]
    record += [""] * (len(header) - len(record))
    for name, value in values.items():
        if name in names:
            record[names.index(name)] = value
    if index is None:
        records.append(record)
    else:
        records[index] = record
    return header, records
