"""The query pipeline as explicit stages over one request context, streaming events.

prepare -> retrieve -> build context -> judge evidence (and consistency) -> generate -> cite -> verify
-> note any disagreement between documents -> finish.
Every stage is a method that reads and writes `AskContext`; `run` yields `status`, `token`,
`end` and `error` events so the CLI and the API stream the same thing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal, Protocol

import numpy as np

from lore.answer.citations import Citation, attach_missing, citations_for, clean_markers, renumber
from lore.answer.consistency import Consistency, check_consistency, disagreement_note
from lore.answer.context import build_passages
from lore.answer.crosslang import names_unshown, own_language_closer
from lore.answer.evidence import (
    Evidence,
    EvidenceQuery,
    judge_evidence,
    kb_holds,
    other_language_passages,
    unmet,
)
from lore.answer.generators.base import GenerationError, Generator, Passage
from lore.answer.prompt import NOT_COVERED, prompt_options
from lore.answer.qtypes import question_parts
from lore.answer.stream_pieces import stream_pieces
from lore.answer.verify import SentenceCheck, answer_confidence, verify
from lore.config import AnswerSettings
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache
from lore.errors import LoreError, check_length
from lore.lexical import is_chinese, tokenize
from lore.retrieve.search import Retrieval, SearchOptions
from lore.schema import Hit

EventType = Literal["status", "token", "end", "error"]


@dataclass
class Event:
    """One streamed event."""

    type: EventType
    data: dict[str, Any]


@dataclass
class AskContext:
    """Everything one question accumulates on its way through the stages."""

    question: str
    search: SearchOptions
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    route: str = "retrieval"
    q_tokens: list[str] = field(default_factory=list)
    query_vector: np.ndarray | None = None
    hits: list[Hit] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    evidence: Evidence | None = None
    answer: str = ""
    citations: list[Citation] = field(default_factory=list)
    checks: list[SentenceCheck] = field(default_factory=list)
    refused: bool = False
    answer_confidence: float = 0.0
    consistency: Consistency | None = None  # do the passages' documents give different figures?
    timings_ms: dict[str, float] = field(default_factory=dict)
    # Set by the scenario stages (see lore.scenario.ask); unused without a scenario.
    direct: bool = False
    profile: Any = None
    plan: Any = None
    faq_hits: list[Hit] = field(default_factory=list)
    max_passages: int | None = None
    context_budget: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def result(self, settings: AnswerSettings) -> dict[str, Any]:
        """The `end` event payload (also what `lore ask --json` prints)."""
        low = not self.refused and self.answer_confidence < settings.low_confidence
        payload: dict[str, Any] = {
            "question": self.question,
            "answer": self.answer,
            "refused": self.refused,
            "route": self.route,
            "citations": [c.to_json() for c in self.citations],
            "evidence_confidence": self.evidence.confidence if self.evidence else 0.0,
            "evidence": self.evidence.to_json() if self.evidence else None,
            "answer_confidence": self.answer_confidence,
            "low_confidence": low,
            "warning": "Low confidence: check the cited passages." if low else None,
            "verification": [c.to_json() for c in self.checks],
            "consistent": self.consistency.consistent if self.consistency else None,
            "conflicts": list(self.consistency.conflicts) if self.consistency else [],
            "plan": {
                "mode": self.search.mode,
                "recall_k": self.search.recall_k,
                "top_k": self.search.top_k,
                "max_passages": settings.max_passages,
                "context_budget": settings.context_budget,
            },
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "trace_id": self.trace_id,
        }
        if self.plan is not None:
            payload["plan"].update(self.plan.to_json())
        return {**payload, **self.extra}


class ScenarioStages(Protocol):
    """The stages a scenario puts in place of plain retrieval (`lore.scenario.ask.ScenarioRuntime`)."""

    def route(self, ctx: AskContext, retriever: Retrieval, max_passages: int, budget: int) -> None: ...

    def faq(self, ctx: AskContext, retriever: Retrieval) -> None: ...

    def retrieve(self, ctx: AskContext, retriever: Retrieval) -> None: ...


class AskPipeline:
    """Answers questions over one knowledge base with a retriever and a generator."""

    def __init__(
        self,
        retriever: Retrieval,
        generator: Generator,
        settings: AnswerSettings,
        *,
        scenario: ScenarioStages | None = None,
    ) -> None:
        self.retriever, self.generator, self.settings = retriever, generator, settings
        self.scenario = scenario

    def _stages(self) -> list[tuple[str, Any]]:
        if self.scenario is None:
            return [
                ("prepare", self.prepare),
                ("retrieve", self.retrieve),
                ("context", self.build_context),
                ("evidence", self.judge),
            ]
        s, r = self.scenario, self.retriever
        return [
            ("prepare", self.prepare),
            ("route", lambda ctx: s.route(ctx, r, self.settings.max_passages, self.settings.context_budget)),
            ("faq", lambda ctx: s.faq(ctx, r)),
            ("retrieve", lambda ctx: s.retrieve(ctx, r)),
            ("context", self.build_context),
            ("evidence", self.judge),
        ]

    def run(self, question: str, search: SearchOptions) -> Iterator[Event]:
        """Run every stage, yielding events; ends with exactly one `end` or `error` event."""
        ctx = AskContext(question.strip(), search)
        try:
            for name, stage in self._stages():
                if ctx.direct:  # answered by a route rule or the FAQ: no retrieval, no generation
                    break
                yield Event("status", {"stage": name})
                self._timed(ctx, name, stage)
            if ctx.direct and ctx.passages:
                self._timed(ctx, "cite", self.cite)
            if ctx.refused or ctx.direct:
                for piece in stream_pieces(ctx.answer):
                    yield Event("token", {"text": piece})
            else:
                yield Event("status", {"stage": "generate", "generator": self.generator.name})
                yield from self.generate(ctx)
                for name, stage in (("cite", self.cite), ("verify", self.check)):
                    self._timed(ctx, name, stage)
                if note := note_disagreement(ctx):
                    yield Event("token", {"text": note})
        except GenerationError as exc:
            yield Event("error", {"message": str(exc), "stage": "generate", "trace_id": ctx.trace_id})
            return
        except LoreError as exc:
            yield Event("error", {"message": str(exc), "trace_id": ctx.trace_id})
            return
        yield Event("end", ctx.result(self.settings))

    # --- stages -------------------------------------------------------------------------------

    def prepare(self, ctx: AskContext) -> None:
        check_question(ctx.question, self.settings)
        ctx.q_tokens = tokenize(ctx.question)

    def retrieve(self, ctx: AskContext) -> None:
        r = self.retriever
        if ctx.search.mode != "bm25":
            ctx.query_vector = r.embed_query(ctx.question)
        ctx.hits = r.search(ctx.question, ctx.search, vector=ctx.query_vector)

    def build_context(self, ctx: AskContext) -> None:
        ctx.passages = self._passages(ctx, ctx.hits)

    def _passages(self, ctx: AskContext, hits: list[Hit]) -> list[Passage]:
        return build_passages(
            hits,
            max_passages=ctx.max_passages or self.settings.max_passages,
            budget_units=ctx.context_budget or self.settings.context_budget,
        )

    def judge(self, ctx: AskContext) -> None:
        r = self.retriever
        query = EvidenceQuery(ctx.question, ctx.q_tokens, ctx.query_vector, r.embedder, r.cache)
        ctx.evidence = judge_evidence(query, ctx.passages, self.settings.evidence_threshold)
        if not ctx.evidence.sufficient:
            ctx.evidence = self._judge_parts(ctx) or self._judge_other_language(ctx) or ctx.evidence
        elif not ctx.evidence.cross_language and names_unshown(ctx.question, ctx.passages):
            # "在Clef内推…": the own language's passages answer about something else; the other language's
            # passages that show the name answer it when they suffice.
            ctx.evidence = self._judge_other_language(ctx) or ctx.evidence
        if ctx.evidence.sufficient:
            self._check_unmet(ctx, ctx.evidence)
        if not ctx.evidence.sufficient:
            ctx.refused, ctx.route = True, "refused"
            ctx.answer = refusal_text(ctx.question, self.settings.support_contact)
        else:
            ctx.consistency = check_consistency(ctx.question, ctx.passages)

    def _check_unmet(self, ctx: AskContext, evidence: Evidence) -> None:
        """Refuse a question too many of whose words the KB holds nowhere ("fishing" of "How do I choose a
        fishing float?" in a passage on fishing seasons), or a how-to question met only by narration."""
        holds = kb_holds(self.retriever, ctx.search)
        reasons = unmet(ctx.question, ctx.hits, ctx.passages, holds, across=evidence.cross_language)
        if reasons:
            ctx.evidence = replace(evidence, sufficient=False, reasons=reasons)

    def _judge_parts(self, ctx: AskContext) -> Evidence | None:
        """A question asking several things ("几天？怎么申请？") is answered when the passages answer each
        part, judged on its own (no passage need cover every part); the weakest part's judgement."""
        parts = question_parts(ctx.question, self.settings.max_question_parts)
        if len(parts) < 2:
            return None
        r = self.retriever
        judged = []
        for part in parts:
            vector = r.embed_query(part) if ctx.query_vector is not None else None
            query = EvidenceQuery(part, tokenize(part), vector, r.embedder, r.cache)
            # The reranker scored the passages for the whole question: each part reads first-stage signals.
            judged.append(judge_evidence(query, ctx.passages, self.settings.evidence_threshold, rerank=False))
        weakest = min(judged, key=lambda e: e.confidence)
        return weakest if weakest.sufficient else None

    def _judge_other_language(self, ctx: AskContext) -> Evidence | None:
        """In a KB of two languages ("How many days of annual leave?" where 年假 is only in Chinese): when
        the question's own language's passages do not answer it, the other language's passages, searched
        by the question's words translated by dictionary, judged as a cross-language question unless the own
        language's passages are clearly closer (`own_language_closer`); when they answer it, only they are
        answered from."""
        if ctx.evidence is not None and ctx.evidence.cross_language:
            return None  # the passages were judged across languages already
        r = self.retriever
        others = other_language_passages(
            ctx.question, r, ctx.search, ctx.query_vector, lambda hits: self._passages(ctx, hits)
        )
        if not others or own_language_closer(
            ctx.question, ctx.passages, others, ctx.query_vector, r.embedder, r.cache
        ):
            return None
        query = EvidenceQuery(ctx.question, ctx.q_tokens, ctx.query_vector, r.embedder, r.cache)
        evidence = judge_evidence(query, others, self.settings.evidence_threshold)
        if not evidence.sufficient:
            return None
        ctx.passages = others
        return evidence

    def generate(self, ctx: AskContext) -> Iterator[Event]:
        if getattr(self.generator, "buffered", False):
            yield from self._generate_buffered(ctx)
            return
        started = time.perf_counter()
        parts: list[str] = []
        for delta in self.generator.stream(ctx.question, ctx.passages, **self._profile_kwargs(ctx)):
            if not parts:
                ctx.timings_ms["first_token"] = (time.perf_counter() - started) * 1000
            parts.append(delta)
            yield Event("token", {"text": delta})
        ctx.answer = "".join(parts).strip()
        ctx.timings_ms["generate"] = (time.perf_counter() - started) * 1000
        if not ctx.answer:
            raise GenerationError(f"{self.generator.name}: empty answer")

    def _generate_buffered(self, ctx: AskContext) -> Iterator[Event]:
        """A generator that knows its whole answer at once (extractive): its citations are renumbered
        1..k in order before the text is sent."""
        started = time.perf_counter()
        text = "".join(self.generator.stream(ctx.question, ctx.passages, **self._profile_kwargs(ctx))).strip()
        ctx.timings_ms["first_token"] = ctx.timings_ms["generate"] = (time.perf_counter() - started) * 1000
        if not text:
            raise GenerationError(f"{self.generator.name}: empty answer")
        ctx.answer, ctx.passages = renumber(text, ctx.passages)
        for piece in stream_pieces(ctx.answer):  # streamed in clause-sized pieces, as an LLM's would be
            yield Event("token", {"text": piece})

    def cite(self, ctx: AskContext) -> None:
        cite(ctx)

    def check(self, ctx: AskContext) -> None:
        check(ctx, self.retriever.embedder, self.retriever.cache, self.settings.support_contact)

    def _profile_kwargs(self, ctx: AskContext) -> dict[str, Any]:
        """The chosen profile's prompts (else the default rules) with today's date, for generators whose
        `stream` takes them."""
        profile = ctx.profile
        return prompt_options(
            self.generator,
            self.settings.today or date.today(),
            profile.system if profile else None,
            profile.user_template if profile else None,
        )

    @staticmethod
    def _timed(ctx: AskContext, name: str, stage: Any) -> None:
        started = time.perf_counter()
        stage(ctx)
        ctx.timings_ms[name] = (time.perf_counter() - started) * 1000


def check_question(question: str, settings: AnswerSettings) -> None:
    """An empty or over-long question is an error (fast and deep mode alike)."""
    if not question:
        raise LoreError("question: empty")
    check_length("question", question, settings.max_question_chars)


def cite(ctx: AskContext) -> None:
    """Keep only markers of given passages, attach uncited sentences, list the citations."""
    if NOT_COVERED.rstrip(".") in ctx.answer:  # the model says the passages do not answer it
        ctx.answer = ""
        return
    ctx.answer = attach_missing(clean_markers(ctx.answer, ctx.passages), ctx.passages)
    ctx.citations = citations_for(ctx.answer, ctx.passages)


def check(ctx: AskContext, embedder: Embedder, cache: EmbeddingCache | None, support_contact: str) -> None:
    """Verify each sentence against its passages and score the answer; no citation at all is a refusal."""
    ctx.checks = verify(ctx.answer, ctx.passages, embedder, cache)
    evidence = ctx.evidence.confidence if ctx.evidence else 0.0
    ctx.answer_confidence = answer_confidence(evidence, ctx.checks)
    if not ctx.citations:  # nothing in the answer points at evidence: do not pass it off as grounded
        ctx.refused, ctx.route = True, "refused"
        ctx.answer = refusal_text(ctx.question, support_contact)
        ctx.answer_confidence = 0.0


def note_disagreement(ctx: AskContext) -> str:
    """When the passages' documents give different figures, say so after the answer; the text added."""
    if ctx.refused or ctx.consistency is None or ctx.consistency.consistent is not False:
        return ""
    note = ("" if is_chinese(ctx.question) else " ") + disagreement_note(
        ctx.question, [(ctx.question, ctx.consistency.conflicts)]
    )
    ctx.answer += note
    return note


DEFAULT_CONTACT = AnswerSettings.model_fields["support_contact"].default
DEFAULT_CONTACT_ZH = "知识库管理员"


def refusal_text(question: str, contact: str) -> str:
    """The refusal, in the question's language, with the support contact (the default one in Chinese
    for a Chinese question)."""
    if is_chinese(question):
        contact = DEFAULT_CONTACT_ZH if contact == DEFAULT_CONTACT else contact
        return f"知识库中没有找到能回答这个问题的内容。如需帮助，请联系：{contact}。"
    return f"The knowledge base does not cover this question. For help, contact {contact}."
