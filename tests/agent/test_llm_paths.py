"""Deep mode with a scripted chat-completions server: LLM plans and grades, validated, retried once,
then the rule-based fallback (recorded in the trace); budgets; LLM routing and follow-ups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.agent.graph import DeepPipeline
from lore.agent.llm import ChatLLM
from lore.answer.generators.openai_chat import OpenAIChatGenerator
from lore.answer.prompt import NOT_COVERED
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from tests.agent.conftest import finish, statuses
from tests.agent.llm_server import FakeServer, completion, json_completion, serve, system_prompts
from tests.answer.chat_server import answer, reply

Q = "报销需要什么材料？年假怎么申请？"
GOOD_GRADE = {"relevant": [1], "sufficient": True, "consistent": True, "missing": "", "reason": "answers it"}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as state:
        yield state


def pipeline(lore: Lore, server: FakeServer, **agent: object) -> DeepPipeline:
    settings = lore.settings.model_copy(update={"agent": lore.settings.agent.model_copy(update=agent)})
    llm = ChatLLM(model="planner", base_url=server.url, max_retries=0, timeout_s=10)
    return DeepPipeline(lore.retriever("hb"), lore.generator("hb"), settings, llm=llm)


def run(lore: Lore, p: DeepPipeline, question: str = Q, **kw: object) -> tuple[list, dict]:
    events = list(p.run(question, lore.scoped("hb", SearchOptions()), **kw))  # type: ignore[arg-type]
    return events, finish(events)


def test_llm_plan_and_grades_are_used(lore: Lore, server: FakeServer) -> None:
    server.script = [
        json_completion(
            {
                "kind": "multi-hop",
                "sub_questions": ["报销材料有哪些？", "如何申请年假？"],
                "reasoning": "two facts",
            }
        ),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server))
    assert end["plan"]["source"] == "llm" and [s["question"] for s in end["sub_questions"]] == [
        "报销材料有哪些？",
        "如何申请年假？",
    ]
    grades = statuses(events, "grade")
    assert [g["source"] for g in grades] == ["llm", "llm"] and all(g["consistent"] for g in grades)
    assert "Plan retrieval" in system_prompts(server)[0] and "Grade passages" in system_prompts(server)[1]
    assert '<passage n="1">' in server.requests[1]["messages"][1]["content"]
    assert server.requests[0]["stream"] is False and end["budget"]["tokens_used"] == 120


def test_llm_grade_of_inconsistent_passages_is_noted_in_the_answer(lore: Lore, server: FakeServer) -> None:
    clash = {**GOOD_GRADE, "consistent": False, "reason": "two passages give different lists"}
    server.script = [
        json_completion(
            {
                "kind": "multi-hop",
                "sub_questions": ["报销材料有哪些？", "如何申请年假？"],
                "reasoning": "two facts",
            }
        ),
        json_completion(clash),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server))
    first, second = end["sub_questions"]
    assert first["consistent"] is False and first["conflicts"] == [] and second["consistent"] is True
    assert statuses(events, "grade")[0]["consistent"] is False
    assert end["answer"].endswith("注意：资料对「报销材料有哪些」的说法不一致，请核对哪份文件是现行的。")


def test_invalid_plan_is_retried_once_then_rules_decide(lore: Lore, server: FakeServer) -> None:
    server.script = [
        completion("I think there are two questions here."),
        json_completion({"kind": "several", "sub_questions": []}),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server))
    plan = statuses(events, "plan")[0]
    assert plan["source"] == "rules" and plan["sub_questions"] == ["报销需要什么材料？", "年假怎么申请？"]
    assert plan["notes"][0].startswith("Plan: invalid reply on attempt 1")
    assert "attempt 2" in plan["notes"][1] and "kind" in plan["notes"][1]
    assert plan["notes"][2] == "Plan: still invalid after a retry; using rules"
    retry = server.requests[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "invalid" in retry[-1]["content"]
    assert end["trace"][1]["notes"] == plan["notes"] and not end["refused"]


def test_invalid_then_valid_plan(lore: Lore, server: FakeServer) -> None:
    good = {"kind": "comparison", "sub_questions": ["LF-200的载重", "LF-500的载重"], "reasoning": "compare"}
    server.script = [
        completion('```json\n{"kind": "comparison"}\n```'),
        json_completion(good),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server), "LF-200和LF-500哪个载重大？")
    plan = statuses(events, "plan")[0]
    assert plan["source"] == "llm" and len(plan["notes"]) == 1 and "sub_questions" in plan["notes"][0]
    assert end["kind"] == "comparison" and "LF-500 Mover" in end["answer"]


def test_invalid_grade_falls_back_to_score_thresholds(lore: Lore, server: FakeServer) -> None:
    server.script = [
        json_completion({"kind": "multi-hop", "sub_questions": ["报销需要什么材料？", "年假怎么申请？"]}),
        completion("yes"),
        json_completion({"sufficient": "maybe"}),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server))
    grades = statuses(events, "grade")
    assert grades[0]["source"] == "rules" and grades[0]["sufficient"]
    assert grades[0]["notes"][-1] == "Grade: still invalid after a retry; using rules"
    assert grades[1]["source"] == "llm" and end["not_covered"] == []


def test_llm_grade_suggests_the_next_query(lore: Lore, server: FakeServer) -> None:
    not_yet = {"relevant": [], "sufficient": False, "missing": "年假 申请 流程 OA", "reason": "about pay"}
    server.script = [
        json_completion({"kind": "multi-hop", "sub_questions": ["报销需要什么材料？", "年假怎么申请？"]}),
        json_completion(GOOD_GRADE),
        json_completion(not_yet),
        json_completion(GOOD_GRADE),
    ]
    events, end = run(lore, pipeline(lore, server))
    rewrite = statuses(events, "rewrite")
    assert rewrite == [
        {
            "stage": "rewrite",
            "round": 2,
            "sub_question": 1,
            "query": "年假 申请 流程 OA",
            "strategy": "llm suggestion",
        }
    ]
    assert end["rounds"] == 2 and end["sub_questions"][1]["query"] == "年假 申请 流程 OA"
    assert len(server.requests) == 4  # plan, two grades in round 1, one in round 2


def test_token_budget_skips_llm_steps(lore: Lore, server: FakeServer) -> None:
    events, end = run(lore, pipeline(lore, server, token_budget=100))
    assert server.requests == []  # every step was refused before calling
    plan = statuses(events, "plan")[0]
    assert plan["source"] == "rules" and "token budget of 100 spent" in plan["notes"][0]
    assert {g["source"] for g in statuses(events, "grade")} == {"rules"} and not end["refused"]


def test_llm_says_simple_routes_to_fast(lore: Lore, server: FakeServer) -> None:
    server.script = [json_completion({"kind": "simple", "sub_questions": ["报销需要什么材料？"]})]
    _, end = run(lore, pipeline(lore, server), "报销要准备的材料和单据")
    assert end["mode"] == "fast" and "发票原件" in end["answer"] and len(server.requests) == 1


def test_follow_up_rewritten_by_the_llm(lore: Lore, server: FakeServer) -> None:
    p = pipeline(lore, server)
    server.script = [json_completion({"kind": "simple", "sub_questions": ["LF-200的保修期多久？"]})]
    run(lore, p, "LF-200的保修期多久？", session_id="t")
    server.script = [
        completion("LF-500的保修期多久？"),
        json_completion({"kind": "simple", "sub_questions": ["LF-500的保修期多久？"]}),
    ]
    events, end = run(lore, p, "那LF-500呢？", session_id="t")
    assert statuses(events, "understand")[0]["standalone"] == "LF-500的保修期多久？"
    assert "LF-200的保修期多久？" in server.requests[1]["messages"][1]["content"]  # history was sent
    assert "LF-500" in end["answer"]


def llm_answering(lore: Lore, server: FakeServer) -> DeepPipeline:
    """Deep mode with the LLM for planning/grading and the streaming chat generator for the answer."""
    llm = ChatLLM(model="planner", base_url=server.url, max_retries=0, timeout_s=10)
    generator = OpenAIChatGenerator(model="writer", base_url=server.url, max_retries=0, timeout_s=10)
    return DeepPipeline(lore.retriever("hb"), generator, lore.settings, llm=llm)


def test_llm_generation_answers_every_part_from_all_passages(lore: Lore, server: FakeServer) -> None:
    server.script = [
        json_completion({"kind": "multi-hop", "sub_questions": ["报销需要什么材料？", "年假怎么申请？"]}),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
        answer("报销须提交发票原件、费用明细单和审批单[1]。", "年假在 OA 系统中申请[2]。"),
    ]
    events, end = run(lore, llm_answering(lore, server))
    prompt = server.requests[-1]["messages"][1]["content"]
    assert (
        "Answer each part:\n1. 报销需要什么材料？\n2. 年假怎么申请？" in prompt
        and '<passage n="2">' in prompt
    )
    assert server.requests[-1]["stream"] is True
    assert [t.data["text"] for t in events if t.type == "token"] == [
        "报销须提交发票原件、费用明细单和审批单[1]。",
        "年假在 OA 系统中申请[2]。",
    ]
    assert [c["n"] for c in end["citations"]] == [1, 2] and not end["refused"]
    assert end["citations"][0]["text"] != end["citations"][1]["text"]


def test_llm_saying_not_covered_is_a_refusal(lore: Lore, server: FakeServer) -> None:
    server.script = [
        json_completion({"kind": "multi-hop", "sub_questions": ["报销需要什么材料？", "年假怎么申请？"]}),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
        answer(NOT_COVERED),
    ]
    _, end = run(lore, llm_answering(lore, server))
    assert end["refused"] and end["citations"] == [] and "知识库中没有找到" in end["answer"]


def test_generation_failure_is_an_error_event(lore: Lore, server: FakeServer) -> None:
    server.script = [
        json_completion({"kind": "multi-hop", "sub_questions": ["报销需要什么材料？", "年假怎么申请？"]}),
        json_completion(GOOD_GRADE),
        json_completion(GOOD_GRADE),
        reply(400, {"error": "bad model"}),
    ]
    _, end = run(lore, llm_answering(lore, server))
    assert end["stage"] == "generate" and "HTTP 400" in end["message"] and end["trace_id"]


def test_a_client_that_leaves_stops_the_loop_and_its_llm_calls(lore: Lore, server: FakeServer) -> None:
    import threading
    import time

    arrived = threading.Event()

    def held_plan(h) -> None:  # type: ignore[no-untyped-def]
        arrived.set()
        server.gate.wait(10)  # the plan call is in flight when the client goes away
        json_completion(
            {
                "kind": "multi-hop",
                "sub_questions": ["报销材料有哪些？", "如何申请年假？"],
                "reasoning": "two facts",
            }
        )(h)

    server.script = [held_plan, json_completion(GOOD_GRADE), json_completion(GOOD_GRADE)]
    events = pipeline(lore, server).run(Q, lore.scoped("hb", SearchOptions()))
    assert next(events).type == "status"
    # The first status comes before the plan call: close only once that call is in flight (not by timing).
    assert arrived.wait(30)
    events.close()  # the client disconnected
    server.gate.set()
    deadline = time.monotonic() + 20
    while any(t.name == "lore-deep" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "lore-deep" for t in threading.enumerate())
    assert len(server.requests) == 1  # no grading calls after the client left
