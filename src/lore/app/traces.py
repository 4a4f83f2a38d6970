"""What one question's trace keeps, taken from the request's event stream, and saved with the session's
turns."""

from __future__ import annotations

import time
from typing import Any

from lore.app.plan import AskPlan
from lore.engine import Lore
from lore.events import StageEvent
from lore.retrieve.cache import CACHE


class TraceBuilder:
    """A subscriber of the request's event stream: keeps the stages, timings, cache lookups and outcome."""

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

    def __call__(self, event: StageEvent) -> None:
        kind, data = event.kind, event.data
        if kind == CACHE:
            self.cache.append(dict(data))
            return
        if kind not in ("start", "status", "token", "end", "error"):
            return
        now = round((event.at - self.started) * 1000, 1)
        if self.first_event_ms is None:
            self.first_event_ms = now
        if kind == "status":
            if self.stages:
                self.stages[-1]["ms"] = round(now - self.stages[-1]["at_ms"], 1)
            # Deep mode's rounds: which round and sub-question, the grade and the verdict stay in the trace.
            detail: dict[str, Any] = {
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
            if kind == "end":
                self.end = data
            else:
                self.error = str(data.get("message"))

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


def save_trace(lore: Lore, plan: AskPlan, trace: TraceBuilder) -> None:
    """Save the trace, and for a session the two turns and its rolling summary."""
    rec = trace.record()
    session_id = plan.session_id
    grant = plan.scenario.scope if plan.scenario else plan.caller
    rec["data"]["grant"] = grant.at_version(plan.version).to_json() if grant else None
    key_id = plan.caller.key_id if plan.caller else None
    by: dict[str, Any] = {"tenant_id": plan.tenant, "key_id": key_id, "transport": plan.transport}
    lore.catalog.save_trace(id=plan.trace_id, **by, **plan.asked(), **rec)
    if session_id is None or trace.end is None:
        return
    with lore.catalog.transaction():
        lore.catalog.add_message(session_id, "user", plan.question, query=plan.query)
        lore.catalog.add_message(session_id, "assistant", trace.end.get("answer", ""), trace_id=plan.trace_id)
    queries = [m.query or m.content for m in lore.catalog.messages(session_id, limit=10) if m.role == "user"]
    lore.catalog.set_session_summary(session_id, rolling_summary(queries))
