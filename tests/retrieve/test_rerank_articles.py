"""The learned reranker's per-parent cap on a real statute: a parent window holds several articles, and each
article is its own passage, so the article that answers is not capped out by its neighbour."""

from __future__ import annotations

import shutil
from pathlib import Path

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.rerank.features import passage_key
from tests.chunks import make_chunk

STATUTE = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "enterprise_dev" / "docs" / "zh"


def test_articles_of_one_parent_window_are_separate_passages() -> None:
    a = make_chunk(chunk_id="a", parent_id="p", heading_path=["条例", "第三章 工伤认定", "第十四条"])
    b = make_chunk(chunk_id="b", parent_id="p", heading_path=["条例", "第三章 工伤认定", "第十六条"])
    c = make_chunk(chunk_id="c", parent_id="p", heading_path=["条例", "第三章 工伤认定", "第十六条"])
    assert passage_key(a) != passage_key(b) == passage_key(c)  # a split article stays one passage
    assert passage_key(make_chunk(chunk_id="d", parent_id="p")) != passage_key(
        make_chunk(chunk_id="e", parent_id="q")
    )


def test_articles_of_the_answering_window_share_the_first_places(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("工伤保险条例.md",):
        shutil.copy(STATUTE / name, docs / name)
    lore = Lore(load_settings(home=tmp_path / "home", rerank={"provider": "ltr"}))
    try:
        lore.create_kb("law")
        lore.ingest("law", [docs])
        question = "下班回家路上被车撞了，算工伤吗？"
        hits = lore.search("law", question, lore.search_options(5))
        articles = [h.chunk.heading_path[-1] for h in hits]
        # The window of 第十四–十九条 (what counts as a work injury, and how it is claimed) answers; capped
        # at one chunk per window, four of the five places went to other windows' articles.
        windows = [h.chunk.parent_id for h in hits]
        assert len(set(windows)) < len(windows) and len(set(articles)) == len(articles), articles
    finally:
        lore.close()
