"""Context building: de-duplicate hits, expand children to parents, fit a budget, number passages."""

from __future__ import annotations

from collections.abc import Sequence

from lore.answer.generators.base import Passage
from lore.schema import Hit
from lore.text.units import text_units

# A child of a parent too long to send whole comes with the parent's blocks around it up to this size:
# the article after a statute's hit article often holds its exceptions or its list ("第三条 年休假天数",
# then "第四条 不享受当年的年休假的情形"), which the child alone would cut off.
WINDOW_UNITS = 480


def build_passages(
    hits: Sequence[Hit],
    *,
    max_passages: int = 6,
    budget_units: int = 2400,
    max_passage_units: int = 900,
    window_units: int = WINDOW_UNITS,
) -> list[Passage]:
    """Numbered passages in hit order: children of one parent merge into that parent's passage.

    A parent longer than `max_passage_units` is replaced by a window of its blocks around the child
    (`window_units`; children inside one window merge into it), so the context stays focused; table
    rows are their own parents, so a row always comes with its headers.
    """
    passages: list[Passage] = []
    by_key: dict[str, Passage] = {}
    windows: dict[str, list[tuple[int, int, Passage]]] = {}  # a long parent's windows (block span)
    used = 0
    for hit in hits:
        c = hit.chunk
        if c.parent_id in by_key:
            by_key[c.parent_id].hits.append(hit)
            continue
        long_parent = text_units(c.parent_text) > max_passage_units
        span = _block_of(c.parent_text, c.text) if long_parent else None
        inside = next(
            (p for lo, hi, p in windows.get(c.parent_id, []) if span is not None and lo <= span <= hi), None
        )
        if inside is not None:
            inside.hits.append(hit)
            continue
        if len(passages) >= max_passages:
            continue
        lo = hi = -1
        if not long_parent:
            text = c.parent_text
        elif span is None:
            text = c.text
        else:
            text, lo, hi = _window(c.parent_text.split("\n\n"), span, c.text, window_units)
        size = text_units(text)
        if passages and used + size > budget_units:
            continue
        used += size
        passage = Passage(n=len(passages) + 1, text=text, hits=[hit])
        passages.append(passage)
        if not long_parent:
            by_key[c.parent_id] = passage
        elif lo >= 0:
            windows.setdefault(c.parent_id, []).append((lo, hi, passage))
    return passages


def _block_of(parent: str, child: str) -> int | None:
    """The index of the parent's block (blank-line separated) holding the child's longest line, if any."""
    lines = [line.strip() for line in child.splitlines() if line.strip()]
    if not lines:
        return None
    key = max(lines, key=len)
    return next((i for i, block in enumerate(parent.split("\n\n")) if key in block), None)


def _window(blocks: list[str], at: int, child: str, limit: int) -> tuple[str, int, int]:
    """(text, first block, last block) of the blocks around block `at`, the following ones first, within
    `limit` units; the child alone (and no span) when its own block is already longer."""
    if text_units(blocks[at]) > limit:
        return child, -1, -1
    lo = hi = at
    size = text_units(blocks[at])
    grew = True
    while grew:
        grew = False
        for k in (hi + 1, lo - 1):
            if 0 <= k < len(blocks) and size + text_units(blocks[k]) <= limit:
                size += text_units(blocks[k])
                lo, hi = min(lo, k), max(hi, k)
                grew = True
                break
    return "\n\n".join(blocks[lo : hi + 1]), lo, hi
