"""Question words inside clauses, and questions asked in another language than the passages."""

from __future__ import annotations

import numpy as np
import pytest

from lore.answer.crosslang import cross_features, is_cross_language, language, question_language
from lore.answer.evidence import EvidenceModel, EvidenceQuery, judge_evidence
from lore.answer.generators.base import Passage
from lore.answer.qtypes import asks_how_to, narrates, question_type
from lore.lexical import tokenize
from lore.schema import Hit
from tests.chunks import make_chunk


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        # a wh-word that opens a clause does not ask
        ("What happened when Chopin died?", None),
        ("What did Beyoncé do when she was ten?", None),
        ("What was the endowment when Hesburgh became president?", None),
        ("What did the man who founded the company build?", None),
        ("What is the name of the town where she grew up?", None),
        # ... while the same words still ask where they ask
        ("When did Chopin die?", "when"),
        ("Her alter ego was born when according to Beyoncé?", "when"),
        ("Beyoncé was born where?", "where"),
        ("When Beyoncé left, who replaced her?", "who"),
        ("Where was Beyoncé when she became pregnant?", "where"),
        ("Why did Chopin want his body opened when he died?", "why"),
        ("To whom did the Virgin Mary appear in 1858?", "who"),
        ("Beyoncé tied who for most number one singles?", "who"),
        ("In 1653 who did the Qing emperor grant a title to?", "who"),
        ("Chopin attended the funeral of who in 1839?", "who"),
        # Chinese: 么 ending 什么/怎么 is no yes-no particle; 几乎 and 多大程度 ask for no number
        ("锣鼓经是什么？", None),
        ("年假怎么申请？", None),
        ("可以带宠物上班吗？", "yes_no"),
        ("他几乎获得了哪些奖项？", None),
        ("这项政策对经济有多大影响？", None),
        ("公司有多大？", "how_many"),
        ("年假有几天？", "how_many"),
        ("公司是什么时候成立的？", "when"),
    ],
)
def test_question_words_in_clauses(question: str, kind: str | None) -> None:
    assert question_type(question) == kind


@pytest.mark.parametrize(
    ("question", "how_to"),
    [
        ("How do I send a letter?", True),
        ("how to reset the VPN password", True),
        ("How can you make snow clay?", True),
        ("What is the best way to learn the piano?", True),
        ("How did Chopin teach double thirds?", False),  # how it happened, not how to do it
        ("How many days of annual leave do I get?", False),
        ("年假怎么申请？", False),  # Chinese questions are not judged by this rule
    ],
)
def test_questions_asking_how_to_do_something(question: str, how_to: bool) -> None:
    assert asks_how_to(question) is how_to


@pytest.mark.parametrize(
    ("sentence", "told"),
    [
        ("Before he left, he sent a letter and gifts to the official.", True),
        ("Full-length movies became available on September 12, 2006.", True),
        ("In October 1810, six months after his birth, the family moved to Warsaw.", True),
        ("The album was released in 2003.", True),
        # instructions and present rules, passives and perfects included
        ("Email sales@lanternfish.example with the models, quantities and site address.", False),
        ("Hardware can be returned for a full refund within 30 days of delivery.", False),
        ("Employees who have passed probation may work remotely up to 2 days per week.", False),
        ("Since 2024, reimbursements are processed within 5 business days.", False),
        ("Submit requested documents to People Operations.", False),
        ("请在 OA 系统中提交休假申请。", False),
    ],
)
def test_sentences_that_tell_what_was_done(sentence: str, told: bool) -> None:
    assert narrates(sentence) is told


def _passage(n: int, text: str, dense: float | None, doc: str = "a.md") -> Passage:
    chunk = make_chunk(
        chunk_id=f"c{n}", text=text, parent_id=f"c{n}", parent_text=text, document_id=doc, file_path=doc
    )
    return Passage(n, text, [Hit(chunk, 1.0 / n, dense_score=dense, dense_rank=n, bm25_rank=None)])


def test_languages_of_questions_and_passages() -> None:
    assert language("年假天数按累计工作年限计算：每年 5 天。") == "zh"
    assert language("Warranty & Returns 保修与退货政策 Every LF-200 Picker comes with a warranty.") == "en"
    assert question_language("How many days of annual leave do employees get?") == "en"
    assert question_language("LF-500的保修期是多久？") == "zh"
    zh = [_passage(1, "年假天数按累计工作年限计算：每年 5 天。", 0.85)]
    assert is_cross_language("How many days of annual leave?", zh)
    assert not is_cross_language("年假有几天？", zh)
    assert not is_cross_language("anything", [])


