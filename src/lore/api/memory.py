"""Conversation memory: follow-up questions become standalone queries, by the LLM when one is
configured, else (or when it fails) by rule."""

from __future__ import annotations

from dataclasses import dataclass

from lore.agent.llm import ChatLLM
from lore.agent.prompts import standalone_messages
from lore.agent.rewrite import is_follow_up
from lore.answer.generators.base import GenerationError

_MAX_CONTEXT = 200  # characters of the earlier question carried into the rewrite


def standalone_query(question: str, earlier: list[str]) -> str:
    """The question to search: a follow-up gets the previous standalone question prepended."""
    question = question.strip()
    if not earlier or not is_follow_up(question):
        return question
    return f"{earlier[-1][-_MAX_CONTEXT:]} {question}"


def rolling_summary(queries: list[str], limit: int = 5) -> str:
    """A short summary of what a session asked about: its last standalone questions."""
    return " | ".join(q[:120] for q in queries[-limit:])


@dataclass
class Rewrite:
    """The query to search and how it was made: `none`, `rule`, `llm`, or `rule` after an LLM failure."""

    query: str
    method: str
    note: str = ""


def rewrite(question: str, earlier: list[str], llm: ChatLLM | None = None) -> Rewrite:
    """Standalone query for `question`: unchanged without history; by `llm` if given (the same prompt
    as deep mode's standalone rewrite), else or when it fails by rule."""
    question = question.strip()
    if not earlier or not question:
        return Rewrite(question, "none")
    if llm is not None:
        history = [{"role": "user", "content": q} for q in earlier[-6:]]
        try:
            text = llm.complete(standalone_messages(question, history), max_tokens=200)
        except GenerationError as exc:
            return Rewrite(standalone_query(question, earlier), "rule", f"LLM rewrite failed: {exc}")
        if len(text) <= 4 * max(len(question), 100):
            return Rewrite(text.splitlines()[0].strip(), "llm")
        return Rewrite(standalone_query(question, earlier), "rule", "LLM rewrite was too long")
    query = standalone_query(question, earlier)
    return Rewrite(query, "rule" if query != question else "none")
