"""Query variants and their merged search.

Rule-based variants always work offline (keyword-only form via jieba / English stop words, a
history-carrying form for short follow-ups); LLM variants (standalone rewrite, HyDE passage,
multi-query) run only when a chat endpoint is configured, otherwise each is skipped with a note.
Modes follow the usual three switches: off (the question as asked), on (standalone + multi-query +
keywords), hyde (standalone + hypothetical passage + keywords).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from lore.agent import prompts
from lore.agent.llm import Budget, ChatLLM, ask_validated
from lore.answer.generators.base import GenerationError
from lore.errors import LoreError
from lore.lexical import tokenize
from lore.lexical.tokenize import _RUNS, CJK_STOP, STOP_WORDS, _jieba
from lore.retrieve.search import Retrieval, RetrieverWrapper, SearchOptions
from lore.schema import Hit
from lore.store.fusion import rrf
from lore.text.normalise import normalise

RewriteMode = Literal["off", "on", "hyde"]
REWRITE_MODES = ("off", "on", "hyde")
VariantKind = Literal["original", "keywords", "history", "standalone", "hyde", "multi_query"]

# Pronouns pointing back to an earlier turn: no search signal of their own, a sign of a follow-up.
_ZH_PRONOUNS = ("它", "其", "这个", "那个", "这些", "那些", "他们", "她们")
# Question words and fillers that carry no search signal in a keyword-only query.
_ZH_FILLER = (
    CJK_STOP
    | {*_ZH_PRONOUNS}
    | {
        "哪些",
        "哪个",
        "哪里",
        "多少",
        "几",
        "谁",
        "吗",
        "请问",
        "是否",
        "为什么",
        "有没有",
        "一下",
        "需要",
        "可以",
        "能",
        "要",
        "有",
        "哪",
        "呢",
        "多久",
        "何时",
        "怎样",
        "怎么样",
        "它们",
        "那",
        "那么",
    }
)
_CODE = re.compile(r"[A-Za-z]+[-_][A-Za-z0-9-]+|[A-Za-z]+\d+\w*")
# Signs that a question leans on an earlier turn (pronouns, "and / what about…", "那…", "…呢").
_EN_FOLLOW = re.compile(
    r"^(and|also|what about|how about|then|so|but|or)\b|\b(it|its|this|these|those|they|them|their|"
    r"he|she|the same|above)\b",
    re.IGNORECASE,
)
# "it" with no antecedent ("is it true that…", "it is possible to…"): not a reference to an earlier turn.
_EN_EXPLETIVE = re.compile(
    r"\b(?:(?:is|was|isn't) it|it (?:is|was)) (?:true|possible|necessary|required|known|"
    r"allowed|ok|okay)\b",
    re.IGNORECASE,
)
_ZH_FOLLOW = (
    *_ZH_PRONOUNS,
    "该",
    "上述",
    "还有",
    "那么",
    "同样",
)
_ZH_START = ("那", "还", "和", "以及", "另外")
_MAX_CONTEXT = 200  # characters of the previous question carried into a follow-up


@dataclass
class QueryVariant:
    """One search query derived from the question, and how it was made."""

    text: str
    kind: VariantKind


@dataclass
class Rewrite:
    """The variants searched for one question and notes on skipped or failed steps."""

    question: str
    mode: str
    variants: list[QueryVariant] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, text: str, kind: VariantKind) -> None:
        text = text.strip()
        if text and all(normalise(text) != normalise(v.text) for v in self.variants):
            self.variants.append(QueryVariant(text, kind))

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "variants": [{"kind": v.kind, "text": v.text} for v in self.variants],
            "notes": list(self.notes),
        }


def keyword_query(text: str) -> str:
    """The question's content words only: jieba words for Chinese, non-stop words otherwise."""
    text = unicodedata.normalize("NFKC", text)
    words: list[str] = []
    for m in _RUNS.finditer(text):
        cjk, word = m.groups()
        if cjk:
            words.extend(w for w in _jieba().lcut(cjk) if w not in _ZH_FILLER)
        elif word.lower() not in STOP_WORDS:
            words.append(word)
    # "LF-200" is split by the word pattern; keep hyphenated codes whole as they were written.
    codes = _CODE.findall(text)
    out: list[str] = []
    for w in [*codes, *words]:
        if w not in out and not any(w in c and w != c for c in codes):
            out.append(w)
    return " ".join(out)


