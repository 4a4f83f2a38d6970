"""Answering a question: fast (the staged pipeline) or deep (LangGraph), with query rewriting,
rerank events and, from a resolved scenario, its stages and search cache."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from lore.agent.rewrite import RewritingRetriever
from lore.answer.pipeline import AskPipeline, Event, ScenarioStages
from lore.config import AnswerSettings
from lore.engine.quality import Quality
from lore.errors import LoreError
from lore.events import collecting
from lore.grant import Grant, ScopeError
from lore.retrieve.cache import CachingRetriever, SearchCache
from lore.retrieve.rerank import RERANK
from lore.retrieve.search import Retrieval, SearchOptions


class Asking(Quality):
    """`ask`: a question answered from a KB version as streamed events."""

    def ask(
        self,
        name: str | None,
        question: str,
        options: SearchOptions | None = None,
        version: int | None = None,
        *,
        scope: Grant | None = None,
        stages: ScenarioStages | None = None,
        search_cache: SearchCache | None = None,
        answer: AnswerSettings | None = None,
        mode: str = "fast",
        rewrite: str = "off",
        session_id: str | None = None,
        history: Sequence[dict[str, str]] | None = None,
    ) -> Iterator[Event]:
        """Answer a question from a KB (active version or `version`), streaming events.

        With `scope`: every search is bounded by it; asking wider is a `ScopeError`. A resolved scenario
        (`lore.scenario.request.scenario_ask`) hands in its `stages` (routing, FAQ paths, profiles, a
        retrieval plan), its `search_cache` and its `answer` settings.
        `mode="deep"` plans sub-questions and retrieves, grades and retries (at most 3 rounds);
        `rewrite` ("off", "on", "hyde") searches query variants in fast mode.
        """
        if mode not in ("fast", "deep"):
            raise LoreError(f"mode: 'fast' or 'deep', not {mode!r}")
        opts = options or self.search_options()
        answer = answer or self.settings.answer
        if scope is not None:
            if scope.scenario is not None and stages is None:
                raise ScopeError(
                    f"scope is for scenario {scope.scenario!r}: pass scenario={scope.scenario!r}"
                )
            opts, version = bounded(scope, opts, version)
        if not name:
            raise LoreError("ask: name a knowledge base or a scenario")
        kb = self.catalog.get_kb(name)
        opts = self.scoped(kb, opts, version)
        if answer.evidence_threshold is None:
            answer = answer.model_copy(
                update={"evidence_threshold": self.evidence_threshold(kb, opts.filter.version_seq, question)}
            )
        epoch = self.catalog.cache_epoch(kb.id) if stages is not None or mode == "deep" else 0
        base = self.retriever(kb)
        retriever: Retrieval = base
        if search_cache is not None:  # beneath any rewriting: keyed on the text searched
            retriever = CachingRetriever(base, search_cache, kb.id, epoch)
        generator = self.generator(kb)
        if rewrite != "off":
            retriever = RewritingRetriever(retriever, rewrite, llm=self.llm, history=list(history or ()))

        def fast() -> AskPipeline:
            return AskPipeline(retriever, generator, answer, scenario=stages)

        if mode == "fast":
            events = fast().run(question, opts)
            events = _with_rewrite(events, retriever) if isinstance(retriever, RewritingRetriever) else events
            return _with_rerank(events)
        from lore.agent.graph import DeepPipeline

        if session_id is not None:
            self._remember_deep_session(session_id)
        deep = DeepPipeline(
            base,
            generator,
            self.settings.model_copy(update={"answer": answer}),
            llm=self.llm,
            semantic_cache=self.semantic_cache,
            cache_epoch=epoch,
            namespace=kb.id,
            graph=self.deep_graph,
            fast=fast,
        )
        return _with_rerank(deep.run(question, opts, session_id=session_id, history=history))

    def _remember_deep_session(self, session_id: str) -> None:
        """Keep deep-mode state for the most recent `agent.max_sessions` sessions only (in Redis: a TTL)."""
        if self.settings.redis.url:
            return
        with self._open_lock:
            self._deep_session_ids[session_id] = None


def bounded(scope: Grant, options: SearchOptions, version: int | None) -> tuple[SearchOptions, int | None]:
    """(options bounded by the scope at `version`, the version it reads); naming another version than
    the scope's needs time travel."""
    scope = scope.at_version(version)
    if options.filter.version_seq is not None and options.filter.version_seq != scope.version:
        raise ScopeError(f"version_seq {options.filter.version_seq}: set the version through the scope")
    return replace(options, filter=scope.bound(options.filter)), scope.version


def _with_rewrite(events: Iterator[Event], retriever: RewritingRetriever) -> Iterator[Event]:
    """Fast mode with query rewriting: the variants searched and any skipped LLM step, as a status
    event and in the `end` payload."""
    for event in events:
        if event.type == "end" and retriever.last is not None:
            rewrite = retriever.last.to_json()
            yield Event("status", {"stage": "rewrite", **rewrite})
            event = Event("end", {**event.data, "rewrite": rewrite})
        yield event


def _with_rerank(events: Iterator[Event]) -> Iterator[Event]:
    """Every rerank made while the pipeline runs, as a `status` event (stage `rerank`: provider, candidates,
    ms, any note) and as `rerank` in the `end` payload."""
    made: list[dict[str, Any]] = []
    try:
        while True:
            with collecting(RERANK) as reranks:  # the request's stream, or a private one
                event = next(events, None)
            for info in reranks:
                made.append(dict(info.data))
                yield Event("status", {"stage": "rerank", **made[-1]})
            if event is None:
                return
            if event.type == "end" and made:
                event = Event("end", {**event.data, "rerank": made})
            yield event
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
