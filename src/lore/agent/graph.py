"""Deep mode as a LangGraph `StateGraph`:

understand -> plan -> (simple: fast pipeline) | retrieve -> grade -> [rewrite -> retrieve ...]
-> generate -> verify, with at most `agent.max_rounds` (<= 3) retrieve-grade rounds. Works offline
(rule-based plan, score-threshold grades, the extractive generator); with a chat endpoint the plan
and grades come from the LLM, validated, retried once, else the rules (noted in the trace).
A checkpointer keeps each session's turns so follow-ups are made self-contained.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from lore.agent import prompts
from lore.agent.compose import finish, generate
from lore.agent.decompose import Plan, decompose, merge_parts
from lore.agent.grade import grade, next_query
from lore.agent.llm import Budget, BudgetExceeded, ChatLLM, ask_validated
from lore.agent.rewrite import merge_hits, standalone_question
from lore.agent.state import DeepState, RunContext, turn_input
from lore.answer.generators.base import GenerationError, Generator
from lore.answer.pipeline import AskPipeline, Event, check_question
from lore.config import Settings
from lore.errors import LoreError
from lore.retrieve.search import Retrieval, SearchOptions
from lore.retrieve.semantic_cache import CachedRetriever, SemanticCache
from lore.schema import Hit

Node = Runtime[RunContext]


def understand(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Check the question, make it self-contained from the session's history, classify it."""
    ctx, started = runtime.context, time.perf_counter()
    question = state["question"].strip()
    check_question(question, ctx.settings.answer)
    history = ctx.history if ctx.history is not None else (state.get("history") or [])
    made = standalone_question(question, history, ctx.llm, ctx.budget, one_question=True)
    how = _HOW[made.method] + (f" ({made.note})" if made.note else "")
    entry = ctx.status("understand", standalone=made.query, how=how)
    ctx.timed("understand", started)
    return {"question": question, "standalone": made.query, "trace": [*state.get("trace", []), entry]}


_HOW = {
    "none": "as asked",
    "llm": "rewritten by the LLM from the session's history",
    "rule": "the previous question carried over",
}


