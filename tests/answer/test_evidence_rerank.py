"""The evidence judgement on reranked hits: first-stage signals in first-stage order, the reranker's
calibrated score through the model fit for it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from lore.answer.evidence import (
    EvidenceModel,
    EvidenceQuery,
    default_model,
    evidence_features,
    first_stage_order,
    judge_evidence,
    unknown_words,
)
from lore.answer.generators.base import Passage
from lore.lexical import tokenize
from lore.schema import Hit
from tests.chunks import make_chunk

Q = "年假有几天？报销需要什么材料？"
TEXTS = {
    "leave": "员工每年享有 10 天带薪年假，需提前 3 个工作日在 OA 提交申请。",
    "claims": "报销需要提交发票原件和审批单，每月 5 日前交到财务部。",
    "other": "公司食堂每天中午十一点半开放。",
}


def _hit(doc: str, dense_rank: int, bm25_rank: int, dense: float) -> Hit:
    text = TEXTS[doc]
    chunk = make_chunk(
        chunk_id=f"{doc}-0",
        text=text,
        parent_id=doc,
        parent_text=text,
        document_id=doc,
        file_path=f"{doc}.md",
    )
    return Hit(chunk, 1 / (60 + dense_rank) + 1 / (60 + bm25_rank), dense, 1.0, dense_rank, bm25_rank)


def _passages(hits: list[Hit]) -> list[Passage]:
    return [Passage(n, h.chunk.parent_text, [h]) for n, h in enumerate(hits, start=1)]


FIRST = [_hit("leave", 1, 1, 0.9), _hit("claims", 4, 2, 0.8), _hit("other", 2, 9, 0.7)]


def test_reranked_passages_are_judged_on_first_stage_signals() -> None:
    # The reranker put the passage the first stage ranked third on top: agreement, coverage and
    # similarity are still read as the base model was fit, its own score is added.
    reranked = [replace(FIRST[i], score=s, rerank_score=s) for i, s in ((2, 0.9), (1, 0.6), (0, 0.5))]
    plain = evidence_features(EvidenceQuery(Q, tokenize(Q)), _passages(FIRST))
    ranked = evidence_features(EvidenceQuery(Q, tokenize(Q)), _passages(reranked))
    assert [p.hit.chunk.document_id for p in first_stage_order(_passages(reranked))] == [
        "leave",
        "claims",
        "other",
    ]
    assert ranked.pop("rerank") == 0.9
    assert ranked == plain
    assert plain["agreement"] == 1.0


def test_without_a_reranker_the_retrieval_order_is_kept() -> None:
    # Fused order wins over the ranks when no hit was reranked (the store may fuse otherwise).
    passages = _passages([FIRST[2], FIRST[0], FIRST[1]])
    assert evidence_features(EvidenceQuery(Q, tokenize(Q)), passages)["agreement"] == 0.5


def test_the_shipped_model_judges_reranked_hits_with_its_rerank_model() -> None:
    model = default_model()
    assert "rerank" in model.models["rerank"]
    reranked = [replace(h, rerank_score=s) for h, s in zip(FIRST, (0.9, 0.6, 0.5), strict=True)]
    low = [replace(h, rerank_score=s) for h, s in zip(FIRST, (0.05, 0.04, 0.03), strict=True)]
    high_p = judge_evidence(EvidenceQuery(Q, tokenize(Q)), _passages(reranked)).confidence
    low_p = judge_evidence(EvidenceQuery(Q, tokenize(Q)), _passages(low)).confidence
    assert high_p > low_p  # the reranker's confidence counts
    assert judge_evidence(EvidenceQuery(Q, tokenize(Q)), _passages(reranked)).rerank == 0.9


def test_words_the_kb_holds_nowhere() -> None:
    hits = [Hit(make_chunk(chunk_id="c1", text="Montana manages fishing seasons for 17 species."), 1.0)]
    asked: list[str] = []

    def known(word: str) -> bool:  # the KB searched for one word: it holds "earlier" only
        asked.append(word)
        return word == "earlier"

    # "fishing" is in a hit; "choose" and "float" are nowhere: 1 of 3 words known.
    assert unknown_words("How do I choose a fishing float?", hits, known) == ["choose", "float"]
    assert asked == ["choose", "float"]  # as asked, not as stems ("choos")
    # 3 of 4 known, one as asked ("earlier": its stem "earli" stems again to "ear"): kept.
    asked.clear()
    assert unknown_words("Were earlier fishing seasons longer?", hits, known) == []
    assert "earlier" in asked
    assert unknown_words("钓鱼浮漂怎么选？", hits, known) == []  # Chinese questions are not checked


def test_a_question_is_judged_against_its_own_language_threshold(tmp_path: Path) -> None:
    # One P for every question (bias only): the Chinese threshold refuses it, the shared one (English) not.
    path = tmp_path / "model.json"
    path.write_text(
        json.dumps({"models": {"base": {"bias": 0.0}}, "threshold": 0.3, "thresholds": {"zh": 0.6}})
    )
    model = EvidenceModel.load(path)
    english = "How many days of annual leave do employees get?"
    en_passages = [Passage(1, "Employees get 10 days of annual leave each year.", [FIRST[0]])]
    zh = judge_evidence(EvidenceQuery(Q, tokenize(Q)), _passages(FIRST), model=model)
    en = judge_evidence(EvidenceQuery(english, tokenize(english)), en_passages, model=model)
    assert (zh.confidence, zh.threshold, zh.sufficient) == (0.5, 0.6, False)
    assert (en.confidence, en.threshold, en.sufficient) == (0.5, 0.3, True)
    # A threshold given (a KB's calibration, a pinned setting) serves both languages.
    assert judge_evidence(EvidenceQuery(Q, tokenize(Q)), _passages(FIRST), 0.4, model=model).sufficient


def test_the_shipped_model_holds_chinese_questions_to_no_lower_threshold() -> None:
    model = default_model()
    assert model.threshold_for(Q) >= model.threshold == model.threshold_for("How many days of leave?")