def is_follow_up(question: str) -> bool:
    """A question that leans on an earlier turn: pronouns, 'and / what about…', '那…', '…呢', or
    hardly a word of its own. The one test the service and deep mode share."""
    q = question.strip()
    if (
        _EN_FOLLOW.search(_EN_EXPLETIVE.sub(" ", q))
        or q.startswith(_ZH_START)
        or any(w in q for w in _ZH_FOLLOW)
    ):
        return True
    return q.rstrip("？?").endswith("呢") or len(tokenize(q)) <= 1


@dataclass
class Standalone:
    """A question made self-contained from a conversation's earlier turns, and how: none | rule | llm."""

    query: str
    method: str = "none"
    note: str = ""  # why the LLM's rewrite was not used


def carry_over(question: str, previous: str, *, one_question: bool = False) -> str:
    """A follow-up with the previous question before it ("LF-200 的保修期多久？ 那可以延长吗？"); a code the
    follow-up names replaces the previous question's ("LF-500 的保修期多久？ 那LF-500呢？"). `one_question`
    drops the previous question's final mark, for deep mode, which would otherwise split the two."""
    context = previous.strip()[-_MAX_CONTEXT:]
    if one_question:
        context = context.rstrip("？?。.！!；; ")
    if codes := _CODE.findall(question):
        context = _CODE.sub(codes[0], context)
    return f"{context} {question.strip()}"


def standalone_question(
    question: str,
    history: Sequence[dict[str, str]],
    llm: ChatLLM | None = None,
    budget: Budget | None = None,
    *,
    one_question: bool = False,
) -> Standalone:
    """The question made self-contained: by the LLM when one is given (its first line, if not overlong),
    else, or when that fails, a follow-up gets the previous question carried over.
    Shared by the service, deep mode and the query rewriter."""
    question = question.strip()
    previous = [t["content"] for t in history if t.get("role") == "user" and t.get("content")]
    if not previous or not question:
        return Standalone(question)
    note = ""
    if llm is not None:
        try:
            reply = llm.complete(
                prompts.standalone_messages(question, history), max_tokens=200, budget=budget
            )
        except GenerationError as exc:
            note = f"LLM rewrite failed: {exc}"
        else:
            line = next((x.strip() for x in reply.splitlines() if x.strip()), "")
            if line and len(line) <= 4 * max(len(question), 100):
                return Standalone(line, "llm")
            note = "LLM rewrite was empty or too long"
    if not is_follow_up(question):
        return Standalone(question, "none", note)
    return Standalone(carry_over(question, previous[-1], one_question=one_question), "rule", note)


def rewrite_query(
    question: str,
    mode: str = "off",
    *,
    history: Sequence[dict[str, str]] = (),
    llm: ChatLLM | None = None,
    budget: Budget | None = None,
) -> Rewrite:
    """The variants to search for `question` under `mode` (off | on | hyde)."""
    if mode not in REWRITE_MODES:
        raise LoreError(f"rewrite: 'off', 'on' or 'hyde', not {mode!r}")
    rw = Rewrite(question, mode)
    rw.add(question, "original")
    if mode == "off":
        return rw
    standalone = _standalone(rw, question, history, llm, budget)
    if mode == "on":
        _multi_query(rw, standalone, llm, budget)
    else:
        _hyde(rw, standalone, llm, budget)
    rw.add(keyword_query(standalone), "keywords")
    return rw


