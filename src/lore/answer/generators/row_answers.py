"""Extractive answers made of table rows: a column of sibling rows, each named item's row, a comparison."""

from __future__ import annotations

from collections.abc import Sequence

from lore.answer.generators.base import Passage
from lore.answer.generators.candidates import Candidate
from lore.answer.qtypes import asks_comparison
from lore.answer.rows import (
    compared_cells,
    comparison_table,
    faq_cells,
    item_codes,
    names_code,
    names_its_row,
)
from lore.lexical import is_chinese

MAX_ROWS = 6


def faq_row(p: Passage) -> bool:
    chunk = p.hit.chunk
    return (chunk.source_type == "faq" and bool(chunk.answer)) or faq_cells(chunk.text) is not None


def table_row(p: Passage) -> bool:
    """A row of a data table (an FAQ sheet's rows each answer their own question)."""
    chunk = p.hit.chunk
    return chunk.source_type == "table_row" and faq_cells(chunk.text) is None


def data_row(c: Candidate, by_n: dict[int, Passage]) -> bool:
    """A table row read for its asked column."""
    return bool(c.out) and table_row(by_n[c.passage])


def sibling_rows(
    question: str, best: Candidate, cands: list[Candidate], by_n: dict[int, Passage]
) -> list[Candidate]:
    """When the lead is a table row read for a question naming no row, the same column of the other rows
    of its table among the passages (up to `MAX_ROWS`, in row order); else []."""

    def table(c: Candidate) -> tuple[str, str | None, tuple[str, ...]] | None:
        chunk = by_n[c.passage].hit.chunk
        if not data_row(c, by_n) or names_its_row(chunk.text, question):
            return None
        return (chunk.file_path, chunk.sheet, tuple(chunk.heading_path))

    key = table(best)
    if key is None:
        return []
    rows = {c.passage: c for c in reversed(cands) if table(c) == key}
    if len(rows) < 2:
        return []
    ordered = sorted(
        rows.values(),
        key=lambda c: (by_n[c.passage].hit.chunk.row or 0, by_n[c.passage].hit.chunk.chunk_index),
    )
    return ordered[:MAX_ROWS] if best in ordered[:MAX_ROWS] else [best, *ordered[: MAX_ROWS - 1]]


def comparison(question: str, passages: Sequence[Passage]) -> str:
    """For a comparison of items named by code ("Compare LF-200 and LF-500"), a Markdown table of the
    compared attributes from each item's first table row among the passages, a citation per cell; "" when
    an item has no such row."""
    codes = item_codes(question)
    if len(codes) < 2 or not asks_comparison(question):
        return ""
    rows: list[tuple[str, list[tuple[str, str]], int]] = []
    for code in codes:
        used = {n for *_, n in rows}
        row = next(
            (p for p in passages if table_row(p) and names_code(p.text, code) and p.n not in used), None
        )
        compared = compared_cells(row.text, question) if row is not None else None
        if row is None or compared is None or not compared[1]:
            return ""
        rows.append((compared[0] or code, compared[1], row.n))
    return comparison_table(rows, is_chinese(question))


def named_rows(question: str, cands: list[Candidate], by_n: dict[int, Passage]) -> list[Candidate]:
    """For a question naming several items by code ("LF-200和LF-500的载重分别是多少？"), the best-scoring
    table row read for each, in the question's order, when rows answer at least two of them; else []."""
    codes = item_codes(question)
    if len(codes) < 2:
        return []
    picked: list[Candidate] = []
    for code in codes:
        row = next(
            (
                c
                for c in cands  # best first
                if data_row(c, by_n) and names_code(by_n[c.passage].text, code) and c not in picked
            ),
            None,
        )
        if row is not None:
            picked.append(row)
    return picked if len(picked) > 1 else []