def test_cross_features_measure_how_far_the_best_match_stands_out() -> None:
    standing_out = [_passage(1, "甲", 0.90), _passage(2, "乙", 0.80), _passage(3, "丙", 0.78)]
    flat = [_passage(1, "甲", 0.81), _passage(2, "乙", 0.80), _passage(3, "丙", 0.80)]
    q = "How many days of annual leave?"
    high, low = cross_features(q, None, standing_out, None, None), cross_features(q, None, flat, None, None)
    assert high["margin"] > low["margin"] > 0 and high["margin_2"] > low["margin_2"]
    alone = cross_features(q, None, standing_out[:1], None, None)
    assert alone["margin"] == alone["margin_2"] == 0.0


def test_cross_features_count_the_question_words_a_top_passage_holds_translated() -> None:
    leave = [_passage(1, "年假申请：请在 OA 系统中提交申请。", 0.85), _passage(2, "病假需提前通知。", 0.80)]
    found = cross_features("How do I apply for annual leave?", None, leave, None, None)["translated"]
    fishing = cross_features("How do I choose a fishing float?", None, leave, None, None)["translated"]
    assert found > 0.5 > fishing
    # one-character glosses (教 teach, 好 good, 课 lesson) are in any long Chinese passage: not counted
    wiki = [_passage(1, "他在学校教书，上课认真，成绩很好。", 0.85), _passage(2, "病假需提前通知。", 0.80)]
    assert cross_features("How do I teach a good lesson?", None, wiki, None, None)["translated"] < 0.5
    # a Chinese question's English glosses are not counted: they describe more than they translate
    sick = [_passage(1, "Sick leave must be reported in advance.", 0.85), _passage(2, "Pay day.", 0.8)]
    assert cross_features("病假需要提前通知吗？", None, sick, None, None)["translated"] == 0.0


def test_a_cross_language_question_is_judged_by_the_cross_model() -> None:
    model = EvidenceModel(
        {
            "base": {"bias": -5.0, "coverage": 10.0},  # no shared terms: refused by the base model
            "cross": {"bias": -3.0, "margin": 60.0},  # a standing-out match: answered
        },
        0.5,
    )
    q = "How many days of annual leave do employees get?"
    standing_out = [_passage(1, "年假每年 5 天。", 0.90), _passage(2, "病假需提前通知。", 0.80)]
    flat = [_passage(1, "年假每年 5 天。", 0.81), _passage(2, "病假需提前通知。", 0.80)]
    vec = np.zeros(384, dtype=np.float32)
    yes = judge_evidence(EvidenceQuery(q, tokenize(q), vec), standing_out, model=model)
    no = judge_evidence(EvidenceQuery(q, tokenize(q), vec), flat, model=model)
    assert yes.sufficient and yes.cross_language
    assert not no.sufficient and any("another language" in r for r in no.reasons)
    without = EvidenceModel({"base": model.models["base"]}, 0.5)  # no cross model: the base one decides
    assert not judge_evidence(EvidenceQuery(q, tokenize(q), vec), standing_out, model=without).sufficient
    # The match stands out, but no passage holds half of the question's words translated: refused.
    off = "How do I choose a fishing float?"
    fishing = [
        _passage(1, "蒙大拿州管理至少 17 种鱼类的钓鱼季节。", 0.90),
        _passage(2, "病假需提前通知。", 0.80),
    ]
    judged = judge_evidence(EvidenceQuery(off, tokenize(off), vec), fishing, model=model)
    assert judged.confidence >= 0.5 and not judged.sufficient
    assert judged.reasons == ["no passage holds half of the question's words, as they are or translated"]
    # A Chinese question is judged on the match alone: English glosses describe more than they translate.
    ipod = [
        _passage(1, "Most iPod models have a click wheel and five buttons.", 0.90),
        _passage(2, "Sick leave is paid.", 0.80),
    ]
    zh = "大多数iPod有几个按键？"
    assert judge_evidence(EvidenceQuery(zh, tokenize(zh), vec), ipod, model=model).sufficient
