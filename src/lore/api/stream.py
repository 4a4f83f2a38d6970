"""The one answer stream behind SSE, WebSocket and the OpenAI-compatible endpoint.

`prepare_ask` resolves the knowledge base, version, session and standalone query (errors become 4xx
before anything streams); `ask_events` runs `Lore.ask` one step at a time in the threadpool and
yields `start`, `status`, `token`, then exactly one `end` or `error`, and records the trace.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool

from lore.agent.rewrite import Standalone, standalone_question
from lore.answer.pipeline import Event
from lore.api.access import own_session, require_kb
from lore.api.deps import ServiceState, error_status, search_options
from lore.api.live import UNAVAILABLE
from lore.api.logs import TRACE_ID
from lore.api.questions import AskBody
from lore.api.scenarios import ScenarioCall, resolve
from lore.api.security import internal_message
from lore.catalog.service import ChatSession
from lore.engine import Lore
from lore.errors import LoreError
from lore.grant import Grant
from lore.metrics import STAGE_SECONDS
from lore.policy import Action
from lore.retrieve.cache import CACHE_EVENTS
from lore.retrieve.search import SearchOptions
from lore.scenario.ask import ScenarioRuntime
from lore.scenario.request import resolved_ask, scenario_ask, scenario_runtime
from lore.schema import SearchFilter

log = logging.getLogger("lore.api")
_DONE = object()


@dataclass
class AskPlan:
    """One question, resolved: knowledge base and version, session, standalone query, scoped options."""

    kb: str
    question: str
    query: str
    kb_version: int | None
    version: int | None  # asked for explicitly (time travel), else None = active
    options: SearchOptions
    transport: str
    session: ChatSession | None = None
    rewrite: Standalone | None = None
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    scenario: ScenarioCall | None = None  # asked through a scenario: its routing, FAQ, profiles, scope
    stages: ScenarioRuntime | None = None  # the scenario's stages, made once for the request
    mode: str = "fast"  # or "deep"
    query_rewrite: str = "off"  # query variants: off | on | hyde

    @property
    def scenario_id(self) -> str:
        return self.scenario.scenario.id if self.scenario else "default"

    @property
    def session_id(self) -> str | None:
        return self.session.id if self.session else None

    def asked(self) -> dict[str, Any]:
        """What was asked, as the `start` event and the trace both record it."""
        return {
            "session_id": self.session_id,
            "kb": self.kb,
            "kb_version": self.kb_version,
            "question": self.question,
            "query": self.query,
        }


def prepare_ask(
    lore: Lore, scope: Grant, body: AskBody, transport: str, history: list[str] | None = None
) -> AskPlan:
    """Resolve a question before streaming (blocking: run it in the threadpool).

    Through a scenario, the question is scoped and its stages made here, once: the KB is the scenario's,
    the search is bounded by the scenario scope, and the router that decides a standalone question is
    the one that answers it.
    """
    question, version, session_id, source = body.question, body.version, body.session_id, body.source
    scenario = None if body.scenario is None else resolve(lore, scope, body.scenario, source, version)
    kb = scenario.scenario.kb_name if scenario else body.kb
    assert kb is not None
    record = require_kb(lore, scope, kb, Action.READ if version is None else Action.READ_VERSION)
    # The version the answer will read (ConflictError -> 409 for a KB with none active yet).
    kb_version = lore.scoped(record, SearchOptions(), version).filter.version_seq
    session = None
    if session_id:
        session = own_session(lore.catalog, session_id, scope)
        if session.kb != kb:
            raise LoreError(f"session '{session_id}' belongs to knowledge base '{session.kb}', not '{kb}'")
    elif body.new_session:
        session = lore.catalog.create_session(scope.tenant, kb, scope.key_id, title=question.strip()[:80])
    if history is None and session is not None:
        turns = lore.settings.api.history_turns
        history = (
            [
                m.query or m.content
                for m in lore.catalog.messages(session.id, limit=2 * turns)
                if m.role == "user"
            ]
            if turns
            else []
        )
    stages = scenario_runtime(lore, scenario.scenario, scenario.scope) if scenario else None
    if history and stages is not None and stages.router.route(question).direct:
        history = []  # a greeting, thanks, hand-off or out-of-scope question stands alone: never rewrite it
    made = standalone_question(
        question, [{"role": "user", "content": q} for q in (history or [])[-6:]], lore.llm
    )
    options = search_options(lore, scope, body.top_k, body.rerank)
    if scenario is not None:  # the scenario scope bounds the filter inside Lore.ask; start from an open one
        options = replace(options, filter=SearchFilter())
    if source is not None:
        options = replace(options, filter=replace(options.filter, sources=[source]))
    return AskPlan(
        kb,
        question,
        made.query,
        kb_version,
        version,
        options,
        transport,
        session,
        rewrite=made,
        scenario=scenario,
        stages=stages,
        mode=body.mode,
        query_rewrite=body.rewrite,
    )


async def ask_events(state: ServiceState, scope: Grant, plan: AskPlan) -> AsyncIterator[dict[str, Any]]:
    """`{"event": type, "data": {...}}` dicts for one question; the trace is saved when it finishes."""
    lore, started = state.lore, time.perf_counter()
    trace = _TraceBuilder(plan, started)
    token = object()
    state.streams.add(token)
    TRACE_ID.set(plan.trace_id)  # this stream's log lines carry the trace id the client sees
    events: Iterator[Event] | None = None
    try:
        yield trace.event(
            "start",
            {
                "trace_id": plan.trace_id,
                **plan.asked(),
                "scenario": plan.scenario_id,
                "rewrite": plan.rewrite.method if plan.rewrite else "none",
                "mode": plan.mode,
                "query_rewrite": plan.query_rewrite,
            },
        )
        try:
            call = plan.scenario
            scoped_scores = (
                lore.catalog.get_kb(plan.kb).store_backend == "embedded"
            )  # see bm25_scores_are_scoped
            how = {"mode": plan.mode, "rewrite": plan.query_rewrite, "session_id": plan.session_id}
            ask = (
                partial(resolved_ask, lore, call.scenario, call.scope, runtime=plan.stages)
                if call  # resolved, scoped and given its stages once, by `prepare_ask`
                else partial(scenario_ask, lore, plan.kb)
            )
            events = await run_in_threadpool(ask, plan.query, plan.options, plan.version, **how)
            while True:
                event = await run_in_threadpool(_step, events, trace.cache)
                if event is _DONE:
                    break
                if event.type == "end" and not scoped_scores:
                    event.data["citations"] = [
                        {**c, "scores": {**c.get("scores", {}), "bm25": None}}
                        for c in event.data.get("citations", [])
                    ]
                if event.type == "error":
                    status = 502 if event.data.get("stage") == "generate" else 400
                    event.data.update(_error_data(plan, str(event.data.get("message")), status))
                yield trace.event(event.type, event.data)
        except LoreError as exc:
            yield trace.event("error", _error_data(plan, str(exc), error_status(exc)))
        except Exception:  # a fault mid-request is an error event with the trace id, never a hang
            log.exception("trace %s failed", plan.trace_id)  # the details stay in the server log
            yield trace.event(
                "error", {"message": internal_message(plan.trace_id), "kind": "internal", "status": 500}
            )
    finally:
        if events is not None:
            events.close()  # the pipeline is suspended (next() is never abandoned mid-call), so this is safe
        state.streams.discard(token)
        with anyio.CancelScope(shield=True):
            try:
                await run_in_threadpool(_finish, lore, scope, plan, trace)
                log.info(
                    "ask kb=%s mode=%s status=%s ms=%s",
                    plan.kb,
                    plan.mode,
                    trace.record()["status"],
                    trace.record()["total_ms"],
                )
            except Exception:  # the answer was delivered; a lost trace is logged
                log.exception("trace %s could not be saved", plan.trace_id)


def _error_data(plan: AskPlan, message: str, status: int) -> dict[str, Any]:
    """An `error` event's message and status; a server's failure (5xx) is told without its address or
    exception text, which stay in the server log."""
    if status < 500:
        return {"message": message, "status": status}
    log.warning("trace %s failed (%s): %s", plan.trace_id, status, message)
    generic = f"{UNAVAILABLE} (trace id {plan.trace_id})"
    if status == 502:
        generic = f"the answer could not be generated; quote trace id {plan.trace_id} to the administrator"
    return {"message": generic, "status": status}


def _step(events: Iterator[Event], cache_events: list[dict[str, Any]]) -> Event | object:
    """The next event, with the scenario search cache's lookups made meanwhile collected for the trace."""
    token = CACHE_EVENTS.set(cache_events)
    try:
        return next(events, _DONE)
    finally:
        CACHE_EVENTS.reset(token)


