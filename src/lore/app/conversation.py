"""The ask use case, the same for every transport: resolve a question (KB, version, session, standalone
query, scoped options), run it as events, and save its trace and the session's turns.

`prepare_ask` raises a `LoreError` before anything streams; `answer_events` yields `start`, `status`,
`token`, then exactly one `end` or `error`, and saves the trace when it ends or is closed. Blocking: the
API steps it in its threadpool, the CLI and MCP call it directly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lore.agent.rewrite import standalone_question
from lore.answer.pipeline import Event
from lore.app.access import own_session, require_kb
from lore.app.options import bm25_scores_are_scoped, search_options
from lore.app.plan import AskPlan
from lore.app.requests import AskRequest
from lore.app.scenarios import ScenarioCall, resolve
from lore.app.traces import TraceBuilder, save_trace
from lore.catalog.service_records import ChatSession
from lore.engine import Lore
from lore.errors import UNAVAILABLE, LoreError, check_length, error_status, internal_message
from lore.events import EventStream
from lore.grant import Grant
from lore.metrics import observe
from lore.policy import Action
from lore.retrieve.search import SearchOptions
from lore.scenario.request import resolved_ask, scenario_ask, scenario_runtime, scenarios
from lore.scenario.scope import check_scope, scenario_scope
from lore.schema import SearchFilter
from lore.telemetry import exporter

log = logging.getLogger("lore.app")
OPERATOR_TENANT = "default"  # the local operator's sessions and traces of a KB without an owner


def check_question(lore: Lore, question: str, history: Sequence[str] = ()) -> None:
    """A question (and each history turn) over `answer.max_question_chars` is refused, never echoed."""
    limit = lore.settings.answer.max_question_chars
    for name, text in (("question", question), *(("history", turn) for turn in history)):
        check_length(name, text, limit)


def prepare_ask(
    lore: Lore, caller: Grant, request: AskRequest, transport: str, history: list[str] | None = None
) -> AskPlan:
    """Resolve a key holder's question: the policy decides the KB, scenario, version and session.

    Through a scenario, the question is scoped and its stages made here, once: the KB is the scenario's,
    the search is bounded by the scenario scope, and the router that decides a standalone question is
    the one that answers it.
    """
    check_question(lore, request.question, history or ())
    version, source = request.version, request.source
    call = None if request.scenario is None else resolve(lore, caller, request.scenario, source, version)
    kb = call.scenario.kb_name if call else request.kb
    assert kb is not None
    record = require_kb(lore, caller, kb, Action.READ if version is None else Action.READ_VERSION)
    session = None
    if request.session_id:
        session = own_session(lore.catalog, request.session_id, caller)
    options = search_options(lore, caller, request.top_k, request.rerank)
    plan = AskPlan(
        kb, request.question, request.question, None, version, options, transport, caller.tenant, caller
    )
    plan.hide_bm25 = not bm25_scores_are_scoped(record.store_backend)
    return _converse(lore, plan, request, session, call, history)


def operator_plan(lore: Lore, request: AskRequest, scope: Grant | None, transport: str = "cli") -> AskPlan:
    """Resolve the local operator's question (no key: the files are the operator's), bounded by `scope`
    when the CLI narrows it (tenant, roles, datasets) or by the scenario's own lists."""
    check_question(lore, request.question)
    call = None
    if request.scenario is not None:
        sc = scenarios(lore).get(request.scenario)
        if request.kb and request.kb != sc.kb_name:
            raise LoreError(
                f"scenario {sc.id!r} answers from knowledge base {sc.kb_name!r}, not {request.kb!r}"
            )
        bound = scenario_scope(sc) if scope is None else check_scope(scope, sc)
        call = ScenarioCall(sc, bound.at_version(request.version))
    kb = call.scenario.kb_name if call else request.kb
    if kb is None:
        raise LoreError("kb: required unless a scenario is given")
    record = lore.catalog.get_kb(kb)
    owner, _ = lore.catalog.kb_tenants(record.id)
    tenant = scope.tenant if scope else owner or OPERATOR_TENANT
    session = None
    if request.session_id:
        session = lore.catalog.get_session(request.session_id, tenant)
    options = search_options(lore, None, request.top_k, request.rerank)
    plan = AskPlan(
        kb, request.question, request.question, None, request.version, options, transport, tenant, scope
    )
    plan.scope = None if call else scope
    return _converse(lore, plan, request, session, call, None)


