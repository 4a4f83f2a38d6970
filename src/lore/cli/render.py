"""Small text renderings shared by CLI commands."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table
from rich.text import Text

from lore.errors import LoreError, NotFoundError

err = Console(stderr=True)
console = Console()


class FileLine(Protocol):
    """One file's line in an ingest or build report."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def documents(self) -> int: ...
    @property
    def chunks(self) -> int: ...
    @property
    def ocr_pages(self) -> int: ...
    @property
    def error(self) -> str | None: ...
    @property
    def note(self) -> str | None: ...


class Report(Protocol):
    """Per-file outcomes (the engine's `IngestReport` or the CLI's `Outcome`)."""

    @property
    def files(self) -> Sequence[FileLine]: ...
    @property
    def chunks(self) -> int: ...
    def count(self, status: str) -> int: ...


def fail(exc: LoreError) -> NoReturn:
    """Print a Lore error in red on stderr and exit with code 2 (bad input or state)."""
    # soft_wrap: a long path or message stays on one line (copyable); escape: brackets in it are text.
    err.print(f"[bold red]error:[/] {escape(_with_hint(exc))}", soft_wrap=True)
    raise typer.Exit(2)


_KB_NOT_FOUND = re.compile(r"knowledge base '(?P<name>[^']*)' not found")


def _with_hint(exc: LoreError) -> str:
    """The error, with a local KB name close to a mistyped one offered instead of "create it"."""
    found = _KB_NOT_FOUND.match(str(exc)) if isinstance(exc, NotFoundError) else None
    if found is None:
        return str(exc)
    try:
        from lore.catalog import Catalog
        from lore.config import load_settings

        settings = load_settings()
        names = [k.name for k in Catalog(settings.resolved_catalog_url, settings.catalog).list_kbs()]
    except LoreError:
        return str(exc)
    hint = did_you_mean(found["name"], names)
    return f"knowledge base {found['name']!r} not found; {hint}" if hint else str(exc)


def did_you_mean(name: str, names: list[str]) -> str | None:
    """ "did you mean 'handbook'?" for the names closest to `name`, or None when none is close."""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if not close:
        close = [n for n in names if n.casefold() == name.casefold()]
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None


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


def source_quote(citation: dict[str, Any], limit: int = 200) -> Text:
    """What a source says for the answer: its quote with the cited sentence in bold, on one line; the
    passage's start when the citation has no quote (an older server)."""
    quote, span = citation.get("quote") or "", citation.get("quote_span")
    if not quote:
        return Text((citation.get("text") or "")[:limit].replace("\n", " "))
    text = Text(quote.replace("\n", " "))
    if span and 0 <= span[0] <= span[1] <= len(quote):
        text.stylize("bold", span[0], span[1])
    return text


def print_report(report: Report) -> None:
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