class _TraceBuilder:
    """Collects what the trace keeps while events pass through."""

    def __init__(self, plan: AskPlan, started: float) -> None:
        self.plan, self.started = plan, started
        self.stages: list[dict[str, Any]] = []
        self.first_token_ms: float | None = None
        self.first_event_ms: float | None = None
        self.end: dict[str, Any] | None = None
        self.error: str | None = None
        self.cache: list[dict[str, Any]] = []  # scenario search cache lookups: hit or miss

    def _ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 1)

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        now = self._ms()
        if self.first_event_ms is None:
            self.first_event_ms = now
        if kind == "status":
            if self.stages:
                self.stages[-1]["ms"] = round(now - self.stages[-1]["at_ms"], 1)
            # Deep mode's rounds: which round and sub-question, the grade and the verdict stay in the trace.
            detail = {
                k: data[k]
                for k in (
                    "round",
                    "sub_question",
                    "query",
                    "sufficient",
                    "verdict",
                    "cached",
                    "hits",
                    "route",
                    "notes",
                )
                if k in data
            }
            if data.get("stage") == "rerank":  # the reranker's own report: who, how many candidates, how long
                detail.update({k: data[k] for k in ("provider", "candidates", "note") if k in data})
                detail["rerank_ms"] = data.get("ms")
            self.stages.append({"stage": data.get("stage"), "at_ms": now, **detail})
        elif kind == "token" and self.first_token_ms is None:
            self.first_token_ms = now
        elif kind in ("end", "error"):
            if self.stages and "ms" not in self.stages[-1]:
                self.stages[-1]["ms"] = round(now - self.stages[-1]["at_ms"], 1)
            data = {
                **data,
                "trace_id": self.plan.trace_id,
                "session_id": self.plan.session_id,
            }
            if kind == "end":
                self.end = data
                for stage, ms in (data.get("timings_ms") or {}).items():
                    STAGE_SECONDS.labels(stage).observe(float(ms) / 1000)
            else:
                self.error = str(data.get("message"))
        return {"event": kind, "data": data}

    def record(self) -> dict[str, Any]:
        end = self.end or {}
        return {
            "status": "ok" if self.end else ("error" if self.error else "cancelled"),
            "route": end.get("route"),
            "error": self.error,
            "first_token_ms": self.first_token_ms,
            "total_ms": self._ms(),
            "data": {
                "stages": self.stages,
                "first_event_ms": self.first_event_ms,
                "timings_ms": end.get("timings_ms", {}),
                "plan": end.get("plan"),
                "hits": {
                    "citations": len(end.get("citations", [])),
                    "verified_sentences": len(end.get("verification", [])),
                },
                "confidences": {
                    "evidence": end.get("evidence_confidence"),
                    "answer": end.get("answer_confidence"),
                    "low": end.get("low_confidence"),
                },
                "evidence": end.get("evidence"),
                "filter": _filter_json(self.plan),
                "scenario": self.plan.scenario_id,
                "profile": (end.get("profile") or {}).get("name"),
                "scope": self.plan.scenario.scope.to_json() if self.plan.scenario else None,
                "cache": self.cache,
                "cache_hits": sum(c["hit"] for c in self.cache),
                "rewrite": vars(self.plan.rewrite) if self.plan.rewrite else None,
                "mode": end.get("mode", self.plan.mode),
                "rounds": end.get("rounds"),
                "sub_questions": end.get("sub_questions"),
                "end": end or None,
            },
        }


