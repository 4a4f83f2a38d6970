"""The offline learned reranker (shipped model) on the real handbook KB, its features, document-level
ranking, the plug-in registry, and the rerank report in `ask`'s status events and `end` payload."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.errors import ConfigError
from lore.retrieve.documents import rank_documents
from lore.retrieve.rerank import make_reranker, register_reranker
from lore.retrieve.rerank.features import COMPONENTS, FEATURES, candidate_features, fused_only, is_question
from lore.retrieve.rerank.learned import (
    DEFAULT_MODEL,
    Guard,
    LearnedReranker,
    guarded_order,
    statements_model,
)
from lore.retrieve.search import SearchOptions
from lore.schema import Hit

QUESTIONS = ["How many days of annual leave do employees get?", "出差住宿标准是多少？", "报销需要什么材料？"]


@pytest.fixture
def lore(hb_home: Path) -> Iterator[Lore]:
    lore = Lore(load_settings(home=hb_home, rerank={"provider": "ltr"}))
    yield lore
    lore.close()


def candidates(lore: Lore, q: str, k: int = 20) -> list[Hit]:
    return lore.search("hb", q, SearchOptions(top_k=k, recall_k=k, rerank=False))


def test_features_are_relative_to_the_list_and_mark_what_is_missing(lore: Lore) -> None:
    hits = candidates(lore, QUESTIONS[0])
    x = candidate_features(QUESTIONS[0], hits)
    col = {f: i for i, f in enumerate(FEATURES)}
    assert x.shape == (len(hits), len(FEATURES)) and x.dtype == np.float32
    assert list(x[:, col["fused_rank"]]) == list(range(1, len(hits) + 1))
    for h, row in zip(hits, x, strict=True):
        assert math.isnan(row[col["dense"]]) == (h.dense_score is None)
        assert math.isnan(row[col["bm25_rank"]]) == (h.bm25_score is None)
        assert 0 <= row[col["cover"]] <= 1 and 0 <= row[col["cover_idf"]] <= 1.0001
    present = x[:, col["dense_gap"]][~np.isnan(x[:, col["dense_gap"]])]
    assert present.max() == 0.0  # the best dense candidate of the list
    # A bm25-only view of the same candidates: dense features are missing, nothing breaks.
    bm = [replace(h, dense_score=None, dense_rank=None) for h in hits]
    assert np.isnan(candidate_features(QUESTIONS[0], bm)[:, col["dense"]]).all()


@pytest.mark.parametrize("q", QUESTIONS)
def test_learned_reranker_reorders_the_same_candidates_with_unit_scores(lore: Lore, q: str) -> None:
    hits = candidates(lore, q)
    ranked = LearnedReranker().rerank(q, hits)
    assert sorted(h.chunk.chunk_id for h in ranked) == sorted(h.chunk.chunk_id for h in hits)
    scores = [h.rerank_score for h in ranked]
    assert all(s is not None and 0 < s < 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert [h.score for h in ranked] == scores


def test_engine_search_uses_the_configured_reranker(lore: Lore) -> None:
    r = lore.retriever("hb")
    hits = r.search(QUESTIONS[1], lore.search_options(top_k=5))
    assert hits and all(h.rerank_score is not None for h in hits)
    assert r.last_rerank is not None and r.last_rerank.provider == "ltr" and r.last_rerank.candidates > 0
    off = r.search(QUESTIONS[1], replace(lore.search_options(top_k=5), rerank=False))
    assert all(h.rerank_score is None for h in off)


def test_ask_reports_the_rerank_as_a_status_event_and_in_the_end_payload(lore: Lore) -> None:
    events = list(lore.ask("hb", QUESTIONS[0]))
    status = [e.data for e in events if e.type == "status" and e.data.get("stage") == "rerank"]
    end = events[-1]
    assert end.type == "end" and status and status[0]["provider"] == "ltr" and status[0]["ms"] >= 0
    assert end.data["rerank"][0]["candidates"] == status[0]["candidates"]
    stages = [e.data["stage"] for e in events if e.type == "status"]
    assert stages.index("rerank") == stages.index("retrieve") + 1


def test_document_ranking_max_and_sum(lore: Lore) -> None:
    hits = LearnedReranker().rerank(QUESTIONS[0], candidates(lore, QUESTIONS[0]))
    best = rank_documents(hits, "max")
    assert [d for d, _ in best] == list(dict.fromkeys(h.chunk.document_id for h in hits))
    total = dict(rank_documents(hits, "sum", n=2))
    for doc, score in total.items():
        top2 = sorted((h.rerank_score for h in hits if h.chunk.document_id == doc), reverse=True)[:2]
        assert score == pytest.approx(sum(top2))
    # Without rerank scores the documents keep first-stage order.
    plain = candidates(lore, QUESTIONS[0])
    assert [d for d, _ in rank_documents(plain, "sum")] == list(
        dict.fromkeys(h.chunk.document_id for h in plain)
    )


def test_registry_none_unknown_and_plugins(lore: Lore) -> None:
    s = lore.settings.rerank
    assert make_reranker(s.model_copy(update={"provider": "none"})) is None
    with pytest.raises(ConfigError, match="known: .*http.*llm.*ltr"):
        make_reranker(s.model_copy(update={"provider": "cross-encoder-xl"}))

    class Reverse:
        name = "reverse"

        def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
            return [replace(h, rerank_score=0.5, score=0.5) for h in reversed(hits)]

    register_reranker("reverse", lambda settings, **_: Reverse())
    plug = Lore(load_settings(home=lore.settings.home, rerank={"provider": "reverse"}))
    try:
        first = [h.chunk.chunk_id for h in candidates(plug, QUESTIONS[2], 8)]
        got = [
            h.chunk.chunk_id
            for h in plug.search("hb", QUESTIONS[2], SearchOptions(top_k=8, recall_k=8, rerank_k=8))
        ]
        assert got == first[::-1][: len(got)]
    finally:
        plug.close()


def test_table_row_features_match_column_names_and_cells(lore: Lore) -> None:
    q = "LF-200 的保修期多久"
    hits = candidates(lore, q)
    x = candidate_features(q, hits)
    col = {f: i for i, f in enumerate(FEATURES)}
    rows = [i for i, h in enumerate(hits) if h.chunk.source_type == "table_row"]
    prose = [i for i, h in enumerate(hits) if h.chunk.source_type == "doc"]
    assert rows and prose
    assert (x[rows, col["table_row"]] == 1).all() and (x[prose, col["table_row"]] == 0).all()
    assert np.isnan(x[prose, col["field_cover"]]).all() and np.isnan(x[prose, col["cell_cover"]]).all()
    lf200 = next(i for i in rows if "LF-200 Picker" in hits[i].chunk.text)
    assert x[lf200, col["field_cover"]] > 0  # 保修期 is a column name
    assert x[lf200, col["cell_cover"]] > 0  # LF-200 is a cell value
    faq = [replace(h, chunk=replace(h.chunk, source_type="faq")) for h in hits[:3]]
    assert (candidate_features(q, faq)[:, col["faq"]] == 1).all()


def test_kinds_the_model_never_saw_keep_their_first_stage_places(lore: Lore) -> None:
    q = QUESTIONS[1]
    hits = candidates(lore, q)
    fixed = {1, 4}
    mixed = [
        replace(h, chunk=replace(h.chunk, source_type="faq" if i in fixed else "doc"))
        for i, h in enumerate(hits)
    ]
    ranker = LearnedReranker()
    assert "faq" not in ranker.model_for(q).kinds
    ranked = ranker.rerank(q, mixed)
    assert [i for i, h in enumerate(ranked) if h.chunk.source_type == "faq"] == sorted(fixed)
    assert [ranked[i].chunk.chunk_id for i in fixed] == [mixed[i].chunk.chunk_id for i in fixed]
    scores = [h.rerank_score for h in ranked]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)
    assert [d for d, _ in rank_documents(ranked)] == list(dict.fromkeys(h.chunk.document_id for h in ranked))


def test_guard_blends_with_the_first_stage_and_caps_chunks_per_parent() -> None:
    raw = np.array([0.0, 1.0, 3.0, 2.0, 5.0])  # the model's order: 4, 2, 3, 1, 0
    parents = ["a", "b", "c", "c", "c"]
    assert guarded_order(raw, parents, Guard()) == [4, 2, 3, 1, 0]
    # Weighed like the model, the first stage pulls the list to a compromise; weighed far more, it wins.
    assert guarded_order(raw, parents, Guard(blend=1.0))[0] == 2
    assert guarded_order(raw, parents, Guard(blend=100.0)) == [0, 1, 2, 3, 4]
    # At most one chunk of a parent in the first three places, then the rest in order.
    assert guarded_order(raw, parents, Guard(per_parent=1, depth=3)) == [4, 1, 0, 2, 3]
    assert guarded_order(raw, ["c"] * 5, Guard(per_parent=1)) == [4, 2, 3, 1, 0]  # nothing else to take


def test_a_store_without_component_ranks_is_ranked_from_its_fused_list(lore: Lore) -> None:
    q = QUESTIONS[2]
    hits = candidates(lore, q)
    col = {f: i for i, f in enumerate(FEATURES)}
    fused = [
        replace(h, score=1 / (61 + i), dense_score=None, dense_rank=None, bm25_score=None, bm25_rank=None)
        for i, h in enumerate(hits)
    ]
    x = candidate_features(q, fused)
    assert np.isnan(x[:, [col[f] for f in COMPONENTS]]).all()
    assert x[:, col["rrf"]] == pytest.approx([60 / (61 + i) for i in range(len(hits))], rel=1e-5)
    full = candidate_features(q, hits)
    assert np.array_equal(np.isnan(fused_only(full)), np.isnan(x))
    ranked = LearnedReranker().rerank(q, fused)
    assert sorted(h.chunk.chunk_id for h in ranked) == sorted(h.chunk.chunk_id for h in hits)


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("How many days of annual leave do employees get?", True),
        ("annual leave days", False),
        ("Vitamin D deficiency raises the risk of fractures.", False),
        ("Name the capital", False),
        ("Is remote work allowed", True),
        ("年假有几天", True),
        ("报销需要什么材料", True),
        ("出差住宿标准", False),
        ("The warranty lasts 24 months?", True),
    ],
)
def test_questions_are_told_from_statements_and_key_words(query: str, question: bool) -> None:
    assert is_question(query) is question


def test_english_statements_use_the_statements_model_and_questions_the_other() -> None:
    ranker = LearnedReranker()
    assert statements_model(DEFAULT_MODEL).is_file()
    assert ranker.statements is not ranker.questions
    assert ranker.model_for("Vitamin D deficiency raises the risk of fractures.") is ranker.statements
    assert ranker.model_for("annual leave days") is ranker.statements
    assert ranker.model_for("How many days of annual leave do employees get?") is ranker.questions
    assert ranker.model_for("出差住宿标准") is ranker.questions  # the statements model saw no Chinese
    assert ranker.model_for("出差住宿标准是多少？") is ranker.questions


def test_a_model_without_a_statements_file_serves_every_query(tmp_path: Path) -> None:
    for suffix in (".txt", ".json"):
        (tmp_path / f"ltr{suffix}").write_bytes(DEFAULT_MODEL.with_suffix(suffix).read_bytes())
    ranker = LearnedReranker(tmp_path / "ltr.txt")
    assert ranker.model_for("annual leave days") is ranker.questions
