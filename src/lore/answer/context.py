"""Context building: de-duplicate hits, expand children to parents, fit a budget, number passages."""

from __future__ import annotations

from collections.abc import Sequence

from lore.answer.generators.base import Passage
from lore.schema import Hit
from lore.text.units import text_units


def build_passages(
    hits: Sequence[Hit], *, max_passages: int = 6, budget_units: int = 2400, max_passage_units: int = 900
) -> list[Passage]:
    """Numbered passages in hit order: children of one parent merge into that parent's passage.

    A parent longer than `max_passage_units` is replaced by its best child (the context stays
    focused); table rows are their own parents, so a row always comes with its headers.
    """
    passages: list[Passage] = []
    by_parent: dict[str, Passage] = {}
    used = 0
    for hit in hits:
        c = hit.chunk
        if c.parent_id in by_parent:
            by_parent[c.parent_id].hits.append(hit)
            continue
        if len(passages) >= max_passages:
            continue
        text = c.parent_text if text_units(c.parent_text) <= max_passage_units else c.text
        size = text_units(text)
        if passages and used + size > budget_units:
            continue
        used += size
        passage = Passage(n=len(passages) + 1, text=text, hits=[hit])
        passages.append(passage)
        by_parent[c.parent_id] = passage
    return passages
