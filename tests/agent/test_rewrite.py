"""Query rewriting switches (off / on / hyde), offline and with a scripted LLM; variants merged by
chunk id."""

from __future__ import annotations

import pytest

from lore.agent.llm import ChatLLM
from lore.agent.rewrite import (
    RewritingRetriever,
    is_follow_up,
    keyword_query,
    merge_hits,
    rewrite_query,
    search_variants,
    standalone_question,
)
from lore.answer.pipeline import AskPipeline
from lore.engine import Lore
from lore.errors import LoreError
from lore.retrieve.search import SearchOptions
from lore.schema import Hit
from tests.agent.conftest import finish
from tests.agent.llm_server import completion, json_completion, serve
from tests.chunks import make_chunk

HISTORY = [
    {"role": "user", "content": "LF-200 的保修期多久？"},
    {"role": "assistant", "content": "24 个月[1]。"},
]


@pytest.mark.parametrize(
    ("question", "keywords"),
    [
        ("LF-200 的保修期多久？", "LF-200 保修期"),
        ("报销需要什么材料？", "报销 材料"),
        ("What is the refund window for the LF-200?", "LF-200 refund window"),
        ("How do I reset my VPN password?", "reset VPN password"),
    ],
)
def test_keyword_query(question: str, keywords: str) -> None:
    assert keyword_query(question) == keywords


def test_off_is_the_question_as_asked() -> None:
    rw = rewrite_query("报销需要什么材料？", "off", history=HISTORY)
    assert [v.kind for v in rw.variants] == ["original"] and rw.notes == []


def test_offline_on_and_hyde_skip_llm_steps_with_notes() -> None:
    on = rewrite_query("那LF-500呢？", "on", history=HISTORY)
    assert [(v.kind, v.text) for v in on.variants] == [
        ("original", "那LF-500呢？"),
        ("history", "LF-500 的保修期多久？ 那LF-500呢？"),
        ("keywords", "LF-500"),
    ]
    assert on.notes == [
        "standalone rewrite skipped: no LLM configured (the previous question carried over instead)",
        "multi-query skipped: no LLM configured",
    ]
    hyde = rewrite_query("What is the refund window?", "hyde")
    assert [v.kind for v in hyde.variants] == ["original", "keywords"]
    assert hyde.notes == ["HyDE skipped: no LLM configured"]
    with pytest.raises(LoreError, match="rewrite: 'off', 'on' or 'hyde', not 'fancy'"):
        rewrite_query("q", "fancy")


def test_rule_standalone_only_for_follow_ups() -> None:
    def rule(question: str, history: list[dict[str, str]]) -> tuple[str, str]:
        made = standalone_question(question, history)
        return made.query, made.method

    q = "LF-200 和 LF-500 分别适合什么样的仓库环境使用？"
    assert rule(q, HISTORY) == (q, "none")
    assert rule("报销呢？", []) == ("报销呢？", "none")
    assert rule("年假有几天？", HISTORY) == ("年假有几天？", "none")  # short, but a question of its own
    assert rule("它能延长吗？", HISTORY) == ("LF-200 的保修期多久？ 它能延长吗？", "rule")
    assert rule("那LF-500呢？", HISTORY) == (
        "LF-500 的保修期多久？ 那LF-500呢？",
        "rule",
    )  # LF-500 replaces LF-200
    assert rule("What about LF-300?", [{"role": "user", "content": "LF-200 warranty length?"}]) == (
        "LF-300 warranty length? What about LF-300?",
        "rule",
    )
    one = standalone_question(
        "那LF-500呢？", HISTORY, one_question=True
    )  # deep mode: no split at the old "？"
    assert one.query == "LF-500 的保修期多久 那LF-500呢？"


def test_llm_standalone_takes_the_first_line_and_falls_back_to_rules() -> None:
    with serve() as server:
        llm = ChatLLM(model="m", base_url=server.url, max_retries=0)
        server.script = [
            completion("LF-200 的保修期可以延长吗？\nThe user asks about extending it."),
            completion("x" * 500),
        ]
        made = standalone_question("它能延长吗？", HISTORY, llm)
        assert (made.query, made.method) == ("LF-200 的保修期可以延长吗？", "llm")
        made = standalone_question("它能延长吗？", HISTORY, llm)  # an overlong reply: the rule instead
        assert (made.query, made.method, made.note) == (
            "LF-200 的保修期多久？ 它能延长吗？",
            "rule",
            "LLM rewrite was empty or too long",
        )