def plan(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Sub-questions: from the LLM when configured (validated, retried once), else the rules."""
    ctx, started = runtime.context, time.perf_counter()
    limit = ctx.settings.agent.max_sub_questions
    notes: list[str] = []
    result: Plan | None = None
    if ctx.llm is not None:
        result = ask_validated(
            ctx.llm,
            prompts.plan_messages(state["standalone"], limit),
            Plan,
            budget=ctx.budget,
            max_tokens=400,
            note=notes.append,
        )
    source = "llm" if result is not None else "rules"
    if result is None:
        if ctx.llm is None:
            notes.append("planning by rules: no LLM configured")
        result = decompose(state["standalone"], limit)
    subs = merge_parts(result.sub_questions, limit)
    if (n := len(result.sub_questions)) > limit:
        notes.append(f"{n} parts, over the limit of {limit}: parts {limit}-{n} searched together")
    # The kind follows from the parts: one part is simple; several are never "simple" (an LLM saying so
    # would send the question to the fast path with its first part only).
    kind = "simple" if len(subs) < 2 else ("multi-hop" if result.kind == "simple" else result.kind)
    entry = ctx.status(
        "plan", source=source, kind=kind, sub_questions=subs, reasoning=result.reasoning, notes=notes
    )
    ctx.timed("plan", started)
    return {
        "kind": kind,
        "plan_source": source,
        "sub_questions": subs,
        "queries": list(subs),
        "sufficient": [False] * len(subs),
        "trace": [*state.get("trace", []), entry],
    }


def route_plan(state: DeepState, runtime: Node) -> str:
    simple = state["kind"] == "simple"
    return "fast" if simple and runtime.context.settings.agent.shortcut_simple else "retrieve"


def fast(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Tiered routing: a simple question runs the fast pipeline; its events pass straight through."""
    ctx = runtime.context
    entry = ctx.status("route", route="fast", reason="simple question")
    pipeline = ctx.fast() if ctx.fast else AskPipeline(ctx.retriever, ctx.generator, ctx.settings.answer)
    for event in pipeline.run(state["sub_questions"][0], ctx.search):
        if event.type == "end":
            ctx.end = {
                **event.data,
                "question": state["question"],
                "mode": "fast",
                "rounds": 0,
                "kind": "simple",
                "sub_questions": [{"question": state["sub_questions"][0]}],
                "not_covered": [],
                "standalone_question": state["standalone"],
            }
        elif event.type == "error":
            ctx.error = event
        else:
            ctx.emit(event)
    trace = [*state.get("trace", []), entry]
    if ctx.end:
        ctx.end["trace"] = trace
    return {"answer": ctx.end["answer"] if ctx.end else "", "trace": trace}


def one_per_parent(hits: list[Hit], k: int) -> list[Hit]:
    """The best hit of each parent passage, best first, at most `k`: a sub-question's few slots should
    not go to overlapping windows of one passage (the context shows the parent passage anyway)."""
    seen: set[str] = set()
    kept = []
    for h in hits:
        if h.chunk.parent_id not in seen:
            seen.add(h.chunk.parent_id)
            kept.append(h)
    return kept[:k]


def retrieve(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Search each sub-question still lacking evidence, in the caller's scope; merge with earlier rounds."""
    ctx, started = runtime.context, time.perf_counter()
    round_ = state["round"] + 1
    trace = []
    for i, query in enumerate(state["queries"]):
        if state["sufficient"][i]:
            continue
        wide = replace(ctx.search, top_k=3 * ctx.search.top_k)
        hits = one_per_parent(ctx.retriever.search(query, wide), ctx.search.top_k)
        cached = bool(getattr(ctx.retriever, "last_cached", False))
        # Fused by parent passage: two rounds finding different windows of one passage agree on it
        # (fused by chunk id, they split its votes and a passage both rounds found could drop).
        ctx.hits[i] = (
            merge_hits([hits, ctx.hits[i]], ctx.search.top_k, ctx.search.rrf_k, by_parent=True)
            if ctx.hits.get(i)
            else hits
        )
        trace.append(
            ctx.status("retrieve", round=round_, sub_question=i, query=query, hits=len(hits), cached=cached)
        )
    ctx.timed("retrieve", started)
    return {"round": round_, "trace": [*state.get("trace", []), *trace]}


def grade_node(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Grade each open sub-question; decide: answer, retry, or stop (round limit, budget)."""
    ctx, started = runtime.context, time.perf_counter()
    sufficient = list(state["sufficient"])
    trace = []
    for i, sub in enumerate(state["sub_questions"]):
        if sufficient[i]:
            continue
        entry = grade(ctx, state["standalone"], i, sub, state["round"])
        sufficient[i] = bool(entry["sufficient"])
        trace.append(ctx.status("grade", **entry))
    if all(sufficient):
        verdict = "sufficient"
    elif state["round"] >= ctx.settings.agent.max_rounds:
        verdict = "rounds exhausted"
    elif not ctx.budget.time_left():
        verdict = "budget spent"
    else:
        verdict = "retry"
    trace.append(
        ctx.status(
            "verdict",
            round=state["round"],
            verdict=verdict,
            open=[i for i, ok in enumerate(sufficient) if not ok],
        )
    )
    ctx.timed("grade", started)
    return {"sufficient": sufficient, "verdict": verdict, "trace": [*state.get("trace", []), *trace]}


def route_grade(state: DeepState) -> str:
    return "rewrite" if state["verdict"] == "retry" else "generate"


def rewrite(state: DeepState, runtime: Node) -> dict[str, Any]:
    """A new query for each open sub-question (never one already tried for it)."""
    ctx = runtime.context
    queries = list(state["queries"])
    tried = {
        i: [
            e["query"]
            for e in state.get("trace", [])
            if e.get("stage") == "retrieve" and e.get("sub_question") == i
        ]
        for i in range(len(queries))
    }
    trace = []
    for i, sub in enumerate(state["sub_questions"]):
        if state["sufficient"][i]:
            continue
        queries[i], strategy = next_query(ctx, i, sub, state["standalone"], [sub, *tried[i]])
        trace.append(
            ctx.status(
                "rewrite", round=state["round"] + 1, sub_question=i, query=queries[i], strategy=strategy
            )
        )
    return {"queries": queries, "trace": [*state.get("trace", []), *trace]}


def generate_node(state: DeepState, runtime: Node) -> dict[str, Any]:
    """Answer from the covered sub-questions' passages, then cite, verify and score."""
    ctx = runtime.context
    covered = [i for i, ok in enumerate(state["sufficient"]) if ok]
    ctx.status("generate", generator=ctx.generator.name, covered=covered)
    answer, passages = generate(ctx, state, covered) if covered else ("", [])
    ctx.status("verify")
    ctx.end = finish(ctx, state, answer, passages, covered)
    ctx.end["trace"] = [*state.get("trace", [])]
    return {"answer": ctx.end["answer"]}


def remember(state: DeepState) -> dict[str, Any]:
    """Append this turn to the session's history (kept by the checkpointer)."""
    return {
        "history": [
            {"role": "user", "content": state["question"]},
            {"role": "assistant", "content": state.get("answer", "")},
        ]
    }


def build_graph() -> StateGraph[DeepState, RunContext, DeepState, DeepState]:
    """The deep-mode state graph (uncompiled)."""
    g = StateGraph(DeepState, context_schema=RunContext)
    for name, fn in (
        ("understand", understand),
        ("plan", plan),
        ("fast", fast),
        ("retrieve", retrieve),
        ("grade", grade_node),
        ("rewrite", rewrite),
        ("generate", generate_node),
        ("remember", remember),
    ):
        g.add_node(name, fn)
    g.add_edge(START, "understand")
    g.add_edge("understand", "plan")
    g.add_conditional_edges("plan", route_plan, {"fast": "fast", "retrieve": "retrieve"})
    g.add_edge("retrieve", "grade")
    g.add_conditional_edges("grade", route_grade, {"rewrite": "rewrite", "generate": "generate"})
    g.add_edge("rewrite", "retrieve")
    g.add_edge("fast", "remember")
    g.add_edge("generate", "remember")
    g.add_edge("remember", END)
    return g


class DeepPipeline:
    """Deep-mode answers over one knowledge base, streamed as the fast pipeline's `Event`s.

    Keep one instance (or at least one `checkpointer`) per process so sessions remember their turns.
    """

    def __init__(
        self,
        retriever: Retrieval,
        generator: Generator,
        settings: Settings,
        *,
        llm: ChatLLM | None = None,
        semantic_cache: SemanticCache | None = None,
        cache_epoch: int = 0,
        namespace: str = "",
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        graph: Any = None,
        fast: Callable[[], AskPipeline] | None = None,
    ) -> None:
        self.retriever, self.generator, self.settings, self.llm = retriever, generator, settings, llm
        self.fast = fast  # simple questions go here (a scenario's pipeline, with routing and FAQ)
        if semantic_cache is not None:
            self.retriever = CachedRetriever(
                retriever, semantic_cache, epoch=cache_epoch, namespace=namespace
            )
        # `graph`: an already compiled `build_graph()` (with its checkpointer), shared across requests.
        self.graph = graph or build_graph().compile(checkpointer=checkpointer or InMemorySaver())
        self.checkpointer = cast(BaseCheckpointSaver[Any], self.graph.checkpointer)  # compiled with one

    def run(
        self,
        question: str,
        search: SearchOptions,
        *,
        session_id: str | None = None,
        history: Sequence[dict[str, str]] | None = None,
    ) -> Iterator[Event]:
        """Yield status/token events, then exactly one `end` (mode, rounds, sub_questions...) or `error`.

        Turns of one `session_id` are remembered; `history` (role/content messages), when given,
        is used instead (for callers that keep conversations themselves).
        """
        agent = self.settings.agent
        events: queue.Queue[Event | None] = queue.Queue()
        ctx = RunContext(
            self.retriever,
            self.generator,
            self.settings,
            search,
            Budget(agent.token_budget, agent.time_budget_s),
            self.llm,
            emit=events.put,
            history=list(history) if history is not None else None,
            fast=self.fast,
        )
        thread_id = session_id or uuid.uuid4().hex
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        crashed: list[Exception] = []

        def work() -> None:
            try:
                for _ in self.graph.stream(turn_input(question), config, context=ctx, stream_mode="updates"):
                    pass
            except BudgetExceeded as exc:
                ctx.error = Event("error", {"message": f"budget: {exc}", "trace_id": ctx.trace_id})
            except GenerationError as exc:
                ctx.error = Event(
                    "error", {"message": str(exc), "stage": "generate", "trace_id": ctx.trace_id}
                )
            except LoreError as exc:
                ctx.error = Event("error", {"message": str(exc), "trace_id": ctx.trace_id})
            except Exception as exc:  # noqa: BLE001 -- a bug: re-raised in the caller's thread
                crashed.append(exc)
            finally:
                if session_id is None:  # nothing will ask for this turn again: keep no state for it
                    self.checkpointer.delete_thread(thread_id)
                events.put(None)

        # The graph runs in a worker so tokens reach the caller while the answer is generated.
        worker = threading.Thread(target=work, name="lore-deep", daemon=True)
        worker.start()
        try:
            while (event := events.get()) is not None:
                yield event
        finally:
            ctx.budget.cancelled = worker.is_alive()  # closed early (client gone): stop rounds and LLM calls
        worker.join()
        if crashed:
            raise crashed[0]
        if ctx.error is not None:
            yield ctx.error
        elif ctx.end is not None:
            yield Event("end", ctx.end)
        else:
            yield Event(
                "error", {"message": "deep mode finished without an answer", "trace_id": ctx.trace_id}
            )

    def history(self, session_id: str) -> Sequence[dict[str, str]]:
        """The session's turns so far (question and answer pairs)."""
        snapshot = self.graph.get_state({"configurable": {"thread_id": session_id}})
        return list(snapshot.values.get("history", [])) if snapshot else []
