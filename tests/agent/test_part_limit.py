"""Issue 34 finding 6: deep mode answered "internal error" to any question of more than 8 parts (the rule
plan was validated as an LLM reply before its parts were cut to the limit). Parts beyond the limit are
now asked together with the last part kept, on the real deep-mode path (`Lore.ask(mode="deep")`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from tests.agent.conftest import finish, statuses
from tests.agent.llm_server import FakeServer, json_completion, serve

TOPICS = [
    "annual leave",
    "sick leave",
    "expense reimbursement",
    "travel hotels",
    "the LF-200 price",
    "the LF-500 price",
    "working hours",
    "remote work",
    "the probation period",
    "business class flights",
    "meal allowances",
    "the company's founding year",
]
TWELVE = " ".join(f"What does the handbook say about {t}?" for t in TOPICS)


def deep_lore(home: Path, **answer: object) -> Lore:
    return Lore(load_settings(home=home, agent={"max_sub_questions": 8}, answer=answer))


def check_merged(events: list, end: dict) -> None:
    plan = statuses(events, "plan")[0]
    subs = plan["sub_questions"]
    assert len(subs) == 8 and subs[:7] == [f"What does the handbook say about {t}?" for t in TOPICS[:7]]
    # Parts 8-12 are searched together: every part of the question is still asked.
    assert all(t in subs[7] for t in TOPICS[7:])
    assert [s["question"] for s in end["sub_questions"]] == subs
    assert "internal error" not in str(end)


def test_twelve_parts_by_rules_are_merged_not_an_error(hb_home: Path) -> None:
    lore = deep_lore(hb_home)
    try:
        events = list(lore.ask("hb", TWELVE, mode="deep"))
    finally:
        lore.close()
    end = finish(events)
    assert events[-1].type == "end", end
    check_merged(events, end)
    assert statuses(events, "plan")[0]["source"] == "rules"
    assert "12 parts, over the limit of 8" in statuses(events, "plan")[0]["reasoning"]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as state:
        yield state


def test_an_llm_plan_of_twelve_parts_falls_back_to_merged_rules(hb_home: Path, server: FakeServer) -> None:
    too_many = {"kind": "multi-hop", "sub_questions": [f"About {t}?" for t in TOPICS], "reasoning": "12"}
    server.script = [json_completion(too_many), json_completion(too_many)]  # grades: rules (script ends)
    lore = deep_lore(hb_home, llm_base_url=server.url, llm_model="planner")
    try:
        events = list(lore.ask("hb", TWELVE, mode="deep"))
    finally:
        lore.close()
    end = finish(events)
    assert events[-1].type == "end", end
    plan = statuses(events, "plan")[0]
    assert "at most 8 items" in plan["notes"][0] and plan["notes"][-1].endswith("using rules")
    check_merged(events, end)


def test_a_long_single_question_is_one_part_not_an_error(hb_home: Path) -> None:
    question = "How many days of annual leave " + "do new employees really get " * 30 + "?"
    assert len(question) > 500  # over an LLM sub-question's limit, within answer.max_question_chars
    lore = deep_lore(hb_home)
    try:
        events = list(lore.ask("hb", question, mode="deep"))
    finally:
        lore.close()
    assert events[-1].type == "end", finish(events)
