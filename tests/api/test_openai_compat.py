"""The OpenAI-compatible endpoint through the official `openai` client against a real uvicorn."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.text.units import estimate_tokens
from tests.agent.llm_server import completion
from tests.answer.chat_server import Action, FakeServer, _chunk, events, serve
from tests.api.conftest import Keys, LiveServer


def _client(live: LiveServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key=key, max_retries=0, timeout=60)


def test_models_lists_knowledge_bases(live: LiveServer, keys: Keys) -> None:
    models = _client(live, keys.staff).models.list()
    assert [m.id for m in models.data] == ["hb"]


def test_non_streaming_answer_with_citations(live: LiveServer, keys: Keys) -> None:
    resp = _client(live, keys.staff).chat.completions.create(
        model="hb",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "What is the refund window?"},
        ],
    )
    content = resp.choices[0].message.content or ""
    assert "30 days" in content and re.search(r"\[\d+\]", content)
    citations = resp.model_extra["citations"]
    assert citations and {c["n"] for c in citations} == {int(n) for n in re.findall(r"\[(\d+)\]", content)}
    assert citations[0]["file"] and citations[0]["text"]
    assert resp.model_extra["lore"]["trace_id"] in resp.id


def test_streaming_answer_with_citations_in_final_chunk(live: LiveServer, keys: Keys) -> None:
    stream = _client(live, keys.staff).chat.completions.create(
        model="hb", messages=[{"role": "user", "content": "LF-200 的保修期多久？"}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "24" in text
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    citations = final.model_extra["citations"]
    assert citations and citations[0]["sheet"] == "Robots" and citations[0]["row"]
    assert all("citations" not in (c.model_extra or {}) for c in chunks[:-1])


def test_history_turns_rewrite_the_follow_up(live: LiveServer, keys: Keys) -> None:
    resp = _client(live, keys.staff).chat.completions.create(
        model="hb",
        messages=[
            {"role": "user", "content": "LF-200 的保修期多久？"},
            {"role": "assistant", "content": "24 个月[1]。"},
            {"role": "user", "content": [{"type": "text", "text": "那可以延长吗？"}]},
        ],
    )
    assert any("12" in c["text"] for c in resp.model_extra["citations"])
    # The earlier turn reached the search: the bare follow-up alone would cite the 12 months as well.
    trace_id = resp.model_extra["lore"]["trace_id"]
    trace = httpx.get(
        f"{live.url}/api/traces/{trace_id}", headers={"Authorization": f"Bearer {keys.staff}"}
    ).json()
    assert trace["question"] == "那可以延长吗？" and "LF-200" in trace["query"]


def test_errors_reach_the_client(live: LiveServer, keys: Keys) -> None:
    with pytest.raises(openai.AuthenticationError):
        _client(live, keys.revoked).chat.completions.create(
            model="hb", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(openai.NotFoundError, match="knowledge base 'nope' not found"):
        _client(live, keys.staff).chat.completions.create(
            model="nope", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(openai.BadRequestError, match="question"):
        _client(live, keys.staff).chat.completions.create(
            model="hb", messages=[{"role": "user", "content": " "}]
        )
    stream = _client(live, keys.staff).chat.completions.create(
        model="hb", messages=[{"role": "user", "content": " "}], stream=True
    )
    with pytest.raises(openai.APIError, match="question"):
        list(stream)


REFUND = "What is the refund window?"


def _content_chunks(chunks: list) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


def test_a_multi_sentence_answer_streams_in_pieces_that_join_to_the_answer(
    live: LiveServer, keys: Keys
) -> None:
    client = _client(live, keys.staff)
    whole = client.chat.completions.create(model="hb", messages=[{"role": "user", "content": REFUND}])
    content = whole.choices[0].message.content or ""
    assert len(re.findall(r"[.!?](?:\[\d+\])*\s", content)) >= 1  # more than one sentence
    chunks = list(
        client.chat.completions.create(
            model="hb", messages=[{"role": "user", "content": REFUND}], stream=True
        )
    )
    pieces = _content_chunks(chunks)
    assert len(pieces) >= 5 and "".join(pieces) == content
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop" and final.choices[0].delta.content is None
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert final.model_extra["citations"] == whole.model_extra["citations"]
    assert all(c.usage is None for c in chunks)  # no usage without stream_options.include_usage


def test_a_refusal_streams_in_pieces_too(live: LiveServer, keys: Keys) -> None:
    client = _client(live, keys.staff)
    messages = [{"role": "user", "content": "What is the meaning of life?"}]
    whole = client.chat.completions.create(model="hb", messages=messages)
    assert whole.model_extra["lore"]["refused"]
    chunks = list(client.chat.completions.create(model="hb", messages=messages, stream=True))
    pieces = _content_chunks(chunks)
    assert len(pieces) > 1 and "".join(pieces) == whole.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].model_extra["lore"]["refused"]


def test_usage_counts_the_messages_and_the_answer(live: LiveServer, keys: Keys) -> None:
    client = _client(live, keys.staff)
    short = client.chat.completions.create(model="hb", messages=[{"role": "user", "content": REFUND}])
    usage = short.usage
    assert usage and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.completion_tokens == estimate_tokens(short.choices[0].message.content or "")
    assert short.model_extra["lore"]["usage"] == "estimated"
    system = "Answer briefly, and cite your sources."
    longer = client.chat.completions.create(
        model="hb", messages=[{"role": "system", "content": system}, {"role": "user", "content": REFUND}]
    )
    assert longer.choices[0].message.content == short.choices[0].message.content
    assert longer.usage and longer.usage.prompt_tokens == usage.prompt_tokens + estimate_tokens(system)
    assert longer.usage.completion_tokens == usage.completion_tokens


def test_include_usage_sends_one_usage_chunk_last(live: LiveServer, keys: Keys) -> None:
    client = _client(live, keys.staff)
    messages = [{"role": "user", "content": REFUND}]
    whole = client.chat.completions.create(model="hb", messages=messages)
    chunks = list(
        client.chat.completions.create(
            model="hb", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    with_usage = [c for c in chunks if c.usage is not None]
    assert len(with_usage) == 1 and with_usage[0] is chunks[-1]
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-2].model_extra["citations"]
    assert "".join(_content_chunks(chunks)) == whole.choices[0].message.content


# --- an LLM generator: a local server speaking the chat-completions protocol stands in for the paid one ---

UPSTREAM_USAGE = {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338}
LLM_PIECES = (
    "Hardware can be returned ",
    "within 30 days of delivery[1]. ",
    "The refund is paid ",
    "to the original payment method[1].",
)


def _streamed(*pieces: str, usage: dict[str, int] | None) -> Action:
    """A streamed answer ending, like OpenAI's with `include_usage`, in a usage chunk (when given)."""
    data = [_chunk(), *(_chunk(p) for p in pieces), _chunk(finish="stop")]
    if usage is not None:
        data.append(
            json.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        )
    return events(*data, "[DONE]")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeServer]:
    with serve() as state:
        yield state


