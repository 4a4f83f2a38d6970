"""Deep mode offline on the real handbook KB: short-cut, decomposition, retry, round limit, refusal,
budget, scope, sessions."""

from __future__ import annotations

import re

from lore.agent.graph import DeepPipeline
from lore.answer.pipeline import AskContext
from lore.config import Settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from lore.retrieve.semantic_cache import SemanticCache
from lore.schema import SearchFilter
from tests.agent.conftest import finish, statuses


def deep(lore: Lore, **agent: object) -> DeepPipeline:
    settings = lore.settings.model_copy(update={"agent": lore.settings.agent.model_copy(update=agent)})
    return DeepPipeline(lore.retriever("hb"), lore.generator("hb"), settings)


def opts(lore: Lore, **kw: object) -> SearchOptions:
    return lore.scoped("hb", SearchOptions(**kw))  # type: ignore[arg-type]


def fast_keys(lore: Lore) -> set[str]:
    return set(AskContext("q", SearchOptions()).result(lore.settings.answer))


def test_simple_question_short_cuts_to_the_fast_pipeline(lore: Lore) -> None:
    events = list(deep(lore).run("报销需要什么材料？", opts(lore)))
    end = finish(events)
    assert end["mode"] == "fast" and end["rounds"] == 0 and not end["refused"]
    assert statuses(events, "route") == [{"stage": "route", "route": "fast", "reason": "simple question"}]
    assert statuses(events, "retrieve") == [{"stage": "retrieve"}]  # the fast pipeline's own stage
    assert "发票原件" in end["answer"] and fast_keys(lore) <= set(end)
    assert [s["stage"] for s in end["trace"]] == ["understand", "plan", "route"]


def test_multi_part_question_answers_every_part_with_citations(lore: Lore) -> None:
    events = list(deep(lore).run("报销需要什么材料？年假怎么申请？", opts(lore)))
    end = finish(events)
    assert end["mode"] == "deep" and end["kind"] == "multi-hop" and end["rounds"] == 1
    assert [s["question"] for s in end["sub_questions"]] == ["报销需要什么材料？", "年假怎么申请？"]
    assert all(s["sufficient"] for s in end["sub_questions"]) and end["not_covered"] == []
    assert "发票原件" in end["answer"] and "OA" in end["answer"]
    assert {int(n) for n in re.findall(r"\[(\d+)\]", end["answer"])} == {c["n"] for c in end["citations"]}
    files = {c["file"].rsplit("/", 1)[-1] for c in end["citations"]}
    assert files == {"employee_handbook.md"} and len(end["citations"]) >= 2
    tokens = "".join(e.data["text"] for e in events if e.type == "token")
    assert re.sub(r"\s", "", tokens) == re.sub(r"\s", "", end["answer"])
    assert fast_keys(lore) | {"mode", "rounds", "sub_questions", "trace"} <= set(end)
    assert [s["sub_question"] for s in statuses(events, "retrieve")] == [0, 1]
    assert [s["stage"] for s in end["trace"]][:2] == ["understand", "plan"]
    assert 0 < end["answer_confidence"] <= 1 and end["verification"]


def test_comparison_retrieves_each_side(lore: Lore) -> None:
    end = finish(list(deep(lore).run("对比LF-200和LF-500的载重", opts(lore))))
    assert end["kind"] == "comparison" and end["not_covered"] == []
    assert "LF-200 Picker" in end["answer"] and "LF-500 Mover" in end["answer"]
    rows = {c["row"] for c in end["citations"] if c["sheet"] == "Robots"}
    assert len(rows) >= 2  # one table row per side


def test_missing_part_retries_to_the_round_limit_then_says_what_is_not_covered(lore: Lore) -> None:
    events = list(deep(lore).run("报销需要什么材料？公司的股票代码是多少？", opts(lore)))
    end = finish(events)
    assert end["rounds"] == 3 and end["verdict"] == "rounds exhausted"
    rewrites = statuses(events, "rewrite")
    assert [r["round"] for r in rewrites] == [2, 3] and all(r["sub_question"] == 1 for r in rewrites)
    queries = [r["query"] for r in statuses(events, "retrieve") if r["sub_question"] == 1]
    assert len(queries) == 3 and len(set(queries)) == 3  # every round searched something new
    assert [v["verdict"] for v in statuses(events, "verdict")] == ["retry", "retry", "rounds exhausted"]
    assert end["not_covered"] == ["公司的股票代码是多少？"] and not end["refused"]
    assert (
        "发票原件" in end["answer"] and "知识库中没有找到以下内容：「公司的股票代码是多少」" in end["answer"]
    )
    assert end["evidence_confidence"] < 0.9  # a missing part costs confidence


def test_round_limit_is_a_setting(lore: Lore) -> None:
    events = list(deep(lore, max_rounds=1).run("报销需要什么材料？公司的股票代码是多少？", opts(lore)))
    end = finish(events)
    assert end["rounds"] == 1 and not statuses(events, "rewrite") and end["verdict"] == "rounds exhausted"