def _filter_json(plan: AskPlan) -> dict[str, Any]:
    f = plan.scenario.scope.bound(plan.options.filter) if plan.scenario else plan.options.filter
    return {"tenant_ids": f.tenant_ids, "dataset_ids": f.dataset_ids, "roles": f.roles, "sources": f.sources}


def rolling_summary(queries: list[str], limit: int = 5) -> str:
    """A short summary of what a session asked about: its last standalone questions."""
    return " | ".join(q[:120] for q in queries[-limit:])


def _finish(lore: Lore, scope: Grant, plan: AskPlan, trace: _TraceBuilder) -> None:
    """Save the trace, and for a session the two turns and its rolling summary."""
    rec = trace.record()
    session_id = plan.session_id
    rec["data"]["grant"] = (
        (plan.scenario.scope if plan.scenario else scope).at_version(plan.version).to_json()
    )
    by = {"tenant_id": scope.tenant, "key_id": scope.key_id, "transport": plan.transport}
    lore.catalog.save_trace(id=plan.trace_id, **by, **plan.asked(), **rec)
    if session_id is None or trace.end is None:
        return
    with lore.catalog.transaction():
        lore.catalog.add_message(session_id, "user", plan.question, query=plan.query)
        lore.catalog.add_message(session_id, "assistant", trace.end.get("answer", ""), trace_id=plan.trace_id)
    queries = [m.query or m.content for m in lore.catalog.messages(session_id, limit=10) if m.role == "user"]
    lore.catalog.set_session_summary(session_id, rolling_summary(queries))