def _standalone(
    rw: Rewrite, question: str, history: Sequence[dict[str, str]], llm: ChatLLM | None, budget: Budget | None
) -> str:
    if not history:
        return question
    made = standalone_question(question, history, llm, budget)
    if llm is None:
        rw.notes.append(
            "standalone rewrite skipped: no LLM configured (the previous question carried over instead)"
        )
    elif made.note:
        rw.notes.append(f"standalone rewrite: {made.note}")
    if made.method == "llm":
        rw.add(made.query, "standalone")
        return made.query
    if made.method == "rule":
        rw.add(made.query, "history")
    return question


def _hyde(rw: Rewrite, question: str, llm: ChatLLM | None, budget: Budget | None) -> None:
    if llm is None:
        rw.notes.append("HyDE skipped: no LLM configured")
        return
    try:
        rw.add(llm.complete(prompts.hyde_messages(question), max_tokens=300, budget=budget), "hyde")
    except GenerationError as exc:
        rw.notes.append(f"HyDE failed: {exc}")


def _multi_query(rw: Rewrite, question: str, llm: ChatLLM | None, budget: Budget | None) -> None:
    if llm is None:
        rw.notes.append("multi-query skipped: no LLM configured")
        return
    reply = ask_validated(
        llm,
        prompts.multi_query_messages(question),
        prompts.Variants,
        budget=budget,
        max_tokens=300,
        note=rw.notes.append,
    )
    for text in reply.queries if reply else []:
        rw.add(text, "multi_query")


def search_variants(
    retriever: Retrieval, rewrite: Rewrite, options: SearchOptions, vector: np.ndarray | None = None
) -> list[Hit]:
    """Search every variant with the same options (same scope) and merge by chunk id (RRF); `vector`,
    the question's embedding, serves the variant that is the question itself."""
    lists = [
        retriever.search(v.text, options, vector=vector if v.text == rewrite.question else None)
        for v in rewrite.variants
    ]
    return merge_hits(lists, options.top_k, options.rrf_k)


def merge_hits(
    lists: Sequence[Sequence[Hit]], top_k: int, rrf_k: int = 60, *, by_parent: bool = False
) -> list[Hit]:
    """Reciprocal-rank fusion of several hit lists by chunk id (or by parent passage, keeping its
    first-seen chunk); one list is returned unchanged."""
    if len(lists) == 1:
        return list(lists[0][:top_k])

    def key(hit: Hit) -> str:
        return hit.chunk.parent_id if by_parent else hit.chunk.chunk_id

    first: dict[str, Hit] = {}
    for hits in lists:
        for hit in hits:
            first.setdefault(key(hit), hit)
    rankings = [list(dict.fromkeys(key(h) for h in hits)) for hits in lists]
    fused = rrf(rankings, rrf_k)[:top_k]
    return [replace(first[str(k)], score=score) for k, score in fused]


class RewritingRetriever(RetrieverWrapper):
    """A `Retrieval` that searches the query's variants (embedding delegated to the inner retriever)."""

    def __init__(
        self,
        retriever: Retrieval,
        mode: str,
        *,
        llm: ChatLLM | None = None,
        history: Sequence[dict[str, str]] = (),
        budget: Budget | None = None,
    ) -> None:
        if mode not in REWRITE_MODES:
            raise LoreError(f"rewrite: 'off', 'on' or 'hyde', not {mode!r}")
        super().__init__(retriever)
        self.mode, self.llm, self.budget = mode, llm, budget
        self.history = list(history)
        self.last: Rewrite | None = None

    def search(
        self, query: str, options: SearchOptions | None = None, *, vector: np.ndarray | None = None
    ) -> list[Hit]:
        """Hits for the query's variants, merged; `self.last` keeps the variants and notes."""
        self.last = rewrite_query(query, self.mode, history=self.history, llm=self.llm, budget=self.budget)
        return search_variants(self.inner, self.last, options or SearchOptions(), vector)