@pytest.fixture(scope="module")
def llm_live(api_home: Path, keys: Keys, upstream: FakeServer) -> Iterator[LiveServer]:
    answer = {"generator": "openai", "llm_model": "upstream-llm", "llm_base_url": upstream.url}
    lore = Lore(load_settings(home=api_home, api={"rate_limit_per_minute": 0}, answer=answer))
    with LiveServer(create_app(lore)) as server:
        yield server
    lore.close()


def _script(server: FakeServer, *actions: Action) -> None:
    server.requests.clear()
    server.script = list(actions)


def test_the_llm_endpoints_usage_is_passed_through(
    llm_live: LiveServer, keys: Keys, upstream: FakeServer
) -> None:
    client = _client(llm_live, keys.staff)
    messages = [{"role": "user", "content": REFUND}]
    _script(upstream, _streamed(*LLM_PIECES, usage=UPSTREAM_USAGE))
    whole = client.chat.completions.create(model="hb", messages=messages)
    assert whole.choices[0].message.content == "".join(LLM_PIECES)
    assert whole.usage and whole.usage.model_dump(exclude_none=True) == UPSTREAM_USAGE
    assert whole.model_extra["lore"]["usage"] == "llm"
    assert upstream.requests[0]["stream_options"] == {"include_usage": True}

    _script(upstream, _streamed(*LLM_PIECES, usage=UPSTREAM_USAGE))
    chunks = list(
        client.chat.completions.create(
            model="hb", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    assert _content_chunks(chunks) == list(LLM_PIECES)  # the LLM's deltas as they came
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert [c for c in chunks if c.usage is not None] == [chunks[-1]]


def test_usage_of_every_llm_call_is_summed(llm_live: LiveServer, keys: Keys, upstream: FakeServer) -> None:
    rewrite = completion("What is the refund window for returned hardware?", total_tokens=40)
    client = _client(llm_live, keys.staff)
    messages = [
        {"role": "user", "content": "Can I return a robot?"},
        {"role": "assistant", "content": "Yes [1]."},
        {"role": "user", "content": "Within how long?"},
    ]
    _script(upstream, rewrite, _streamed(*LLM_PIECES, usage=UPSTREAM_USAGE))
    resp = client.chat.completions.create(model="hb", messages=messages)
    assert len(upstream.requests) == 2 and upstream.requests[0]["stream"] is False  # rewrite, then answer
    assert resp.usage and (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (321 + 20, 17 + 20)
    assert resp.usage.total_tokens == 338 + 40
    _script(upstream, rewrite, _streamed(*LLM_PIECES, usage=UPSTREAM_USAGE))
    chunks = list(
        client.chat.completions.create(
            model="hb",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert len(upstream.requests) == 2 and chunks[-1].usage == resp.usage


def test_an_llm_endpoint_without_usage_gets_estimated_usage(
    llm_live: LiveServer, keys: Keys, upstream: FakeServer
) -> None:
    _script(upstream, _streamed(*LLM_PIECES, usage=None))
    resp = _client(llm_live, keys.staff).chat.completions.create(
        model="hb", messages=[{"role": "user", "content": REFUND}]
    )
    content = resp.choices[0].message.content or ""
    assert resp.model_extra["lore"]["usage"] == "estimated"
    assert resp.usage and resp.usage.prompt_tokens == estimate_tokens(REFUND)
    assert resp.usage.completion_tokens == estimate_tokens(content) > 0
