"""The scenario stages of asking: route (direct answers, FAQ exact match), FAQ search, scoped retrieval.

`AskPipeline` calls these when it is given a `ScenarioRuntime`; without one it behaves as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from lore.answer.citations import insert_marker
from lore.answer.evidence import Evidence
from lore.answer.generators.base import Passage
from lore.config import ScenarioSettings
from lore.embed.cache import embed_texts
from lore.lexical import is_chinese, tokenize
from lore.retrieve.cache import SearchCache
from lore.retrieve.search import Retrieval, SearchOptions
from lore.scenario.config import Scenario
from lore.scenario.decide import RoutingDecision, decide
from lore.scenario.plan import RetrievalPlan
from lore.scenario.profiles import scenario_profiles
from lore.scenario.routing import Router
from lore.scenario.scope import Scope, ScopeError
from lore.schema import Hit, SearchFilter
from lore.text.normalise import normalise
from lore.text.sentences import coverage

if TYPE_CHECKING:
    from lore.answer.pipeline import AskContext

DOC_TYPES = ["doc", "table_row"]
FAQ_AGREEMENT = 0.5  # lexical agreement an FAQ question needs to answer directly or join the evidence
_DIRECT = {
    "greeting": (
        "您好，我是{assistant_name}，可以回答{business_domain}相关的问题，请问有什么可以帮您？",
        "Hello, I'm {assistant_name}. Ask me anything about {business_domain}.",
    ),
    "thanks": (
        "不客气！如果还有{business_domain}方面的问题，随时问我。",
        "You're welcome! Ask me anything else about {business_domain}.",
    ),
    "handoff": (
        "好的，请联系人工支持：{support_contact}。",
        "Sure. To reach a person, contact {support_contact}.",
    ),
    "out_of_scope": (
        (
            "这个问题超出了{business_domain}的范围，我只能回答{business_domain}相关的问题。"
            "如需其他帮助，请联系：{support_contact}。"
        ),
        (
            "That is outside {business_domain}, so I cannot answer it here. For other help, "
            "contact {support_contact}."
        ),
    ),
}


def narrow(
    flt: SearchFilter, *, source_types: list[str] | None = None, sources: list[str] | None = None
) -> SearchFilter:
    """`flt` further restricted (intersected where it already restricts): never wider."""

    def meet(old: list[str] | None, new: list[str] | None) -> list[str] | None:
        if new is None:
            return old
        return list(new) if old is None else [v for v in old if v in new]

    return replace(flt, source_types=meet(flt.source_types, source_types), sources=meet(flt.sources, sources))


@dataclass
class ScenarioRuntime:
    """One scenario, one caller's scope and the KB state a request is answered against."""

    scenario: Scenario
    scope: Scope
    settings: ScenarioSettings
    cache: SearchCache | None = None

    def __post_init__(self) -> None:
        self.router = Router(self.scenario)
        self.variables = self.scenario.prompt_variables()
        self.profiles = scenario_profiles(self.scenario)

    # --- stage: route ---------------------------------------------------------------------------

    def route(self, ctx: AskContext, retriever: Retrieval, max_passages: int, budget: int) -> None:
        """Deterministic route, intent, profile, plan and source; direct answers and FAQ exact match."""
        d = decide(
            self.router,
            self.profiles,
            self.variables,
            ctx.question,
            top_k=ctx.search.top_k,
            recall_k=ctx.search.recall_k,
            rerank=ctx.search.rerank,
            max_passages=max_passages,
            context_budget=budget,
            faq_threshold=self.settings.faq_direct_threshold,
        )
        route, intent, profile, plan = d.route, d.intent, d.profile, d.plan
        ctx.profile, ctx.plan = profile, plan
        ctx.max_passages, ctx.context_budget = plan.max_passages, plan.context_budget
        ctx.extra.update(
            {
                "scenario": self.scenario.id,
                "intent": intent,
                "profile": profile.to_json(),
                "rule": route.to_json(),
                "scope": self.scope.to_json(),
                "source": self._source(ctx.search.filter, d),
            }
        )
        ctx.route = route.name
        if route.direct:
            zh, en = _DIRECT[route.name]
            ctx.answer = (zh if is_chinese(ctx.question) else en).format_map(self.variables)
            ctx.direct, ctx.refused = True, route.name == "out_of_scope"
            ctx.answer_confidence = 0.0 if ctx.refused else 1.0
            return
        self._faq_exact(ctx, retriever)

    def _source(self, flt: SearchFilter, d: RoutingDecision) -> dict[str, Any]:
        """The caller's named source (validated), else the one the scenario's patterns point at."""
        if flt.sources is not None:
            for s in flt.sources:
                if s not in {x.id for x in self.scenario.sources} | {"general"}:
                    raise ScopeError(
                        f"source {s!r}: not a source of scenario {self.scenario.id!r} "
                        f"(sources: {', '.join(x.id for x in self.scenario.sources)})"
                    )
            return {"ids": list(flt.sources), "how": "given"}
        return d.source()

    def _faq_exact(self, ctx: AskContext, retriever: Retrieval) -> None:
        """A lexical lookup (no embedding, no generation) for an FAQ question equal to the question."""
        key = normalise(ctx.question, match_key=True)
        opts = SearchOptions(
            "bm25", 20, 20, filter=narrow(ctx.search.filter, source_types=["faq"]), rerank=False
        )
        for hit in retriever.search(ctx.question, opts):
            if normalise(hit.chunk.text, match_key=True) == key:
                self._answer_with_faq(ctx, hit, 1.0, "faq_exact")
                return

    # --- stage: FAQ search ----------------------------------------------------------------------

    def faq(self, ctx: AskContext, retriever: Retrieval) -> None:
        """FAQ candidates by hybrid search; a close enough one answers, the others may join the evidence."""
        plan: RetrievalPlan = ctx.plan
        flt = narrow(ctx.search.filter, source_types=["faq"])
        opts = replace(ctx.search, top_k=plan.faq_k, recall_k=max(20, plan.faq_k), filter=flt, min_score=0.0)
        if ctx.search.mode != "bm25":
            _query_vector(ctx, retriever)
        hits = retriever.search(ctx.question, opts, vector=ctx.query_vector)
        if not hits:
            ctx.extra["faq"] = []
            return
        q_vec = _query_vector(ctx, retriever)
        sims = embed_texts(retriever.embedder, [h.chunk.text for h in hits], "query", retriever.cache) @ q_vec
        scored = sorted(
            (
                (float(s), faq_agreement(ctx.question, h.chunk.text), h)
                for s, h in zip(sims, hits, strict=True)
            ),
            key=lambda t: -t[0],
        )
        ctx.extra["faq"] = [
            {
                "chunk_id": h.chunk.chunk_id,
                "question": h.chunk.text,
                "similarity": round(s, 4),
                "agreement": round(k, 3),
            }
            for s, k, h in scored
        ]
        best_sim, best_key, best = scored[0]
        if best_sim >= plan.faq_direct_threshold and best_key >= FAQ_AGREEMENT:
            self._answer_with_faq(ctx, best, best_sim, "faq_direct")
            return
        ctx.faq_hits = [
            h for s, k, h in scored if s >= self.settings.faq_join_threshold and k >= FAQ_AGREEMENT
        ]
        ctx.extra["faq_joined"] = [h.chunk.chunk_id for h in ctx.faq_hits]

    def _answer_with_faq(self, ctx: AskContext, hit: Hit, score: float, route: str) -> None:
        chunk = hit.chunk
        ctx.passages = [Passage(1, chunk.parent_text, [hit])]
        ctx.answer = insert_marker((chunk.answer or chunk.parent_text).strip(), 1)
        ctx.route, ctx.direct = route, True
        ctx.answer_confidence = round(score, 3)
        ctx.extra["faq_match"] = {
            "chunk_id": chunk.chunk_id,
            "question": chunk.text,
            "line": chunk.row,
            "score": round(score, 4),
        }
        ctx.evidence = Evidence(
            round(score, 3), True, 1.0, 1.0, score, 1.0, 1, reasons=[f"{route}: FAQ line {chunk.row}"]
        )

    # --- stage: document retrieval --------------------------------------------------------------

    def retrieve(self, ctx: AskContext, retriever: Retrieval) -> None:
        """Documents (pre-filtered by a confident source, else the whole scope), FAQ candidates first."""
        plan: RetrievalPlan = ctx.plan
        if ctx.search.mode != "bm25":
            _query_vector(ctx, retriever)
        base = replace(
            ctx.search,
            top_k=plan.doc_k,
            recall_k=max(plan.recall_k, plan.doc_k),
            rerank=plan.rerank and ctx.search.rerank,
        )  # a request may switch reranking off
        source = ctx.extra["source"]
        hits: list[Hit] = []
        if source["ids"]:
            hits = retriever.search(
                ctx.question,
                replace(base, filter=narrow(base.filter, source_types=DOC_TYPES, sources=source["ids"])),
                vector=ctx.query_vector,
            )
            if not hits and source["how"] == "inferred":
                source["how"] = "inferred, no hits: whole scope"
        if not hits and source["how"] != "given":
            hits = retriever.search(
                ctx.question,
                replace(base, filter=narrow(base.filter, source_types=DOC_TYPES)),
                vector=ctx.query_vector,
            )
        ctx.hits = [*ctx.faq_hits, *hits]


def _query_vector(ctx: AskContext, retriever: Retrieval) -> np.ndarray:
    """The question's embedding, made once per ask and kept on the context (not in BM25 mode, whose
    evidence goes without it)."""
    if ctx.query_vector is not None:
        return ctx.query_vector
    vector = retriever.embed_query(ctx.question)
    if ctx.search.mode != "bm25":
        ctx.query_vector = vector
    return vector


def faq_agreement(question: str, faq_question: str) -> float:
    """Lexical agreement of a question and an FAQ question: the mean of the rarity-weighted share of
    each one's words the other holds (0-1). Close embeddings alone are not enough: 出差的交通标准 is
    not 出差住宿标准 however near the two sit in embedding space."""
    return (coverage(tokenize(question), faq_question) + coverage(tokenize(faq_question), question)) / 2
