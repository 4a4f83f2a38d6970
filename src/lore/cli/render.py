"""Small text renderings shared by CLI commands."""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from lore.errors import LoreError
from lore.ingest.pipeline import IngestReport

err = Console(stderr=True)
console = Console()


def fail(exc: LoreError) -> NoReturn:
    """Print a Lore error in red on stderr and exit with code 2 (bad input or state)."""
    # soft_wrap: a long path or message stays on one line (copyable); escape: brackets in it are text.
    err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
    raise typer.Exit(2)


def split_list(value: str | None) -> list[str] | None:
    """'a, b,c' -> ['a', 'b', 'c']; None stays None (the option was not given)."""
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def where(place: dict[str, Any]) -> str:
    """'file p.2 Sheet!5 Heading > Sub' for a hit or citation dict."""
    parts = [place["file"]]
    if place.get("page"):
        parts.append(f"p.{place['page']}")
    if place.get("slide"):
        parts.append(f"slide {place['slide']}")
    if place.get("sheet"):
        parts.append(f"{place['sheet']}!{place['row']}")
    if place.get("heading_path"):
        parts.append(" > ".join(place["heading_path"]))
    return " ".join(parts)


def print_report(report: IngestReport) -> None:
    """Per-file table of status, documents, chunks and errors, then a summary line."""
    table = Table("status", "docs", "chunks", "OCR pages", "reason")
    table.columns.insert(0, Column("file", overflow="fold"))
    colour = {"ingested": "green", "skipped": "blue"}
    for f in report.files:
        table.add_row(
            f.name,
            f"[{colour.get(f.status, 'red')}]{f.status}[/]",
            str(f.documents),
            str(f.chunks),
            str(f.ocr_pages or ""),
            f.error or f.note or "",
        )
    console.print(table)
    summary = ", ".join(
        f"{report.count(s)} {s}"
        for s in ("ingested", "skipped", "failed", "unsupported", "empty", "too_large")
        if report.count(s)
    )
    console.print(f"{len(report.files)} files: {summary}; {report.chunks} chunks")