def _converse(
    lore: Lore,
    plan: AskPlan,
    request: AskRequest,
    session: ChatSession | None,
    call: ScenarioCall | None,
    history: list[str] | None,
) -> AskPlan:
    """The parts every caller shares: version read, session and its history, standalone query, scope."""
    # The version the answer will read (ConflictError -> 409 for a KB with none active yet).
    plan.kb_version = lore.scoped(plan.kb, SearchOptions(), plan.version).filter.version_seq
    if session is not None and session.kb != plan.kb:
        raise LoreError(f"session '{session.id}' belongs to knowledge base '{session.kb}', not '{plan.kb}'")
    if session is None and request.new_session:
        key_id = plan.caller.key_id if plan.caller else None
        session = lore.catalog.create_session(
            plan.tenant, plan.kb, key_id, title=request.question.strip()[:80]
        )
    if history is None and session is not None:
        turns = lore.settings.api.history_turns
        asked = lore.catalog.messages(session.id, limit=2 * turns) if turns else []
        history = [m.query or m.content for m in asked if m.role == "user"]
    stages = scenario_runtime(lore, call.scenario, call.scope) if call else None
    if history and stages is not None and stages.router.route(request.question).direct:
        history = []  # a greeting, thanks, hand-off or out-of-scope question stands alone: never rewrite it
    made = standalone_question(
        request.question, [{"role": "user", "content": q} for q in (history or [])[-6:]], lore.llm
    )
    options = plan.options
    if call is not None:  # the scenario scope bounds the filter inside Lore.ask; start from an open one
        options = replace(options, filter=SearchFilter())
    if request.source is not None:
        options = replace(options, filter=replace(options.filter, sources=[request.source]))
    return replace(
        plan,
        query=made.query,
        options=options,
        session=session,
        rewrite=made,
        scenario=call,
        stages=stages,
        mode=request.mode,
        query_rewrite=request.rewrite,
    )


CALLER_KINDS = ("start", "status", "token", "end", "error")  # what the stream sent to the caller carries


def answer_events(
    lore: Lore, plan: AskPlan, stream: EventStream | None = None
) -> Generator[dict[str, Any], None, None]:
    """`{"event": type, "data": {...}}` dicts for one question; the trace (and a session's two turns) is
    saved when the iterator ends or is closed. Every event goes through the request's `stream`."""
    stream = stream or EventStream(plan.trace_id)
    trace = TraceBuilder(plan, time.perf_counter())
    outbox: list[dict[str, Any]] = []
    stream.subscribe(trace)
    stream.subscribe(observe)
    if (otlp := exporter(lore.settings.telemetry.endpoint, lore.settings.telemetry.service_name)) is not None:
        stream.subscribe(otlp.subscriber("lore.ask"))
    stream.subscribe(
        lambda e: outbox.append({"event": e.kind, "data": e.data}) if e.kind in CALLER_KINDS else None
    )
    events: Iterator[Event] | None = None
    status = "cancelled"
    try:
        start = {
            "trace_id": plan.trace_id,
            **plan.asked(),
            "scenario": plan.scenario_id,
            "rewrite": plan.rewrite.method if plan.rewrite else "none",
            "mode": plan.mode,
            "query_rewrite": plan.query_rewrite,
        }
        yield from _relay(stream, outbox, "start", start)
        try:
            events = _pipeline(lore, plan)
            while (event := _step(events, stream)) is not None:
                yield from _relay(stream, outbox, event.type, _shown(plan, event))
        except LoreError as exc:
            data = error_data(plan, str(exc), error_status(exc))
            yield from _relay(stream, outbox, "error", _ended(plan, data))
        except Exception:  # a fault mid-request is an error event with the trace id, never a hang
            log.exception("trace %s failed", plan.trace_id)  # the details stay in the server log
            data = {"message": internal_message(plan.trace_id), "kind": "internal", "status": 500}
            yield from _relay(stream, outbox, "error", _ended(plan, data))
    finally:
        if (close := getattr(events, "close", None)) is not None:
            close()  # the pipeline is suspended between steps, so closing it here is safe
        try:
            save_trace(lore, plan, trace)
            record = trace.record()
            status = record["status"]
            log.info("ask kb=%s mode=%s status=%s ms=%s", plan.kb, plan.mode, status, record["total_ms"])
        except Exception:  # the answer was delivered; a lost trace is logged
            log.exception("trace %s could not be saved", plan.trace_id)
        finally:
            stream.emit("done", {"status": status})  # the request's last event: exporters close its span


