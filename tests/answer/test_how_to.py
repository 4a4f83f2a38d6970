"""A how-to question on passages that only tell what someone did is refused; a passage that tells how
answers it (real KBs of English Wikipedia paragraphs, the real embedder and reranker)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from lore.config import load_settings
from lore.engine import Lore
from tests.conftest import SHARED

ARTICLES = ("Frédéric_Chopin_6", "Sino-Tibetan_relations_during_the_Ming_dynasty_6")
GUIDE = (
    "# Teaching guide\n\nTo teach a good lesson, start with one clear goal and tell the class what it is. "
    "Keep each explanation short, then let students practise while you walk around and help. "
    "End the lesson by asking each student to write down one thing they learned.\n"
)


@pytest.fixture(scope="module")
def lore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lore]:
    """KB `history`: 22 paragraphs of two Wikipedia articles (Chopin's piano teaching among them);
    KB `guide`: the same and a teaching guide."""
    docs = tmp_path_factory.mktemp("docs")
    with (SHARED / "datasets" / "english_qa" / "corpus.jsonl").open(encoding="utf-8") as f:
        rows = [r for r in map(json.loads, f) if r["_id"].startswith(ARTICLES)]
    for i, row in enumerate(rows):
        (docs / f"{i}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
    guide = tmp_path_factory.mktemp("guide")
    (guide / "teaching.md").write_text(GUIDE, encoding="utf-8")
    lore = Lore(load_settings(home=tmp_path_factory.mktemp("home")))
    lore.create_kb("history")
    lore.create_kb("guide")
    assert lore.ingest("history", [docs]).count("ingested") == len(rows) == 22
    assert lore.ingest("guide", [docs, guide]).count("ingested") == 23
    yield lore
    lore.close()


def _ask(lore: Lore, kb: str, question: str) -> dict:
    return list(lore.ask(kb, question))[-1].data


def test_a_how_to_question_met_only_by_narration_is_refused(lore: Lore) -> None:
    # "He used them to teach his own technique", "gave lessons": what Chopin and his mother did (P 0.64)
    end = _ask(lore, "history", "How do I teach a good lesson?")
    assert end["refused"], end["answer"]
    assert end["evidence"]["reasons"] == [
        "the question asks how to do something; the passages that match it tell what was done"
    ]
    # a question on what happened is still answered from the same passages
    told = _ask(lore, "history", "How did Chopin teach playing double thirds?")
    assert not told["refused"] and "double thirds" in told["answer"], told["evidence"]


def test_a_how_to_question_is_answered_where_a_passage_tells_how(lore: Lore) -> None:
    end = _ask(lore, "guide", "How do I teach a good lesson?")
    assert not end["refused"], end["evidence"]
    assert end["citations"][0]["file"].endswith("teaching.md")
    assert "one clear goal" in end["answer"]
