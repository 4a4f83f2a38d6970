"""Re-scoring through the configured chat endpoint: listwise (one call scores every candidate) or
pointwise (one call per candidate), within a token budget; a reply that is not exactly the JSON asked
for is a RerankError, so the retriever keeps the first-stage order and notes why."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Protocol

from lore.errors import ConfigError, LoreError
from lore.lexical import CJK_CHAR
from lore.retrieve.rerank.base import RerankError, note, reorder
from lore.schema import Hit

_SYSTEM = (
    "You rate how well passages answer a search query. Reply with JSON only, no prose. "
    "A score is a number from 0 (unrelated) to 10 (answers the query directly)."
)
_REPLY_TOKENS = 12  # per scored passage
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


class Chat(Protocol):
    """What the reranker needs of a chat client (the engine passes the configured `ChatLLM`)."""

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 400) -> str: ...


def estimate_tokens(text: str) -> int:
    """Rough token count: one per CJK character, one per four other characters."""
    cjk = len(CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk) // 4 + 1


def _json(reply: str) -> Any:
    body = _FENCE.sub("", reply).strip()
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    try:
        return json.loads(body[start:] if start > 0 else body)
    except ValueError as exc:
        raise RerankError(f"LLM reply is not JSON: {reply[:120]!r}") from exc


def _score(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 10
    ):
        raise RerankError(f"LLM score {value!r} is not a number from 0 to 10")
    return float(value)


class LlmReranker:
    """Scores candidates 0-10 with the chat model; the calibrated score is score / 10."""

    name = "llm"

    def __init__(
        self, llm: Chat, mode: str = "listwise", token_budget: int = 3000, passage_chars: int = 400
    ) -> None:
        if mode not in ("listwise", "pointwise"):
            raise ConfigError(f"rerank.llm_mode: 'listwise' or 'pointwise', got {mode!r}")
        self.llm, self.mode, self.budget, self.passage_chars = llm, mode, token_budget, passage_chars

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        texts = [" ".join(h.chunk.text.split())[: self.passage_chars] for h in hits]
        fit = self._fit(query, texts)
        if fit == 0:
            raise RerankError(f"token budget {self.budget} is too small for one passage")
        if fit < len(hits):
            note(
                f"token budget {self.budget}: {fit} of {len(hits)} candidates re-scored, the rest keep "
                "their order"
            )
        try:
            scores = (
                self._listwise(query, texts[:fit])
                if self.mode == "listwise"
                else [self._pointwise(query, t) for t in texts[:fit]]
            )
        except RerankError:
            raise
        except LoreError as exc:
            raise RerankError(f"LLM call failed: {exc}") from exc
        return [*reorder(hits[:fit], scores, [s / 10 for s in scores]), *hits[fit:]]

    def _fit(self, query: str, texts: list[str]) -> int:
        """How many candidates (from the top) fit in the token budget, prompt and reply counted."""
        used = estimate_tokens(_SYSTEM) + estimate_tokens(query) + 60
        for n, text in enumerate(texts):
            per = estimate_tokens(text) + _REPLY_TOKENS + 8
            if self.mode == "pointwise":
                per += estimate_tokens(_SYSTEM) + estimate_tokens(query) + 60
            if used + per > self.budget:
                return n
            used += per
        return len(texts)

    def _listwise(self, query: str, texts: list[str]) -> list[float]:
        numbered = "\n".join(f"[{i}] {t}" for i, t in enumerate(texts, start=1))
        prompt = (
            f'Query: {query}\n\nPassages:\n{numbered}\n\nReply {{"scores": [s1, ..., s{len(texts)}]}}: '
            f"exactly {len(texts)} numbers, one per passage in order."
        )
        reply = self.llm.complete(
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=_REPLY_TOKENS * len(texts) + 20,
        )
        data = _json(reply)
        scores = data.get("scores") if isinstance(data, dict) else data
        if not isinstance(scores, list) or len(scores) != len(texts):
            raise RerankError(f"LLM reply should hold {len(texts)} scores: {reply[:120]!r}")
        return [_score(s) for s in scores]

    def _pointwise(self, query: str, text: str) -> float:
        prompt = f'Query: {query}\n\nPassage: {text}\n\nReply {{"score": s}}.'
        reply = self.llm.complete(
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=_REPLY_TOKENS + 8,
        )
        data = _json(reply)
        if not isinstance(data, dict) or "score" not in data:
            raise RerankError(f"LLM reply has no score: {reply[:120]!r}")
        return _score(data["score"])


def from_settings(settings: Any, *, llm: Chat | None = None, **_: Any) -> LlmReranker:
    """`[rerank] provider = "llm"`: needs the chat endpoint of `[answer]` (llm_base_url, llm_model)."""
    if llm is None:
        raise ConfigError(
            "rerank.provider = 'llm' needs a chat endpoint: set answer.llm_base_url and llm_model"
        )
    return LlmReranker(llm, settings.llm_mode, settings.llm_token_budget, settings.llm_passage_chars)