def _relay(
    stream: EventStream, outbox: list[dict[str, Any]], kind: str, data: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """Emit one event on the request's stream, then what the caller's subscriber took of it."""
    stream.emit(kind, data)
    while outbox:
        yield outbox.pop(0)


def _pipeline(lore: Lore, plan: AskPlan) -> Iterator[Event]:
    mode, rewrite, session_id = plan.mode, plan.query_rewrite, plan.session_id
    call = plan.scenario
    if call is not None:  # resolved, scoped and given its stages once, by `prepare_ask`
        return resolved_ask(
            lore,
            call.scenario,
            call.scope,
            plan.query,
            plan.options,
            plan.version,
            runtime=plan.stages,
            mode=mode,
            rewrite=rewrite,
            session_id=session_id,
        )
    return scenario_ask(
        lore,
        plan.kb,
        plan.query,
        plan.options,
        plan.version,
        scope=plan.scope,
        mode=mode,
        rewrite=rewrite,
        session_id=session_id,
    )


def _step(events: Iterator[Event], stream: EventStream) -> Event | None:
    """The next event, with the request's stream current: stages run meanwhile (search cache lookups,
    reranks) report to it."""
    with stream.bound():
        return next(events, None)


def _shown(plan: AskPlan, event: Event) -> dict[str, Any]:
    """An event's data as the caller may see it: BM25 scores hidden where they count other tenants'
    chunks; an error with its status; the end or error with the trace and session ids."""
    data = event.data
    if event.type == "end" and plan.hide_bm25:
        data["citations"] = [
            {**c, "scores": {**c.get("scores", {}), "bm25": None}} for c in data.get("citations", [])
        ]
    if event.type == "error":
        status = 502 if data.get("stage") == "generate" else 400
        data.update(error_data(plan, str(data.get("message")), status))
    return _ended(plan, data) if event.type in ("end", "error") else data


def _ended(plan: AskPlan, data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "trace_id": plan.trace_id, "session_id": plan.session_id}


def error_data(plan: AskPlan, message: str, status: int) -> dict[str, Any]:
    """An `error` event's message and status; a server's failure (5xx) is told without its address or
    exception text, which stay in the server log."""
    if status < 500:
        return {"message": message, "status": status}
    log.warning("trace %s failed (%s): %s", plan.trace_id, status, message)
    generic = f"{UNAVAILABLE} (trace id {plan.trace_id})"
    if status == 502:
        generic = f"the answer could not be generated; quote trace id {plan.trace_id} to the administrator"
    return {"message": generic, "status": status}


@dataclass
class AskResult:
    """A question run to its end: the data of its `start` event, and of its `end` or its `error`."""

    start: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def record(self, event: dict[str, Any]) -> None:
        """Keep the data of a `start`, `end` or `error` event (the streamed pieces are in `end`)."""
        if event["event"] in ("start", "end", "error"):
            setattr(self, event["event"], event["data"])


def answer(lore: Lore, plan: AskPlan) -> AskResult:
    """The answer as one result, for callers that do not stream."""
    result = AskResult()
    run = answer_events(lore, plan)
    try:
        for event in run:
            result.record(event)
    finally:
        run.close()
    return result
