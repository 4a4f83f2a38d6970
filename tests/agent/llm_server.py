"""Scripted non-streamed chat completions for the agent's LLM steps, on the real local test server."""

from __future__ import annotations

import json
from typing import Any

from tests.answer.chat_server import Action, FakeServer, reply, serve

__all__ = ["FakeServer", "completion", "json_completion", "serve", "system_prompts"]


def completion(content: str, total_tokens: int | None = 40) -> Action:
    """A plain `chat.completion` reply with `content` (and usage, unless None)."""
    body: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }
    if total_tokens is not None:
        body["usage"] = {
            "prompt_tokens": total_tokens // 2,
            "completion_tokens": total_tokens // 2,
            "total_tokens": total_tokens,
        }
    return reply(200, body)


def json_completion(obj: Any, total_tokens: int | None = 40) -> Action:
    """A completion whose content is `obj` as JSON."""
    return completion(json.dumps(obj, ensure_ascii=False), total_tokens)


def system_prompts(state: FakeServer) -> list[str]:
    """The system prompt of every request the server saw, in order."""
    return [r["messages"][0]["content"] for r in state.requests]
