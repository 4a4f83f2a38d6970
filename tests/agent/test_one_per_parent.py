"""A sub-question's candidates: the best hit of each parent passage, so overlapping windows do not use up
slots."""

from __future__ import annotations

from lore.agent.graph import one_per_parent
from lore.schema import Hit
from tests.chunks import make_chunk


def hit(chunk_id: str, parent: str, score: float) -> Hit:
    return Hit(make_chunk(chunk_id=chunk_id, text=chunk_id, parent_id=parent, parent_text=parent), score)


def test_keeps_the_best_hit_of_each_parent_in_rank_order() -> None:
    hits = [
        hit("a1", "A", 0.9),
        hit("a2", "A", 0.8),
        hit("b1", "B", 0.7),
        hit("a3", "A", 0.6),
        hit("c1", "C", 0.5),
    ]
    assert [h.chunk.chunk_id for h in one_per_parent(hits, 10)] == ["a1", "b1", "c1"]
    assert [h.chunk.chunk_id for h in one_per_parent(hits, 2)] == ["a1", "b1"]
    assert one_per_parent([], 5) == []
