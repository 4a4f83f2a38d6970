"""Answers streamed from any server speaking the OpenAI-compatible `POST /chat/completions` protocol.

The token usage the server reports is added to the request's `UsageMeter` (the `USAGE` context variable,
set by the caller that answers a request), so the API can pass it on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError

from lore.answer.generators.base import GenerationError, Passage
from lore.answer.prompt import build_messages
from lore.errors import ConfigError
from lore.http_client import SNIPPET, EndpointClient, status_failure, transport_failure

_API_KEY_ENV = ("LORE_LLM_API_KEY", "OPENAI_API_KEY")


@dataclass
class UsageMeter:
    """Token usage the chat endpoint reported for one request's calls, summed; `answers` counts finished
    answer streams and `unreported` those of them whose server reported no usage."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    answers: int = 0
    unreported: int = 0

    def add(self, usage: object) -> bool:
        """Add one reply's `usage` object; False when it has none (or no usable token counts)."""
        if not isinstance(usage, dict):
            return False
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if not (isinstance(prompt, int) and isinstance(completion, int)) or prompt < 0 or completion < 0:
            return False
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        return True

    @property
    def reported(self) -> bool:
        """The answer came from the LLM and the server reported the usage of every answer call."""
        return self.answers > 0 and self.unreported == 0


# The meter of the request being answered; None outside one (nothing is recorded then).
USAGE: ContextVar[UsageMeter | None] = ContextVar("lore_llm_usage", default=None)