def test_nothing_found_is_a_refusal(lore: Lore) -> None:
    end = finish(list(deep(lore).run("公司的股票代码是多少？董事会有几名独立董事？", opts(lore))))
    assert end["refused"] and end["citations"] == [] and end["route"] == "refused"
    assert "知识库中没有找到" in end["answer"] and len(end["not_covered"]) == 2 and end["rounds"] == 3


def test_time_budget_stops_the_loop(lore: Lore) -> None:
    events = list(deep(lore, time_budget_s=1e-6).run("报销需要什么材料？公司的股票代码是多少？", opts(lore)))
    end = finish(events)
    assert end["verdict"] == "budget spent" and end["rounds"] == 1 and "发票原件" in end["answer"]


def test_search_scope_bounds_every_sub_question(lore: Lore) -> None:
    scope = SearchFilter(source_types=["table_row"])  # the FAQ csv and the price list
    events = list(deep(lore).run("工资每月几号发放？访客如何连接办公室 Wi-Fi？", opts(lore, filter=scope)))
    end = finish(events)
    ids = [c["chunk_id"] for c in end["candidates"]]
    chunks = lore.store(lore.catalog.get_kb("hb")).get(ids)
    assert chunks and {c.source_type for c in chunks} == {"table_row"}
    assert "LF-Guest" in end["answer"] and "10 日" in end["answer"]
    none = SearchFilter(tenant_ids=["someone-else"])
    end = finish(
        list(deep(lore).run("工资每月几号发放？访客如何连接办公室 Wi-Fi？", opts(lore, filter=none)))
    )
    assert end["refused"] and end["candidates"] == []


def test_session_keeps_history_and_carries_a_follow_up(lore: Lore) -> None:
    pipeline = deep(lore)
    finish(list(pipeline.run("LF-200的保修期多久？", opts(lore), session_id="s1")))
    events = list(pipeline.run("那LF-500呢？", opts(lore), session_id="s1"))
    end = finish(events)
    understand = statuses(events, "understand")[0]
    assert "保修期" in understand["standalone"] and "LF-500" in understand["standalone"]
    assert "LF-200" not in understand["standalone"].replace("那LF-500呢", "")
    assert "LF-500" in end["answer"]
    turns = pipeline.history("s1")
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[2]["content"] == "那LF-500呢？"
    assert pipeline.history("other") == []  # sessions do not share turns


def test_bad_question_is_an_error_event(lore: Lore) -> None:
    end = finish(list(deep(lore).run("   ", opts(lore))))
    assert end["message"] == "question: empty"
    settings = Settings(home=lore.settings.home, answer={"max_question_chars": 10})
    pipeline = DeepPipeline(lore.retriever("hb"), lore.generator("hb"), settings)
    assert "limit 10" in finish(list(pipeline.run("报销需要什么材料？年假怎么申请？", opts(lore))))["message"]


def test_caller_history_overrides_the_session_and_sessions_stay_short(lore: Lore) -> None:
    pipeline = deep(lore)
    given = [
        {"role": "user", "content": "LF-200的保修期多久？"},
        {"role": "assistant", "content": "24 个月。"},
    ]
    events = list(pipeline.run("那LF-500呢？", opts(lore), history=given))
    assert "保修期" in statuses(events, "understand")[0]["standalone"]
    for k in range(12):
        finish(list(pipeline.run(f"报销需要什么材料？{k}", opts(lore), session_id="long")))
    turns = pipeline.history("long")
    assert len(turns) == 20 and turns[-2]["content"] == "报销需要什么材料？11"


def test_semantic_cache_serves_repeat_rounds_only_within_scope(lore: Lore) -> None:
    cache = SemanticCache(threshold=0.97)
    kb = lore.catalog.get_kb("hb")
    pipeline = DeepPipeline(
        lore.retriever("hb"),
        lore.generator("hb"),
        lore.settings,
        semantic_cache=cache,
        cache_epoch=lore.catalog.cache_epoch(kb.id),
        namespace=kb.id,
    )
    q = "报销需要什么材料？年假怎么申请？"
    first = list(pipeline.run(q, opts(lore)))
    again = list(pipeline.run(q, opts(lore)))
    assert [s["cached"] for s in statuses(first, "retrieve")] == [False, False]
    assert [s["cached"] for s in statuses(again, "retrieve")] == [True, True]
    assert finish(again)["answer"] == finish(first)["answer"]
    scoped = list(pipeline.run(q, opts(lore, filter=SearchFilter(tenant_ids=["someone-else"]))))
    # Another scope never gets the first scope's candidates (later rounds may reuse their own scope's).
    assert [s["cached"] for s in statuses(scoped, "retrieve")][:2] == [False, False]
    assert finish(scoped)["refused"] and finish(scoped)["candidates"] == []


def test_a_part_whose_words_the_kb_holds_nowhere_is_not_covered(lore: Lore) -> None:
    question = "What is the refund window? How do I choose a fishing float for the LF-200?"
    events = list(deep(lore, max_rounds=1).run(question, opts(lore)))
    end = finish(events)
    assert end["not_covered"] == ["How do I choose a fishing float for the LF-200?"], end
    reasons = [r for g in statuses(events, "grade") for r in g.get("reasons", [])]
    assert "the knowledge base holds these words of the question nowhere: choose, fishing, float" in reasons
