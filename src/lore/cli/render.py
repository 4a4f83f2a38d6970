"""Small text renderings shared by CLI commands."""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from lore.errors import LoreError

err = Console(stderr=True)


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