@pytest.mark.parametrize(
    ("question", "follows"),
    [
        ("Can it be extended?", True),
        ("What about LF-300?", True),
        ("and their warranty?", True),
        ("那可以延长吗？", True),
        ("病假呢？", True),
        ("上述规定适用于实习生吗？", True),
        ("延长", True),
        ("Is it true that the LF-200 has a 24-month warranty?", False),
        ("Is there a limit on hotel costs?", False),
        ("It is possible to work remotely on Fridays?", False),
        ("年假有几天？", False),
        ("What is the refund window for hardware orders?", False),
    ],
)
def test_follow_up_detection(question: str, follows: bool) -> None:
    assert is_follow_up(question) is follows


def test_llm_on_and_hyde_variants() -> None:
    with serve() as server:
        llm = ChatLLM(model="m", base_url=server.url, max_retries=0)
        server.script = [
            completion("LF-500 的保修期多久？"),
            completion("not json"),
            json_completion({"queries": ["LF-500 warranty months", "LF-500 保修"]}),
        ]
        on = rewrite_query("那LF-500呢？", "on", history=HISTORY, llm=llm)
        assert [(v.kind, v.text) for v in on.variants] == [
            ("original", "那LF-500呢？"),
            ("standalone", "LF-500 的保修期多久？"),
            ("multi_query", "LF-500 warranty months"),
            ("multi_query", "LF-500 保修"),
            ("keywords", "LF-500 保修期"),
        ]
        assert len(on.notes) == 1
        assert on.notes[0].startswith("Variants: invalid reply on attempt 1 (reply: Invalid JSON")
        server.script = [completion("Hardware may be returned within 30 days of delivery for a full refund.")]
        hyde = rewrite_query("What is the refund window?", "hyde", llm=llm)
        assert [v.kind for v in hyde.variants] == ["original", "hyde", "keywords"]
        assert server.requests[-1]["messages"][1]["content"] == "What is the refund window?"


def test_variants_are_searched_in_scope_and_merged_by_chunk_id(lore: Lore) -> None:
    retriever = lore.retriever("hb")
    opts = lore.scoped("hb", SearchOptions(top_k=5))
    rw = rewrite_query("那LF-500呢？", "on", history=HISTORY)
    merged = search_variants(retriever, rw, opts)
    ids = [h.chunk.chunk_id for h in merged]
    assert len(ids) == len(set(ids)) == 5
    per_variant = [retriever.search(v.text, opts) for v in rw.variants]
    assert per_variant[1][0].chunk.chunk_id in ids  # each variant's best makes the merged list
    assert "LF-500" in merged[0].chunk.text
    assert merge_hits([per_variant[0]], 3) == per_variant[0][:3]  # one variant: unchanged


def test_rewriting_retriever_is_a_drop_in_for_the_fast_pipeline(lore: Lore) -> None:
    r = RewritingRetriever(lore.retriever("hb"), "on", history=HISTORY)
    end = finish(
        list(
            AskPipeline(r, lore.generator("hb"), lore.settings.answer).run(
                "那LF-500呢？", lore.scoped("hb", SearchOptions())
            )
        )
    )
    assert r.last is not None and [v.kind for v in r.last.variants] == ["original", "history", "keywords"]
    assert "LF-500" in end["answer"] and not end["refused"]


def _hit(chunk_id: str, parent_id: str) -> Hit:
    chunk = make_chunk(
        chunk_id=chunk_id, text=chunk_id, parent_id=parent_id, parent_text=parent_id, document_id=parent_id
    )
    return Hit(chunk, 1.0)


def test_merge_by_parent_counts_two_windows_of_one_passage_as_agreement() -> None:
    # Round 1 finds passage P through window p1, round 2 through window p2; Q is second in both.
    first = [_hit("p1", "P"), _hit("q1", "Q"), _hit("r1", "R")]
    second = [_hit("s1", "S"), _hit("q1", "Q"), _hit("p2", "P")]
    by_chunk = [h.chunk.chunk_id for h in merge_hits([first, second], 3)]
    by_parent = [h.chunk.parent_id for h in merge_hits([first, second], 3, by_parent=True)]
    assert by_chunk[0] == "q1"  # P's votes split over two chunk ids, so it loses the top
    assert by_parent == ["P", "Q", "S"]  # P, found by both rounds (ranks 1 and 3), is first again
    assert len(set(by_parent)) == 3