class OpenAIChatGenerator(EndpointClient):
    """Client for an OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama, OpenAI...).

    Retries connection errors, 429 and 5xx only before the answer starts; never once text has streamed.
    """

    name = "openai"
    failure = GenerationError
    max_wait_s = 8.0

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 2,
        temperature: float = 0.1,
        max_tokens: int = 800,
        backoff_s: float = 0.5,
    ) -> None:
        if not model:
            raise ConfigError("answer.model: required for the openai generator")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"answer.base_url: must start with http:// or https://, got {base_url!r}")
        if timeout_s <= 0 or connect_timeout_s <= 0 or max_retries < 0 or max_tokens < 1 or backoff_s < 0:
            raise ConfigError(
                "answer: timeout_s > 0, connect_timeout_s > 0, max_retries >= 0, max_tokens >= 1 "
                "and backoff_s >= 0 are required"
            )
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.backoff_s = backoff_s
        self.stream_usage = True  # ask for a usage chunk; dropped for a server that rejects stream_options
        # The read timeout bounds the gap between two chunks, so a stalled stream fails instead of hanging.
        timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        super().__init__(api_key, _API_KEY_ENV, timeout)
        self._where = f"chat endpoint {self.url}"

    def stream(
        self,
        question: str,
        passages: Sequence[Passage],
        system: str | None = None,
        user_template: str | None = None,
    ) -> Iterator[str]:
        """Yield the answer in pieces as the server sends them; `system`/`user_template` come from a
        prompt profile. Raises GenerationError."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": build_messages(question, passages, system=system, user_template=user_template),
            "stream": True,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        response = self._open_streaming(body)
        usage: list[Any] = []  # the reply's usage object, once seen
        try:
            if "json" in response.headers.get("content-type", ""):
                yield self._whole_reply(response, usage)  # the server ignored "stream": true
            else:
                yield from self._stream_reply(response, usage)
        except httpx.TimeoutException as exc:
            raise GenerationError(
                f"{self._where}: timed out: no data for {self.timeout_s:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__
            raise GenerationError(f"{self._where}: connection lost during the answer: {reason}") from exc
        finally:
            response.close()
        if (meter := USAGE.get()) is not None:
            meter.answers += 1
            meter.unreported += not meter.add(usage[-1] if usage else None)

    def _open_streaming(self, body: dict[str, Any]) -> httpx.Response:
        """Open the stream asking for a final usage chunk; a server that rejects `stream_options` (HTTP 400
        or 422 naming it) is asked again without, and never again."""
        if not self.stream_usage:
            return self._open_with_retries(body)
        try:
            return self._open_with_retries({**body, "stream_options": {"include_usage": True}})
        except GenerationError as exc:
            if "stream_options" not in str(exc) or not any(f"HTTP {s}" in str(exc) for s in (400, 422)):
                raise
        self.stream_usage = False
        return self._open_with_retries(body)

    def _open_with_retries(self, body: dict[str, Any]) -> httpx.Response:
        return self.retrying(self._open, body)

    def _open(self, body: dict[str, Any]) -> httpx.Response:
        """Send the request and return the open response once its status is 200."""
        request = self._client.build_request("POST", self.url, json=body)
        try:
            response = self._client.send(request, stream=True)
        except httpx.ReadTimeout as exc:  # the server accepted but never answered: retrying would not help
            raise GenerationError(f"{self._where}: timed out: no response for {self.timeout_s:g}s") from exc
        except httpx.TransportError as exc:
            raise transport_failure(self._where, exc) from exc
        if response.status_code == 200:
            return response
        try:
            text = response.read().decode("utf-8", "replace")
        except httpx.HTTPError:
            text = ""
        finally:
            response.close()
        raise status_failure(self._where, response, text, GenerationError, self.max_wait_s)

    def _whole_reply(self, response: httpx.Response, usage: list[Any]) -> str:
        """The content of a plain (non-streamed) JSON completion; its usage is appended to `usage`."""
        content, data = self._parse_completion(response.read())
        usage.append(data.get("usage"))
        return content

    def completion_content(self, raw: bytes) -> tuple[str, dict[str, Any]]:
        """(content, whole reply) of a JSON chat completion (its usage added to the request's meter);
        GenerationError when malformed or empty."""
        content, data = self._parse_completion(raw)
        if (meter := USAGE.get()) is not None:
            meter.add(data.get("usage"))
        return content, data

    def _parse_completion(self, raw: bytes) -> tuple[str, dict[str, Any]]:
        try:
            data = json.loads(raw)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            snippet = raw[:SNIPPET].decode("utf-8", "replace")
            raise GenerationError(f"{self._where}: malformed JSON completion ({exc!r}): {snippet!r}") from exc
        if not isinstance(content, str) or not content.strip():
            raise GenerationError(f"{self._where}: the model returned an empty answer")
        return content, data

    def _stream_reply(self, response: httpx.Response, usage: list[Any]) -> Iterator[str]:
        """Content deltas from the Server-Sent Events stream, checked for a proper ending; a chunk's usage
        (the last one, with `include_usage`) is appended to `usage`."""
        got_text = finished = False
        try:
            for sse in EventSource(response).iter_sse():
                if not sse.data:  # comments, keep-alives and events without data carry nothing we need
                    continue
                if sse.data.strip() == "[DONE]":
                    finished = True
                    break
                delta, finish_reason = self._parse_chunk(sse.data, usage)
                finished = finished or finish_reason is not None
                if delta:
                    got_text = got_text or bool(delta.strip())
                    yield delta
        except SSEError as exc:  # neither JSON nor an event stream
            raise GenerationError(f"{self._where}: {exc}") from exc
        if not finished:
            raise GenerationError(f"{self._where}: the stream ended early (no [DONE] and no finish_reason)")
        if not got_text:
            raise GenerationError(f"{self._where}: the model returned an empty answer")

    def _parse_chunk(self, data: str, usage: list[Any]) -> tuple[str, str | None]:
        """(content delta, finish_reason) of one `chat.completion.chunk` event; its usage, if any, is
        appended to `usage`."""
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise GenerationError(
                f"{self._where}: invalid JSON in a stream chunk: {data[:SNIPPET]!r}"
            ) from exc
        if not isinstance(chunk, dict):
            raise GenerationError(f"{self._where}: unexpected stream chunk: {data[:SNIPPET]!r}")
        if chunk.get("error"):  # some servers report failures inside the stream
            raise GenerationError(f"{self._where}: error in the stream: {str(chunk['error'])[:SNIPPET]}")
        if chunk.get("usage"):
            usage.append(chunk["usage"])
        choices = chunk.get("choices") or []  # a usage-only chunk has no choices
        if not choices:
            return "", None
        try:
            choice = choices[0]
            content = (choice.get("delta") or {}).get("content") or ""
            finish_reason = choice.get("finish_reason")
        except AttributeError as exc:
            raise GenerationError(f"{self._where}: malformed stream chunk: {data[:SNIPPET]!r}") from exc
        if not isinstance(content, str):
            raise GenerationError(f"{self._where}: non-text content in a stream chunk: {data[:SNIPPET]!r}")
        return content, finish_reason
