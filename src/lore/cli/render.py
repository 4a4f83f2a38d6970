"""Small text renderings shared by CLI commands."""

from __future__ import annotations

from typing import Any


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
