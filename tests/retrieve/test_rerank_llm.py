"""The `llm` reranker through the configured chat endpoint (a local server speaking the OpenAI
chat-completions protocol): listwise and pointwise scores reorder the candidates, the token budget cuts
how many are scored, and unusable replies keep the first-stage order with a note."""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from tests.agent.llm_server import completion, json_completion
from tests.answer.chat_server import Action, FakeServer, reply, serve
from tests.retrieve.rerank_server import overlap

QUERY = "How many days of annual leave do employees get?"
PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def scoring(state: FakeServer, mode: str) -> Action:
    """Score the passages of the request by shared words with the query, as a model would reply."""

    def act(h: BaseHTTPRequestHandler) -> None:
        prompt = state.requests[-1]["messages"][-1]["content"]
        query = prompt.split("\n", 1)[0].removeprefix("Query: ")
        if mode == "listwise":
            body = {"scores": [round(10 * overlap(query, t), 3) for _, t in PASSAGE.findall(prompt)]}
        else:
            body = {"score": round(10 * overlap(query, prompt.split("Passage: ", 1)[1]), 3)}
        json_completion(body)(h)

    return act


@pytest.fixture
def chat() -> Iterator[FakeServer]:
    with serve() as state:
        yield state


def make(hb_home: Path, chat: FakeServer, **rerank: object) -> Lore:
    return Lore(
        load_settings(
            home=hb_home,
            answer={"llm_base_url": chat.url, "llm_model": "m"},
            rerank={"provider": "llm", "rerank_k": 6, **rerank},
        )
    )


def first_stage(lore: Lore) -> list[str]:
    return [h.chunk.chunk_id for h in lore.search("hb", QUERY, SearchOptions(top_k=6, rerank=False))]


@pytest.mark.parametrize("mode", ["listwise", "pointwise"])
def test_scores_from_the_chat_model_reorder_the_candidates(
    hb_home: Path, chat: FakeServer, mode: str
) -> None:
    lore = make(hb_home, chat, llm_mode=mode)
    try:
        before = first_stage(lore)
        chat.script.extend(scoring(chat, mode) for _ in range(6))
        r = lore.retriever("hb")
        hits = r.search(QUERY, lore.search_options(top_k=6))
        assert len(chat.requests) == (1 if mode == "listwise" else len(before))
        scores = [h.rerank_score for h in hits]
        assert all(s is not None and 0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
        expected = sorted(
            (round(overlap(QUERY, " ".join(h.chunk.text.split())[:400]), 4) for h in hits), reverse=True
        )
        assert [round(s, 4) for s in scores] == pytest.approx(expected, abs=1e-3)
        assert {h.chunk.chunk_id for h in hits} == set(before)
        assert r.last_rerank is not None and r.last_rerank.provider == "llm" and not r.last_rerank.note
    finally:
        lore.close()


def test_token_budget_scores_only_the_top_candidates(hb_home: Path, chat: FakeServer) -> None:
    lore = make(hb_home, chat, llm_token_budget=300, llm_passage_chars=200)
    try:
        before = first_stage(lore)
        chat.script.append(scoring(chat, "listwise"))
        r = lore.retriever("hb")
        hits = r.search(QUERY, lore.search_options(top_k=6))
        sent = len(PASSAGE.findall(chat.requests[-1]["messages"][-1]["content"]))
        assert 0 < sent < len(before)
        assert [h.chunk.chunk_id for h in hits][sent:] == before[sent:]
        assert all(h.rerank_score is None for h in hits[sent:])
        assert r.last_rerank is not None and "token budget" in r.last_rerank.note
    finally:
        lore.close()


@pytest.mark.parametrize(
    "script, reason",
    [
        ([completion("The first passage is the most relevant.")], "not JSON"),
        ([json_completion({"scores": [5, 4]})], "should hold"),
        ([json_completion({"scores": [11] * 6})], "0 to 10"),
        ([reply(500, {"error": "overloaded"})] * 3, "LLM call failed"),
    ],
)
def test_unusable_replies_keep_the_first_stage_order(
    hb_home: Path, chat: FakeServer, script: list[Action], reason: str
) -> None:
    lore = make(hb_home, chat)
    try:
        before = first_stage(lore)
        chat.script.extend(script)
        r = lore.retriever("hb")
        hits = r.search(QUERY, lore.search_options(top_k=6))
        assert [h.chunk.chunk_id for h in hits] == before
        assert r.last_rerank is not None and "first-stage order kept" in r.last_rerank.note
        assert reason in r.last_rerank.note
    finally:
        lore.close()


def test_llm_provider_without_a_chat_endpoint_is_a_config_error(hb_home: Path) -> None:
    from lore.errors import ConfigError

    lore = Lore(load_settings(home=hb_home, rerank={"provider": "llm"}))
    try:
        with pytest.raises(ConfigError, match="chat endpoint"):
            lore.retriever("hb")
    finally:
        lore.close()
