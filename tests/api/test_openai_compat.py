"""The OpenAI-compatible endpoint through the official `openai` client against a real uvicorn."""

from __future__ import annotations

import re

import httpx
import openai
import pytest

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
