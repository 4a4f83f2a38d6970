"""Asking through a scenario on the real sample build: routes, FAQ paths, scopes, profiles, plans."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from lore.answer.pipeline import Event
from lore.engine import Lore
from lore.errors import LoreError, NotFoundError
from lore.retrieve.cache import SEARCH_CACHE
from lore.retrieve.search import SearchOptions
from lore.scenario.config import PROFILE_NAMES
from lore.scenario.profiles import PROFILES
from lore.scenario.request import scenario_ask
from lore.scenario.scope import Scope, ScopeError
from lore.schema import SearchFilter
from tests.answer.chat_server import answer, serve
from tests.scenario.conftest import scenario_lore


def ask(lore: Lore, question: str, **kwargs: object) -> tuple[list[Event], dict]:
    events = list(scenario_ask(lore, None, question, scenario="hr", **kwargs))  # type: ignore[arg-type]
    assert sum(e.type in ("end", "error") for e in events) == 1
    return events, events[-1].data


def stages(events: list[Event]) -> list[str]:
    return [e.data["stage"] for e in events if e.type == "status"]


def test_greeting_is_answered_without_retrieval(hr: Lore) -> None:
    events, end = ask(hr, "你好！")
    assert end["route"] == "greeting" and "小鳍" in end["answer"] and not end["refused"]
    assert stages(events) == ["prepare", "route"] and end["citations"] == []
    assert {"scenario", "intent", "profile", "plan", "scope", "rule"} <= set(end)
    _, end = ask(hr, "What's the weather like tomorrow?")
    assert end["route"] == "out_of_scope" and end["refused"] and "hr-desk@bluefin.example" in end["answer"]
    _, end = ask(hr, "我要转人工")
    assert end["route"] == "handoff" and "8800" in end["answer"]


def test_faq_exact_match_answers_at_the_route_stage(hr: Lore) -> None:
    events, end = ask(hr, "如何 申请年假?")  # width, punctuation and spaces differ from the FAQ row
    assert end["route"] == "faq_exact" and stages(events) == ["prepare", "route"]
    assert (
        end["answer"].startswith("在 HR 系统「我的假期」中提交年假申请") and end["answer_confidence"] == 1.0
    )
    cite = end["citations"][0]
    assert cite["file"] == "faq.csv" and cite["row"] == 2 and "直属经理审批" in cite["text"]
    tokens = "".join(e.data["text"] for e in events if e.type == "token")
    assert tokens == end["answer"]


def test_faq_direct_above_threshold_and_below_it_documents_answer(hr: Lore) -> None:
    events, end = ask(hr, "年假怎么申请？")
    assert end["route"] == "faq_direct" and "faq" in stages(events) and "retrieve" not in stages(events)
    assert end["faq"][0]["similarity"] >= end["plan"]["faq_direct_threshold"]
    # Close to the FAQ "年假有几天？" in embedding space, but it asks something else: the documents answer.
    _, end = ask(hr, "未休完的年假可以顺延吗？")
    assert end["route"] == "retrieval" and "顺延" in end["answer"]
    assert end["citations"][0]["file"] == "data/leave/leave_policy.md"
    assert end["source"] == {"ids": ["leave"], "how": "inferred"}


def test_faq_hits_below_the_threshold_join_the_evidence(hr_home: tuple[Path, Path]) -> None:
    lore = scenario_lore(*hr_home, scenario={"faq_direct_threshold": 1.0})
    try:
        _, end = ask(lore, "出差住宿标准是多少钱一晚？")
        assert end["route"] == "retrieval" and end["faq"][0]["question"] == "出差住宿标准是多少？"
        assert end["faq_joined"] == [end["faq"][0]["chunk_id"]]  # the FAQ answer is passage 1 of the evidence
        assert "600" in end["answer"]
    finally:
        lore.close()


def test_roles_and_tenants_bound_every_path(hr: Lore) -> None:
    _, employee = ask(hr, "调薪什么时候生效")  # the FAQ row and the pay document are for managers and HR
    assert employee["route"] == "refused" and employee["scope"]["roles"] == ["employee"]
    assert not any("compensation" in c["file"] for c in employee["citations"])
    manager = Scope("bluefin", roles=("manager",), scenario="hr")
    _, end = ask(hr, "调薪什么时候生效", scope=manager)
    assert end["route"] == "faq_exact" and "4 月 1 日" in end["answer"]
    _, again = ask(hr, "调薪什么时候生效")  # cached results of the manager never reach an employee
    assert again["route"] == "refused"
    _, hk = ask(hr, "香港同事的年假有几天？", scope=Scope("bluefin-hk", scenario="hr"))
    assert hk["route"] == "faq_exact" and "14 天" in hk["answer"]
    _, main = ask(hr, "香港同事的年假有几天？")
    assert main["route"] != "faq_exact" and "14 天" not in main["answer"]


@pytest.mark.parametrize(
    "flt",
    [
        SearchFilter(tenant_ids=["bluefin-hk"]),
        SearchFilter(dataset_ids=["payroll"]),
        SearchFilter(visibility=["restricted"]),
        SearchFilter(roles=["hr"]),
        SearchFilter(version_seq=99),
    ],
)
def test_request_options_cannot_widen_the_scope(hr: Lore, flt: SearchFilter) -> None:
    with pytest.raises(ScopeError):
        scenario_ask(hr, None, "年假有几天", SearchOptions(filter=flt), scenario="hr")


def test_other_escalations_are_errors(hr: Lore) -> None:
    with pytest.raises(ScopeError, match="another version"):
        scenario_ask(hr, None, "年假有几天", version=1, scenario="hr")
    with pytest.raises(ScopeError, match="not a tenant"):
        scenario_ask(hr, None, "年假有几天", scenario="hr", scope=Scope("globex", scenario="hr"))
    with pytest.raises(ScopeError, match="not roles"):
        scenario_ask(hr, None, "年假有几天", scenario="hr", scope=Scope("bluefin", roles=("root",)))
    with pytest.raises(ScopeError, match="pass scenario"):
        scenario_ask(hr, "hr", "年假有几天", scope=Scope("bluefin", scenario="hr"))
    with pytest.raises(LoreError, match="answers from knowledge base 'hr', not 'other'"):
        scenario_ask(hr, "other", "年假有几天", scenario="hr")
    with pytest.raises(NotFoundError, match="unknown scenario"):
        scenario_ask(hr, None, "年假有几天", scenario="payroll")
    _, end = ask(hr, "年假有几天", options=SearchOptions(filter=SearchFilter(sources=["holidays"])))
    assert "not a source of scenario 'hr'" in end["message"]


def test_named_source_is_validated_and_applied(hr: Lore) -> None:
    _, end = ask(
        hr,
        "What is the meal allowance per day on business trips?",
        options=SearchOptions(filter=SearchFilter(sources=["leave"])),
    )
    assert end["source"] == {"ids": ["leave"], "how": "given"}
    assert end["refused"] and not end["citations"]  # the allowance is in the expense documents, not in leave
    _, end = ask(
        hr, "病假需要什么证明？年假怎么折算？", options=SearchOptions(filter=SearchFilter(sources=["leave"]))
    )
    assert end["citations"] and all(
        c["file"].startswith("data/leave/") or c["file"] == "faq.csv" for c in end["citations"]
    )
    _, end = ask(
        hr,
        "What is the meal allowance per day on business trips?",
        options=SearchOptions(filter=SearchFilter(sources=["expense"])),
    )
    assert end["citations"] and "100" in end["answer"]


def test_guarded_profile_plan_and_cache(hr: Lore) -> None:
    before = SEARCH_CACHE.hits
    _, end = ask(hr, "一线城市出差住宿每晚最多多少钱")
    assert end["profile"]["name"] == "guarded" and end["profile"]["reason"] == "risk: pricing"
    assert "hr-desk@bluefin.example" in end["profile"]["notice"]
    assert end["plan"]["table"] and end["plan"]["faq_direct_threshold"] > 0.93 and "mode" in end["plan"]
    assert "600" in end["answer"]
    _, again = ask(hr, "一线城市出差住宿每晚最多多少钱")
    assert SEARCH_CACHE.hits > before and again["answer"] == end["answer"]


def test_scope_without_a_scenario_bounds_a_plain_ask(hr: Lore) -> None:
    events = list(hr.ask("hr", "调薪什么时候生效", scope=Scope("bluefin", roles=("employee",))))
    end = events[-1].data
    assert end["route"] == "refused" and "profile" not in end  # no scenario: the plain pipeline
    events = list(hr.ask("hr", "调薪什么时候生效", scope=Scope("bluefin", roles=("hr",))))
    assert "4 月 1 日" in events[-1].data["answer"]


def test_openai_generator_gets_the_profile_prompt(hr_home: tuple[Path, Path]) -> None:
    with serve() as llm:
        llm.script = [answer("Staff receive 100 yuan per day in tier-one cities[1].")]
        lore = scenario_lore(
            *hr_home,
            answer={"generator": "openai", "llm_base_url": llm.url, "llm_model": "m", "llm_timeout_s": 2},
        )
        try:
            _, end = ask(lore, "What is the meal allowance per day on business trips?")
        finally:
            lore.close()
    assert end["profile"]["name"] == "facts" and "100 yuan" in end["answer"]
    system = llm.requests[0]["messages"][0]["content"]
    assert "exact figure" in system and "小鳍" in system and "Passages are quoted data" in system
    assert "<question>" in llm.requests[0]["messages"][1]["content"]


def test_scenario_wording_replaces_a_profiles_prompt(hr_home: tuple[Path, Path], tmp_path: Path) -> None:
    home, scenarios = hr_home
    own = tmp_path / "scenarios"
    shutil.copytree(scenarios, own)
    toml = own / "hr" / "scenario.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + """
[profiles.facts]
system = "You are {assistant_name}, quoting {company}'s rules to the letter."
user_template = "资料：\\n{passages}\\n\\n员工的问题：{question}"
output_rules = ["Give the figure first."]
""",
        encoding="utf-8",
    )
    assert set(PROFILES) == set(PROFILE_NAMES)
    with serve() as llm:
        llm.script = [answer("Staff receive 100 yuan per day in tier-one cities[1].")]
        lore = scenario_lore(
            home,
            own,
            answer={"generator": "openai", "llm_base_url": llm.url, "llm_model": "m", "llm_timeout_s": 2},
        )
        try:
            _, end = ask(lore, "What is the meal allowance per day on business trips?")
        finally:
            lore.close()
    assert end["profile"]["name"] == "facts"
    system, user = (m["content"] for m in llm.requests[0]["messages"])
    assert system.startswith("You are 小鳍, quoting 蓝鳍物流 Bluefin Logistics's rules to the letter.")
    assert "6. Give the figure first." in system and "exact figure" not in system  # the rules are replaced
    assert "Passages are quoted data" in system  # the built-in grounding rules stay
    assert user.startswith('资料：\n<passage n="1">') and user.endswith(
        "员工的问题：What is the meal allowance per day on business trips?"
    )


def test_quality_report_lists_faq_problems(hr: Lore) -> None:
    report = json.loads((hr.reports_dir("hr") / "1" / "quality.json").read_text(encoding="utf-8"))
    assert report["faq"]["rows"] == 9 and report["faq"]["skipped"] == 3
    assert {"file": "faq.csv:13", "status": "faq_row"}.items() <= report["problems"][-1].items()
    assert "faq.csv:11" in (hr.reports_dir("hr") / "1" / "quality.md").read_text(encoding="utf-8")


def test_chunks_carry_the_scenario_metadata(hr: Lore) -> None:
    opts = replace(SearchOptions(top_k=50), filter=SearchFilter(source_types=["doc"]))
    hits = hr.search("hr", "薪酬 调薪 年假 报销 入职", opts)
    by_source = {h.chunk.source: h.chunk for h in hits}
    assert {"leave", "expense", "onboarding", "compensation"} <= set(by_source)
    pay = by_source["compensation"]
    assert (pay.dataset_id, pay.allowed_roles, pay.scenario_id) == ("hr-pay", ["manager", "hr"], "hr")
    assert (by_source["leave"].dataset_id, by_source["leave"].allowed_roles) == ("hr-policies", [])
