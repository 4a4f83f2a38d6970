"""Non-streaming chat completions for the agent's small LLM steps (plan, grade, rewrite, HyDE), a
per-request token/time budget, and validated JSON replies (invalid -> retried once -> None)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from lore.answer.generators.base import GenerationError
from lore.answer.generators.openai_chat import OpenAIChatGenerator
from lore.config import AnswerSettings

M = TypeVar("M", bound=BaseModel)


class BudgetExceeded(GenerationError):
    """The request's token or time budget is spent; the caller falls back to rules."""


@dataclass
class Budget:
    """Tokens and seconds one request may spend; `tokens_used` counts every LLM call."""

    max_tokens: int
    time_s: float
    started: float = field(default_factory=time.monotonic)
    tokens_used: int = 0
    cancelled: bool = False  # the caller went away: no more rounds, no more LLM calls

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def time_left(self) -> bool:
        return not self.cancelled and self.elapsed_s() < self.time_s

    def check(self, want_tokens: int = 0) -> None:
        """Raise BudgetExceeded when the time is up or `want_tokens` more would pass the token limit."""
        if self.cancelled:
            raise BudgetExceeded("the request was cancelled")
        if not self.time_left():
            raise BudgetExceeded(f"time budget of {self.time_s:g}s spent")
        if self.tokens_used + want_tokens > self.max_tokens:
            raise BudgetExceeded(f"token budget of {self.max_tokens} spent ({self.tokens_used} used)")


class ChatLLM(OpenAIChatGenerator):
    """The answer generator's endpoint client, used for whole (non-streamed) completions."""

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 400, budget: Budget | None = None
    ) -> str:
        """The reply's text. Raises GenerationError (BudgetExceeded when the budget is spent)."""
        if budget is not None:
            budget.check(max_tokens)
        body = {
            "model": self.model,
            "messages": messages,
            "stream": False,
            "temperature": 0.0,
            "max_tokens": max_tokens,
        }
        response = self._open_with_retries(body)
        try:
            raw = response.read()
        except httpx.HTTPError as exc:
            raise GenerationError(f"{self._where}: connection lost reading the reply: {exc}") from exc
        finally:
            response.close()
        content, data = self.completion_content(raw)
        if budget is not None:
            usage = data.get("usage") or {}
            used = usage.get("total_tokens") if isinstance(usage, dict) else None
            # Servers that report no usage: estimate ~4 characters a token over prompt and reply.
            budget.tokens_used += int(used) if isinstance(used, int) else _estimate(messages, content)
        return content.strip()


def _estimate(messages: list[dict[str, str]], reply: str) -> int:
    return (sum(len(m["content"]) for m in messages) + len(reply)) // 4 + 1


def llm_from_settings(settings: AnswerSettings, timeout_s: float | None = None) -> ChatLLM | None:
    """The configured chat endpoint (answer.llm_base_url or LORE_LLM_BASE_URL, answer.llm_model),
    or None when none is configured (every LLM step is then skipped with a note)."""
    endpoint = settings.llm_endpoint()
    if endpoint is None:
        return None
    return ChatLLM(model=endpoint[1], base_url=endpoint[0], timeout_s=timeout_s or settings.llm_timeout_s)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_json_reply(text: str, model: type[M]) -> M:
    """The reply validated as `model`; tolerates a ```json fence and text around one JSON object."""
    body = _FENCE.sub("", text).strip()
    if not body.startswith(("{", "[")):
        start = body.find("{")
        end = body.rfind("}")
        body = body[start : end + 1] if 0 <= start < end else body
    return model.model_validate_json(body)


def ask_validated(
    llm: ChatLLM,
    messages: list[dict[str, str]],
    model: type[M],
    *,
    budget: Budget | None,
    max_tokens: int,
    note: Callable[[str], Any],
) -> M | None:
    """Ask for JSON matching `model`; an invalid reply is retried once with the error, then None.

    Every failure is passed to `note` (it goes in the trace); None means "use the rule-based fallback".
    """
    conversation = list(messages)
    for attempt in (1, 2):
        try:
            reply = llm.complete(conversation, max_tokens=max_tokens, budget=budget)
        except GenerationError as exc:
            note(f"{model.__name__}: LLM call failed ({exc}); using rules")
            return None
        try:
            return parse_json_reply(reply, model)
        except (ValidationError, ValueError) as exc:
            reason = _short_error(exc)
            note(f"{model.__name__}: invalid reply on attempt {attempt} ({reason})")
            conversation = [
                *messages,
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": f"That reply is invalid: {reason}. Reply again with only the JSON object.",
                },
            ]
    note(f"{model.__name__}: still invalid after a retry; using rules")
    return None


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:3])
    return str(exc)[:200]
