"""Citation mapping, sentence splitting, context building, verification and refusal units."""

from __future__ import annotations

from lore.answer.citations import attach_missing, citations_for, cited_numbers, clean_markers
from lore.answer.context import build_passages
from lore.answer.evidence import EvidenceQuery, judge_evidence
from lore.answer.generators.base import Passage
from lore.answer.generators.extractive import ExtractiveGenerator
from lore.answer.pipeline import refusal_text
from lore.answer.verify import answer_confidence, verify
from lore.config import AnswerSettings
from lore.lexical import tokenize
from lore.schema import Chunk, Hit
from lore.text.sentences import split_sentences
from tests.chunks import make_chunk


def chunk(cid: str, text: str, parent: str | None = None, **kw: object) -> Chunk:
    return make_chunk(
        chunk_id=cid,
        text=text,
        parent_id=f"p-{parent or cid}",
        parent_text=parent or text,
        document_id=f"d-{cid}",
        file_path=f"{cid}.md",
        **kw,
    )


P = [
    Passage(
        1, "Refunds are accepted within 30 days of delivery. Shipping is free.", [Hit(chunk("a", "x"), 1.0)]
    ),
    Passage(2, "年假每年 5 天。申请须提前三个工作日。", [Hit(chunk("b", "y", page=3), 0.5)]),
]


def test_split_sentences_cjk_latin_and_markers() -> None:
    assert split_sentences("年假每年 5 天。[2]申请须提前三天！Next one. Done?") == [
        "年假每年 5 天。[2]",
        "申请须提前三天！",
        "Next one.",
        "Done?",
    ]
    assert split_sentences("question: Why?; answer: Because.") == ["question: Why?; answer: Because."]
    # A closing quote stays with its sentence; a clause mark the source left at a start starts nothing.
    assert split_sentences("他说：「最强的人是最孤立的人。」总结了斥责。") == [
        "他说：「最强的人是最孤立的人。」",
        "总结了斥责。",
    ]
    assert split_sentences("（），是第7部剧场版。") == ["（），是第7部剧场版。"]
    assert split_sentences("，是第7部剧场版。") == ["是第7部剧场版。"]
    # A doubled full stop in the source is no sentence: it was chosen as a whole answer ("[1]。").
    assert split_sentences("故有[书香]之称。。不过采摘要小心。") == ["故有[书香]之称。", "不过采摘要小心。"]


def test_markers_pointing_nowhere_are_removed() -> None:
    assert (
        clean_markers("Refunds within 30 days [1][7]. Free [2].", P)
        == "Refunds within 30 days [1]. Free [2]."
    )


def test_uncited_sentences_get_the_passage_that_holds_them() -> None:
    out = attach_missing("Refunds are accepted within 30 days of delivery. The moon is made of cheese.", P)
    assert out.startswith("Refunds are accepted within 30 days of delivery[1].")
    assert "cheese." in out and out.count("[") == 1  # no passage supports it: left uncited


def test_citations_carry_location_and_order() -> None:
    cites = citations_for("年假每年 5 天[2]。Refunds[1].", P)
    assert [c.n for c in cites] == [2, 1] and cites[0].page == 3 and cites[0].file == "b.md"
    assert cited_numbers("a[2] b[1] c[2]") == [2, 1]


def test_verify_flags_unsupported_and_confidence_drops() -> None:
    good = verify("Refunds are accepted within 30 days of delivery[1].", P)
    bad = verify("Refunds are accepted within 30 days[1]. Pets fly to Mars daily[1].", P)
    assert all(c.supported for c in good)
    assert [c.supported for c in bad] == [True, False]
    assert answer_confidence(0.9, good) > answer_confidence(0.9, bad)
    assert verify("No markers at all.", P)[0].support == 0.0


def test_a_tables_cells_are_checked_one_by_one_against_their_citations() -> None:
    rows = [Passage(1, "Model: LF-200 Picker; Payload (kg): 15", [Hit(chunk("r", "x"), 1.0)])]
    table = "| Item | Payload |\n|---|---|\n| LF-200 Picker | 15 kg[1] |\n| LF-900 | 90 kg |"
    checks = verify(table, rows)
    assert [c.text for c in checks] == ["LF-200 Picker Payload 15 kg", "LF-900 Payload 90 kg"]
    assert [c.cited for c in checks] == [[1], []] and checks[0].supported and not checks[1].supported


def test_context_merges_children_of_one_parent_and_respects_budget() -> None:
    parent = "Leave policy. " * 10
    hits = [
        Hit(chunk("c1", "Leave", parent), 1.0),
        Hit(chunk("c2", "policy", parent), 0.9),
        Hit(chunk("c3", "other text"), 0.8),
        Hit(chunk("c4", "x" * 3000), 0.7),
    ]
    passages = build_passages(hits, budget_units=200)
    assert [p.n for p in passages] == [1, 2]  # c1+c2 share a parent; c4 does not fit
    assert len(passages[0].hits) == 2 and passages[0].text == parent


def test_evidence_without_overlap_is_insufficient() -> None:
    q_weak, q_strong = "Who won the 1998 World Cup?", "refund accepted within how many days of delivery"
    weak = judge_evidence(EvidenceQuery(q_weak, tokenize(q_weak)), P)
    strong = judge_evidence(EvidenceQuery(q_strong, tokenize(q_strong)), P)
    assert not weak.sufficient and weak.reasons
    assert strong.coverage > weak.coverage and strong.confidence > weak.confidence
    assert not judge_evidence(EvidenceQuery("", []), []).sufficient


def test_extractive_uses_only_passage_sentences_with_markers() -> None:
    gen = ExtractiveGenerator()
    text = "".join(gen.stream("How many days do I have for refunds?", P))
    assert text == "Refunds are accepted within 30 days of delivery[1]."
    zh = "".join(gen.stream("年假有几天？怎么申请？", P))
    assert "年假每年 5 天[2]。" in zh and "申请须提前三个工作日[2]。" in zh


def test_refusal_speaks_the_question_language() -> None:
    assert "知识库" in refusal_text("年假几天", "HR 热线 8000")
    default = AnswerSettings().support_contact
    assert default not in refusal_text("年假几天", default) and "管理员" in refusal_text("年假几天", default)
    assert "HR" in refusal_text("How many days?", "HR desk") and "does not cover" in refusal_text("x", "y")


def test_key_terms_must_appear_not_just_common_words() -> None:
    from lore.text.sentences import coverage, key_coverage

    question = "报销需要什么材料"
    q = tokenize(question)  # 报销 is the key term; 需要 and 材料 are everyday words
    inventory = "存货控制需要考量以下这些材料因素。"
    assert key_coverage(q, inventory) == 0.0 and coverage(q, inventory) < 0.5
    assert key_coverage(q, "报销时须提交发票原件、费用明细单、审批单。") == 1.0
    passages = [Passage(1, inventory, [Hit(chunk("z", inventory), 1.0)])]
    judged = judge_evidence(EvidenceQuery(question, q), passages)
    assert not judged.sufficient and any("key terms" in r for r in judged.reasons)
