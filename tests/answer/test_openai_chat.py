"""OpenAIChatGenerator against a real local HTTP server speaking the chat-completions SSE protocol."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from lore.answer.generators.base import GenerationError, Passage, get_generator
from lore.answer.generators.openai_chat import USAGE, OpenAIChatGenerator, UsageMeter
from lore.answer.prompt import NOT_COVERED
from tests.answer.chat_server import Action, FakeServer, _chunk, answer, events, reply, serve

PASSAGES = [Passage(1, "Refunds are accepted within 30 days."), Passage(2, "Shipping takes 5 days.")]
QUESTION = "How long do I have to return an item?"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve() as state:
        yield state


@pytest.fixture
def make(server: FakeServer) -> Iterator[Callable[..., OpenAIChatGenerator]]:
    made: list[OpenAIChatGenerator] = []

    def factory(**options: Any) -> OpenAIChatGenerator:
        settings = {"model": "test-llm", "base_url": server.url, "backoff_s": 0.01, **options}
        made.append(OpenAIChatGenerator(**settings))
        return made[-1]

    yield factory
    for gen in made:
        gen.close()


def test_streams_deltas_incrementally(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [answer("Returns are ", "accepted within ", "30 days [1].", gate_after=1, state=server)]
    deltas = make().stream(QUESTION, PASSAGES)
    first = next(deltas)  # the server holds the rest until the gate opens
    assert first == "Returns are "
    server.gate.set()
    assert first + "".join(deltas) == "Returns are accepted within 30 days [1]."
    assert server.notes == []


@pytest.mark.parametrize("status", [503, 429])
def test_retries_transient_status_before_first_token(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], status: int
) -> None:
    server.script = [reply(status, {"error": {"message": "busy"}}, Retry_After="0"), answer("Yes [1].")]
    assert list(make().stream(QUESTION, PASSAGES)) == ["Yes [1]."]
    assert len(server.requests) == 2


def test_gives_up_after_max_retries(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [reply(503, {"error": "loading"}) for _ in range(3)]
    with pytest.raises(GenerationError, match=r"HTTP 503.*gave up after 2 attempts"):
        list(make(max_retries=1).stream(QUESTION, PASSAGES))
    assert len(server.requests) == 2


def test_client_error_fails_at_once(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [reply(400, {"error": {"message": "context length exceeded"}})]
    with pytest.raises(GenerationError) as info:
        list(make(api_key="sk-secret").stream(QUESTION, PASSAGES))
    message = str(info.value)
    assert "HTTP 400" in message and "context length exceeded" in message
    assert f"{server.url}/chat/completions" in message
    assert "sk-secret" not in message
    assert len(server.requests) == 1


def test_stall_mid_stream_times_out(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [answer("Returns ", "are accepted.", gate_after=1, state=server)]
    deltas = make(timeout_s=0.3).stream(QUESTION, PASSAGES)
    assert next(deltas) == "Returns "
    start = time.monotonic()
    with pytest.raises(GenerationError, match="timed out"):
        next(deltas)
    assert time.monotonic() - start < 3
    assert len(server.requests) == 1  # no retry once text has been streamed


def test_invalid_json_chunk(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [events(_chunk("Returns "), '{"choices": [{"delta": ', "[DONE]")]
    with pytest.raises(GenerationError, match="invalid JSON"):
        list(make().stream(QUESTION, PASSAGES))


def test_error_event_in_stream(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [events(_chunk("Re"), json.dumps({"error": {"message": "engine crashed"}}))]
    with pytest.raises(GenerationError, match="engine crashed"):
        list(make().stream(QUESTION, PASSAGES))


def _raw(content_type: str, body: str) -> Action:
    """A 200 reply of `body` as it is, under `content_type`."""

    def act(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.end_headers()
        h.wfile.write(body.encode())

    return act


def test_sse_framing_as_the_spec_has_it(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    split = _chunk("30 days [1].").replace('"delta": ', '"delta":\r\ndata: ')  # one chunk on two data: lines
    body = (
        f": keep-alive\r\n\r\nevent: ping\r\n\r\ndata: {split}\r\n\r\ndata: {_chunk(finish='stop')}\r\n\r\n"
    )
    server.script = [_raw("text/event-stream; charset=utf-8", body + "data: [DONE]\r\n\r\n")]
    assert list(make().stream(QUESTION, PASSAGES)) == ["30 days [1]."]


def test_a_reply_that_is_not_an_event_stream(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator]
) -> None:
    server.script = [_raw("text/plain", f"data: {_chunk('Yes.')}\n\ndata: [DONE]\n\n")]
    with pytest.raises(GenerationError, match="text/event-stream.*'text/plain'"):
        list(make().stream(QUESTION, PASSAGES))


def test_stream_ending_early(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [events(_chunk(), _chunk("Returns are"))]
    with pytest.raises(GenerationError, match="ended early"):
        list(make().stream(QUESTION, PASSAGES))


def test_finish_reason_without_done_is_complete(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator]
) -> None:
    server.script = [events(_chunk("Done [2]."), _chunk(finish="stop"))]
    assert list(make().stream(QUESTION, PASSAGES)) == ["Done [2]."]


def test_empty_answer(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    server.script = [answer(" ")]
    with pytest.raises(GenerationError, match="empty answer"):
        list(make().stream(QUESTION, PASSAGES))


def test_connection_refused(make: Callable[..., OpenAIChatGenerator]) -> None:
    with socket.socket() as probe:  # a port that nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(GenerationError, match="connection failed") as info:
        list(make(base_url=url, max_retries=1).stream(QUESTION, PASSAGES))
    assert f"{url}/chat/completions" in str(info.value)


def test_non_streaming_reply(server: FakeServer, make: Callable[..., OpenAIChatGenerator]) -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "30 days [1]."}}]}
    server.script = [reply(200, completion)]
    assert list(make().stream(QUESTION, PASSAGES)) == ["30 days [1]."]


def test_request_body_and_auth(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_LLM_API_KEY", "sk-from-env")
    server.script = [answer("30 days [1].")]
    "".join(make(max_tokens=123).stream(QUESTION, PASSAGES))
    body, headers = server.requests[0], server.headers[0]
    assert headers["Authorization"] == "Bearer sk-from-env"
    assert body["model"] == "test-llm" and body["stream"] is True and body["max_tokens"] == 123
    system, user = body["messages"]
    assert system["role"] == "system" and NOT_COVERED in system["content"]
    assert user["role"] == "user" and QUESTION in user["content"]
    assert '<passage n="1">\nRefunds are accepted within 30 days.\n</passage>' in user["content"]
    assert '<passage n="2">' in user["content"]


def test_registry_builds_the_generator(server: FakeServer) -> None:
    gen = get_generator("openai", model="test-llm", base_url=server.url)
    assert isinstance(gen, OpenAIChatGenerator) and gen.name == "openai"
    gen.close()


@pytest.fixture
def meter() -> Iterator[UsageMeter]:
    made = UsageMeter()
    token = USAGE.set(made)
    yield made
    USAGE.reset(token)


def _usage_chunk(prompt: int, completion: int) -> str:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage})


def test_the_usage_chunk_is_asked_for_and_metered(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], meter: UsageMeter
) -> None:
    gen = make()
    server.script = [
        events(_chunk(), _chunk("30 days [1]."), _chunk(finish="stop"), _usage_chunk(120, 7), "[DONE]"),
        events(_chunk("Yes [2]."), _chunk(finish="stop"), _usage_chunk(80, 3), "[DONE]"),
    ]
    assert list(gen.stream(QUESTION, PASSAGES)) == ["30 days [1]."]
    assert list(gen.stream(QUESTION, PASSAGES)) == ["Yes [2]."]
    assert all(r["stream_options"] == {"include_usage": True} for r in server.requests)
    assert (meter.prompt_tokens, meter.completion_tokens, meter.answers) == (200, 10, 2) and meter.reported


def test_a_server_that_reports_no_usage_leaves_it_unreported(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], meter: UsageMeter
) -> None:
    server.script = [answer("30 days [1].")]
    assert list(make().stream(QUESTION, PASSAGES)) == ["30 days [1]."]
    assert (meter.answers, meter.unreported, meter.prompt_tokens) == (1, 1, 0) and not meter.reported


def test_a_server_rejecting_stream_options_is_asked_without(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], meter: UsageMeter
) -> None:
    rejected = reply(400, {"error": {"message": "Unrecognized request argument supplied: stream_options"}})
    server.script = [rejected, answer("30 days [1]."), answer("Yes [2].")]
    gen = make()
    assert list(gen.stream(QUESTION, PASSAGES)) == ["30 days [1]."]
    assert list(gen.stream(QUESTION, PASSAGES)) == ["Yes [2]."]
    assert ["stream_options" in r for r in server.requests] == [True, False, False]
    assert meter.answers == 2 and not meter.reported


def test_other_client_errors_are_not_retried_without_stream_options(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator]
) -> None:
    server.script = [reply(400, {"error": {"message": "model not found"}}), answer("never sent")]
    with pytest.raises(GenerationError, match="model not found"):
        list(make().stream(QUESTION, PASSAGES))
    assert len(server.requests) == 1


def test_a_whole_json_reply_and_a_completion_are_metered(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator], meter: UsageMeter
) -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 4, "total_tokens": 54}
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "30 days [1]."}}]}
    server.script = [reply(200, {**body, "usage": usage})]
    assert list(make().stream(QUESTION, PASSAGES)) == ["30 days [1]."]
    # The agent's whole completions (rewrite, plan, grade) parse their replies here.
    assert make().completion_content(json.dumps({**body, "usage": usage}).encode())[0] == "30 days [1]."
    assert (meter.prompt_tokens, meter.completion_tokens, meter.answers) == (100, 8, 1) and meter.reported


def test_nothing_is_metered_outside_a_request(
    server: FakeServer, make: Callable[..., OpenAIChatGenerator]
) -> None:
    assert USAGE.get() is None
    server.script = [events(_chunk("30 days [1]."), _chunk(finish="stop"), _usage_chunk(9, 9), "[DONE]")]
    assert list(make().stream(QUESTION, PASSAGES)) == ["30 days [1]."]
