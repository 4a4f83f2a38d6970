"""Rule-based decomposition: comparisons, enumerations, multi-part questions, and what stays whole."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lore.agent.decompose import Plan, decompose


@pytest.mark.parametrize(
    ("question", "kind", "subs"),
    [
        ("对比LF-200和LF-500的保修期", "comparison", ["LF-200的保修期", "LF-500的保修期"]),
        ("A合同和B合同的违约金条款有什么不同", "comparison", ["A合同的违约金条款", "B合同的违约金条款"]),
        ("年假与病假有什么区别？", "comparison", ["年假", "病假"]),
        ("A合同的违约金条款和付款条款是否冲突", "comparison", ["A合同的违约金条款", "A合同的付款条款"]),
        (
            "compare the warranty of LF-200 and LF-500",
            "comparison",
            ["the warranty of LF-200", "the warranty of LF-500"],
        ),
        ("LF-200 vs LF-500 warranty", "comparison", ["LF-200 warranty", "LF-500 warranty"]),
        (
            "What is the difference between the refund window and the warranty period?",
            "comparison",
            ["the refund window", "the warranty period"],
        ),
        ("How does remote work differ from sick leave?", "comparison", ["remote work", "sick leave"]),
        # jieba glues the conjunction to unknown names (学与, 瞳和宝): the comparison cue still splits them
        ("显微镜学与命运派对有什么区别？", "comparison", ["显微镜学", "命运派对"]),
        ("对比矢井田瞳和宝山镇", "comparison", ["矢井田瞳", "宝山镇"]),
    ],
)
def test_comparisons(question: str, kind: str, subs: list[str]) -> None:
    plan = decompose(question)
    assert (plan.kind, plan.sub_questions) == (kind, subs)


@pytest.mark.parametrize(
    ("question", "subs"),
    [
        ("报销需要什么材料？年假怎么申请？", ["报销需要什么材料？", "年假怎么申请？"]),
        ("报销需要什么材料，另外年假怎么申请？", ["报销需要什么材料？", "年假怎么申请？"]),
        (
            "LF-200、LF-500和LF-700的保修期分别是多久？",
            ["LF-200的保修期多久？", "LF-500的保修期多久？", "LF-700的保修期多久？"],
        ),
        (
            "What is the refund window and who pays return shipping?",
            ["What is the refund window?", "who pays return shipping?"],
        ),
        ("How long must passwords be? Who is the CEO?", ["How long must passwords be?", "Who is the CEO?"]),
        # a clause that asks nothing ("钟惺亡故后") stays with the question after it
        (
            "钟惺亡故后，谭元春为他做了哪些诗；卡特里娜的形象是怎样的？",
            ["钟惺亡故后，谭元春为他做了哪些诗？", "卡特里娜的形象是怎样的？"],
        ),
        (
            "植村秀有着怎样的美誉？《瞄》的蓝本是哪一个杂志？",
            ["植村秀有着怎样的美誉？", "《瞄》的蓝本是哪一个杂志？"],
        ),
        (
            "What are the prices of LF-200, LF-500 and LF-700?",
            [
                "What are the prices of LF-200?",
                "What are the prices of LF-500?",
                "What are the prices of LF-700?",
            ],
        ),
        # an opening repeated after "and" ("that", "about whether") starts a second question with the same
        # head
        (
            "Is it true that statins lower LDL, and that aspirin prevents stroke?",
            ["Is it true that statins lower LDL?", "Is it true that aspirin prevents stroke?"],
        ),
        (
            "What is known about whether exercise improves sleep and about whether coffee raises blood "
            "pressure?",
            [
                "What is known about whether exercise improves sleep?",
                "What is known about whether coffee raises blood pressure?",
            ],
        ),
        # a full stop before an additive word ("Also,", "And") ends a question; the additive word is dropped
        (
            "Refunds take 30 days. Also, who pays return shipping?",
            ["Refunds take 30 days?", "who pays return shipping?"],
        ),
        (
            "Is there evidence that IL-6 rises in sepsis? And is it true that TNF falls?",
            ["Is there evidence that IL-6 rises in sepsis?", "is it true that TNF falls?"],
        ),
        # "and" + auxiliary + subject is a new question
        (
            "What is the refund window and is the VPN required?",
            ["What is the refund window?", "is the VPN required?"],
        ),
    ],
)
def test_multi_part_and_enumerations(question: str, subs: list[str]) -> None:
    plan = decompose(question)
    assert plan.kind == "multi-hop" and plan.sub_questions == subs


@pytest.mark.parametrize(
    "question",
    [
        "年假有几天？",
        "报销需要发票和审批单吗",
        "贞观十三年，唐太宗把突厥人迁至哪里？",
        "和平饭店在哪里",
        "参与项目的人员有哪些",
        "What is the refund window?",
        "terms and conditions of the VPN",
        "Which documents and approvals are needed?",
        # "and" + auxiliary without a subject continues the clause; one "that" is not a repeated opening
        "Does obesity raise blood pressure and is associated with stroke?",
        "Is it true that statins lower the risk that patients develop dementia and stroke?",
        "Is H. pylori infection linked to gastric cancer and to ulcers?",
        "Mice lacking Foxp3 develop autoimmunity. Is this reversed by IL-2?",
    ],
)
def test_single_questions_stay_whole(question: str) -> None:
    plan = decompose(question)
    assert plan.kind == "simple" and plan.sub_questions == [question]


def test_sub_question_limit() -> None:
    plan = decompose("A、B、C、D和E的价格分别是多少？", max_sub_questions=3)
    # Parts beyond the limit are asked together with the last one kept, not dropped.
    assert plan.sub_questions == [
        "A的价格多少？",
        "B的价格多少？",
        "C的价格多少？ D的价格多少？ E的价格多少？",
    ]


def test_plan_validation() -> None:
    assert Plan(kind="multi-hop", sub_questions=[" a ", "a", "b"]).sub_questions == ["a", "b"]
    for bad in (
        {"kind": "simple", "sub_questions": []},
        {"kind": "simple", "sub_questions": ["  "]},
        {"kind": "maybe", "sub_questions": ["a"]},
        {"kind": "simple", "sub_questions": ["a"], "x": 1},
    ):
        with pytest.raises(ValidationError):
            Plan.model_validate(bad)
