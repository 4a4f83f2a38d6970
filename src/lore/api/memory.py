"""Conversation memory: follow-up questions become standalone queries, by the LLM when one is
configured, else (or when it fails) by rule."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lore.answer.generators.base import GenerationError, Generator, Passage
from lore.lexical import tokenize

_EN_FOLLOW = re.compile(
    r"^(and|also|what about|how about|then|so|but|or)\b|\b(it|its|this|that|these|those|they|them|their|"
    r"he|she|there|the same|above)\b", re.IGNORECASE)
_ZH_FOLLOW = ("它", "这个", "那个", "这些", "那些", "他们", "她们", "其", "该", "上述", "还有", "那么", "同样")
_ZH_START = ("那", "还", "和", "以及", "另外")
_MAX_CONTEXT = 200  # characters of the earlier question carried into the rewrite


def is_follow_up(question: str) -> bool:
    """A question that leans on an earlier turn: pronouns, 'and/what about…', '…呢', or very short."""
    q = question.strip()
    if _EN_FOLLOW.search(q) or any(w in q for w in _ZH_FOLLOW) or q.startswith(_ZH_START):
        return True
    if q.rstrip("？?").endswith("呢"):
        return True
    return len(tokenize(q)) <= 1


def standalone_query(question: str, earlier: list[str]) -> str:
    """The question to search: a follow-up gets the previous standalone question prepended."""
    question = question.strip()
    if not earlier or not is_follow_up(question):
        return question
    return f"{earlier[-1][-_MAX_CONTEXT:]} {question}"


def rolling_summary(queries: list[str], limit: int = 5) -> str:
    """A short summary of what a session asked about: its last standalone questions."""
    return " | ".join(q[:120] for q in queries[-limit:])


_REWRITE_SYSTEM = (
    "You rewrite a follow-up question from a conversation into one standalone question that can be "
    "searched on its own. Use the earlier questions only to resolve references (it, that, 那, 这个...). "
    "Keep the language of the follow-up. Reply with the standalone question only, nothing else."
)
_REWRITE_TEMPLATE = "Earlier questions, oldest first:\n{passages}\n\nFollow-up question:\n{question}"


@dataclass
class Rewrite:
    """The query to search and how it was made: `none`, `rule`, `llm`, or `rule` after an LLM failure."""

    query: str
    method: str
    note: str = ""


def rewrite(question: str, earlier: list[str], llm: Generator | None = None) -> Rewrite:
    """Standalone query for `question`: unchanged without history; by `llm` if given, else by rule."""
    question = question.strip()
    if not earlier or not question:
        return Rewrite(question, "none")
    if llm is not None:
        history = [Passage(i, q) for i, q in enumerate(earlier[-6:], 1)]
        try:
            text = "".join(llm.stream(question, history, system=_REWRITE_SYSTEM,  # type: ignore[call-arg]
                                      user_template=_REWRITE_TEMPLATE)).strip()
        except GenerationError as exc:
            return Rewrite(standalone_query(question, earlier), "rule", f"LLM rewrite failed: {exc}")
        if text and len(text) <= 4 * max(len(question), 100):
            return Rewrite(text.splitlines()[0].strip(), "llm")
        return Rewrite(standalone_query(question, earlier), "rule", "LLM rewrite was empty or too long")
    query = standalone_query(question, earlier)
    return Rewrite(query, "rule" if query != question else "none")
