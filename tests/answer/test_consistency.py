"""Offline consistency (fast and deep mode): figures that differ between documents are flagged in the
grade, the trace and the answer; agreeing or figure-free documents are not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.agent.graph import DeepPipeline
from lore.answer.consistency import figures
from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from tests.agent.conftest import finish, statuses

POLICIES = {
    "travel_2023.md": "# 差旅制度（2023 版）\n\n国内出差住宿标准：一线城市每晚不超过 500 元。\n\n"
    "出差伙食补助每天 100 元，凭行程单报销。\n",
    "travel_2024.md": "# 差旅制度（2024 版）\n\n国内出差住宿标准：一线城市每晚不超过 600 元。\n\n"
    "出差伙食补助每天 100 元，凭行程单报销。\n",
    "leave.md": "# 休假制度\n\n年假需提前 3 个工作日在 OA 系统提交申请，由直属主管审批。\n",
}


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lore]:
    home = tmp_path_factory.mktemp("consistency")
    docs = home / "docs"
    docs.mkdir()
    for name, text in POLICIES.items():
        (docs / name).write_text(text, encoding="utf-8")
    lore = Lore(load_settings(home=home))
    lore.create_kb("policies")
    assert lore.ingest("policies", [docs]).count("ingested") == 3
    yield lore
    lore.close()


def ask(lore: Lore, question: str) -> tuple[dict, list]:
    pipeline = DeepPipeline(lore.retriever("policies"), lore.generator("policies"), lore.settings)
    events = list(pipeline.run(question, lore.scoped("policies", SearchOptions())))
    return finish(events), events


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("国内出差住宿标准：每晚不超过 1,200 元。", {"元": {1200.0}}),
        (
            "LF-200 Picker 载重 15 kg，保修 24 个月",
            {"kg": {15.0}, "月": {24.0}},
        ),  # the code's 200 is no figure
        ("自 2024年起，年假 5 天；满 10 年的 10 天", {"天": {5.0, 10.0}, "年": {10.0}}),  # 2024年 is a date
        ("Passwords must be 12 characters and change every 90 days", {"字符": {12.0}, "天": {90.0}}),
        ("价格 ¥300 或 $45", {"元": {300.0}, "usd": {45.0}}),
        ("ISO9001 认证与 5G 网络", {}),
    ],
)
def test_figures_keep_numbers_with_units_only(sentence: str, expected: dict) -> None:
    assert figures(sentence) == expected


def test_documents_giving_different_figures_are_flagged(policies: Lore) -> None:
    end, events = ask(policies, "一线城市出差住宿标准是多少？年假怎么申请？")
    lodging, leave = end["sub_questions"]
    assert lodging["consistent"] is False and leave["consistent"] is not False
    assert len(lodging["conflicts"]) == 1
    conflict = lodging["conflicts"][0]
    assert "500 元" in conflict and "600 元" in conflict and "2023" in conflict and "2024" in conflict
    grades = [g for g in statuses(events, "grade") if g["sub_question"] == 0]
    assert grades[-1]["consistent"] is False and grades[-1]["conflicts"] == lodging["conflicts"]
    assert "注意：资料对「一线城市出差住宿标准是多少」的说法不一致" in end["answer"]
    assert "OA" in end["answer"]  # the other part is still answered


def test_documents_agreeing_on_a_figure_are_consistent(policies: Lore) -> None:
    end, _ = ask(policies, "出差伙食补助每天多少钱？年假怎么申请？")
    meals = end["sub_questions"][0]
    assert meals["consistent"] is True and meals["conflicts"] == []
    assert "100 元" in end["answer"] and "不一致" not in end["answer"]


def test_fast_mode_notes_the_disagreement_too(policies: Lore) -> None:
    events = list(policies.ask("policies", "一线城市出差住宿标准是多少？"))
    end = events[-1].data
    assert end["consistent"] is False and "600 元" in end["conflicts"][0] and "500 元" in end["conflicts"][0]
    assert "500 元[" in end["answer"] and "600 元[" in end["answer"]  # both figures, each cited
    assert end["answer"].endswith("请核对哪份文件是现行的。")
    streamed = "".join(e.data["text"] for e in events if e.type == "token")
    assert streamed.replace(" ", "") == end["answer"].replace(" ", "")
    agree = list(policies.ask("policies", "出差伙食补助每天多少钱？"))[-1].data
    assert agree["consistent"] is True and agree["conflicts"] == [] and "不一致" not in agree["answer"]
