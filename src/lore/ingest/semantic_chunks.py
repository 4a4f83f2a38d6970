"""The semantic chunker (`[chunk] strategy = "semantic"`): prose is cut where the meaning moves.

A section's text becomes units — sentences, a fenced code block or a Markdown table whole, a list item
whole — each embedded. Where the distance between a unit and the next one is above the `percentile`-th
of the section's distances there is a breakpoint. Pieces run from breakpoint to breakpoint, but never
below `min_units` (a short piece joins the next) nor above `max_units` (a long run is cut before it
grows past it). A unit longer than `max_units` is a piece of its own (split by sizes later).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from lore.text.sentences import split_sentences
from lore.text.units import text_units

# Texts in, one unit-length vector per text out (the KB's embedder, passage side, through its cache).
EmbedFn = Callable[[Sequence[str]], np.ndarray]

PERCENTILE = 90.0  # the share of a section's adjacent distances that are not breakpoints
_FENCE = re.compile(r"^(```|~~~)")
_TABLE = re.compile(r"^\s*\|")
_ITEM = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)、]|[（(][一二三四五六七八九十\d]{1,3}[)）])\s+\S")


def text_units_of(text: str) -> list[str]:
    """The units of `text` in reading order: code blocks and tables whole, list items whole, the rest
    sentence by sentence."""
    units: list[str] = []
    lines = text.splitlines()
    i, prose = 0, list[str]()
    while i < len(lines):
        line = lines[i]
        block_end = _block_end(lines, i)
        if block_end > i:
            units += _sentences(prose)
            prose = []
            units.append("\n".join(lines[i:block_end]).strip())
            i = block_end
            continue
        if _ITEM.match(line):
            units += _sentences(prose)
            prose = []
            units.append(line.strip())
        else:
            prose.append(line)
        i += 1
    units += _sentences(prose)
    return [u for u in units if u]


def breakpoints(vectors: np.ndarray, percentile: float = PERCENTILE) -> set[int]:
    """Indices i where a piece should end after unit i: the distance to unit i + 1 is above the
    `percentile`-th of all adjacent distances (and above the smallest one, so equal distances never
    all break)."""
    if len(vectors) < 2:
        return set()
    distance = 1.0 - np.einsum("ij,ij->i", vectors[:-1], vectors[1:])
    cut = float(np.percentile(distance, percentile))
    return {int(i) for i in np.flatnonzero((distance >= cut) & (distance > distance.min()))}


def semantic_pieces(
    units: Sequence[str],
    vectors: np.ndarray,
    *,
    min_units: int,
    max_units: int,
    percentile: float = PERCENTILE,
) -> list[str]:
    """The units joined into pieces between breakpoints, each within [min_units, max_units] where the
    units allow."""
    breaks = breakpoints(vectors, percentile)
    pieces: list[list[str]] = []
    current: list[str] = []
    for i, unit in enumerate(units):
        if current and _size([*current, unit]) > max_units:
            pieces.append(current)
            current = []
        current.append(unit)
        if i in breaks and _size(current) >= min_units:
            pieces.append(current)
            current = []
    if current:
        if pieces and _size(current) < min_units and _size(pieces[-1] + current) <= max_units:
            pieces[-1] += current  # a short tail joins the piece before it
        else:
            pieces.append(current)
    return [_join(p) for p in pieces]


def split_semantic(text: str, embed: EmbedFn, *, min_units: int, max_units: int) -> list[str]:
    """`text` cut into semantic pieces (`semantic_pieces`), its units embedded by `embed`."""
    units = text_units_of(text)
    if len(units) < 2:
        return units
    raw = np.asarray(embed(units), dtype=np.float64)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    vectors = raw / np.where(norms == 0, 1.0, norms)
    return semantic_pieces(units, vectors, min_units=min_units, max_units=max_units)


def _block_end(lines: list[str], i: int) -> int:
    """The line after a fenced code block or a table starting at line i (i itself when none starts)."""
    if _FENCE.match(lines[i]):
        fence = lines[i][:3]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence)), len(lines) - 1)
        return end + 1
    if _TABLE.match(lines[i]):
        end = i
        while end < len(lines) and _TABLE.match(lines[end]):
            end += 1
        return end
    return i


def _sentences(lines: list[str]) -> list[str]:
    return split_sentences("\n".join(lines)) if any(x.strip() for x in lines) else []


def _size(units: list[str]) -> int:
    return text_units(_join(units))


def _join(units: list[str]) -> str:
    """Units joined as they read: a block or list item on its own line, sentences run on (no space
    between CJK sentences)."""
    out, prev = "", ""
    for unit in units:
        if not out:
            out = unit
        elif _own_line(unit) or _own_line(prev):
            out += "\n" + unit
        else:
            cjk = unit[:1] >= "\u3000" and out[-1:] >= "\u3000"
            out += ("" if cjk else " ") + unit
        prev = unit
    return out


def _own_line(unit: str) -> bool:
    return "\n" in unit or bool(_ITEM.match(unit) or _TABLE.match(unit) or _FENCE.match(unit))
