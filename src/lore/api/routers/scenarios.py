"""Scenarios the caller may ask: the list (the chat's picker), one scenario's configuration, its FAQ rows
(add, edit, disable; duplicates and conflicts flagged) and a routing test (route, profile, plan)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, ServiceState, State
from lore.app.access import audit, kb_resource, require_kb
from lore.app.fields import Name, PositiveInt
from lore.app.scenario_results import FaqList, FaqRowInfo, RouteTest, ScenarioDetail, ScenarioSummary
from lore.app.scenarios import faq_reader, require_scenario, visible_scenarios
from lore.errors import NotFoundError, check_length
from lore.grant import Grant
from lore.policy import Action, can
from lore.scenario import faq_edit
from lore.scenario.config import Scenario
from lore.scenario.decide import decide
from lore.scenario.faq import FaqEntry
from lore.scenario.profiles import scenario_profiles
from lore.scenario.routing import Router

router = APIRouter(prefix="/api/scenarios", tags=["scenarios"])


@router.get("", response_model=list[ScenarioSummary])
async def list_scenarios(scope: Caller, state: State) -> list[dict[str, Any]]:
    """The scenarios serving the key's tenant, with their knowledge base and business sources."""
    found = await run_in_threadpool(visible_scenarios, state.lore, scope)
    return [
        {
            "id": sc.id,
            "name": sc.name,
            "domain": sc.domain,
            "description": sc.description,
            "kb": sc.kb_name,
            "assistant_name": sc.assistant_name,
            "sources": [{"id": s.id, "label": s.label} for s in sc.sources],
        }
        for sc in found
    ]


def _writable(state: ServiceState, sc: Scenario, scope: Grant) -> bool:
    """May the caller change what the scenario's next build holds (its KB's admin; a platform admin when
    the KB holds other tenants' rows)?"""
    lore = state.lore
    return can(scope, Action.UPLOAD, kb_resource(lore, lore.catalog.get_kb(sc.kb_name)))


@router.get("/{scenario_id}", response_model=ScenarioDetail)
async def get_scenario(scenario_id: str, scope: Caller, state: State) -> dict[str, Any]:
    """A scenario's configuration: sources, defaults, access and routing lists, risk words, prompt profile
    overrides and variables (404 for one the key may not ask)."""

    def run() -> dict[str, Any]:
        sc = require_scenario(state.lore, scope, scenario_id)
        config = sc.model_dump(mode="json", exclude={"folder"})
        return {
            **config,
            "kb": sc.kb_name,
            "tenants": sc.tenants,
            "datasets": sc.datasets,
            "faq_file": sc.faq_path.is_file(),
            "writable": _writable(state, sc, scope),
        }

    return await run_in_threadpool(run)


def _row_json(e: FaqEntry) -> dict[str, Any]:
    c, r = e.cells, e.row
    return {
        "index": e.index,
        "line": e.line,
        "question": c.get("question", ""),
        "answer": c.get("answer", ""),
        "source": r.source if r else c.get("source", ""),
        "tenant": r.tenant if r else c.get("tenant", ""),
        "dataset": r.dataset if r else c.get("dataset", ""),
        "visibility": r.visibility if r else c.get("visibility", ""),
        "roles": r.roles if r else [x for x in c.get("roles", "").replace(";", "|").split("|") if x],
        "disabled": e.status == "disabled",
        "status": e.status,
        "reason": e.reason,
        "clash": e.clash,
    }


@router.get("/{scenario_id}/faq", response_model=FaqList)
async def list_faq(scenario_id: str, scope: Caller, state: State) -> dict[str, Any]:
    """The rows of the scenario's faq.csv that the key reads (each as the chunk it becomes), with their
    status: ok, duplicate, conflict, disabled, or invalid (malformed rows: to those who may edit)."""

    def run() -> dict[str, Any]:
        sc = require_scenario(state.lore, scope, scenario_id)
        writable = _writable(state, sc, scope)
        reads = faq_reader(sc, scope)
        entries = [e for e in faq_edit.read_table(sc.faq_path, sc)[2] if e.status != "blank"]
        shown = [e for e in entries if reads(e) or (writable and e.row is None)]
        return {
            "scenario": sc.id,
            "revision": faq_edit.revision(sc.faq_path),
            "writable": writable,
            "rows": [_row_json(e) for e in shown],
            "hidden": len(entries) - len(shown),
        }

    return await run_in_threadpool(run)


class FaqRowIn(BaseModel):
    """A FAQ row to add, or the fields of one to change (left out: kept as they are)."""

    model_config = ConfigDict(extra="forbid")

    revision: str = Field(max_length=64, description="The `revision` the rows were read at (409 if changed).")
    question: str | None = Field(default=None, max_length=2000)
    answer: str | None = Field(default=None, max_length=20_000)
    source: str | None = Field(default=None, max_length=64)
    tenant: str | None = Field(default=None, max_length=128)
    dataset: str | None = Field(default=None, max_length=128)
    visibility: Literal["public", "internal", "restricted", ""] | None = None
    roles: list[Name] | None = Field(default=None, max_length=50)
    disabled: bool | None = None

    def values(self) -> dict[str, str]:
        out = {
            k: v
            for k, v in self.model_dump(exclude={"revision", "roles", "disabled"}).items()
            if v is not None
        }
        if self.roles is not None:
            out["roles"] = "|".join(r.strip() for r in self.roles if r.strip())
        if self.disabled is not None:
            out["disabled"] = "yes" if self.disabled else ""
        return out


def _save(state: ServiceState, scope: Grant, scenario_id: str, index: int | None, body: FaqRowIn) -> FaqEntry:
    """Check (404 hidden scenario or row, 403 not an editor or a row outside the key's access, 422 a row
    that would not index) and write one row."""
    lore = state.lore
    sc = require_scenario(lore, scope, scenario_id)
    require_kb(lore, scope, sc.kb_name, Action.UPLOAD)
    reads = faq_reader(sc, scope)
    if index is not None:
        old = faq_edit.entry_at(sc.faq_path, sc, index)
        if old.row is not None and not reads(old) or old.status == "blank":
            raise NotFoundError(f"FAQ row {index} not found")
    elif not (body.question and body.answer):
        raise HTTPException(422, "a new FAQ row needs a question and an answer")
    values = body.values()
    new = faq_edit.preview(sc.faq_path, sc, index, values)
    if new.row is None and new.status != "disabled":
        raise HTTPException(422, f"FAQ row: {new.reason}")
    if new.row is not None and not reads(new):
        raise HTTPException(
            403, "this row's tenant, dataset, visibility or roles are outside your key's access"
        )
    saved = faq_edit.save(sc.faq_path, sc, index, values, body.revision)
    audit(
        lore,
        scope,
        "faq_edit" if index is not None else "faq_add",
        kb=sc.kb_name,
        target=f"{sc.id}:{saved.index}",
    )
    return saved


@router.post("/{scenario_id}/faq", status_code=201, response_model=FaqRowInfo)
async def add_faq(scenario_id: str, body: FaqRowIn, scope: Caller, state: State) -> dict[str, Any]:
    """Append a row to faq.csv (admin who may add to the scenario's KB); indexed at the next build."""
    saved = await run_in_threadpool(_save, state, scope, scenario_id, None, body)
    return _row_json(saved)


@router.put("/{scenario_id}/faq/{index}", response_model=FaqRowInfo)
async def edit_faq(
    scenario_id: str, index: int, body: FaqRowIn, scope: Caller, state: State
) -> dict[str, Any]:
    """Change or disable (`disabled: true`) the row at `index` (a position the list gave)."""
    if not 0 <= index < 1_000_000:
        raise HTTPException(422, "index: out of range")
    return _row_json(await run_in_threadpool(_save, state, scope, scenario_id, index, body))


class RouteBody(BaseModel):
    """A question to route."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    top_k: PositiveInt | None = Field(default=None, le=200, description="Default: retrieve.top_k.")


@router.post("/{scenario_id}/route", response_model=RouteTest, response_model_exclude_unset=True)
async def route_test(scenario_id: str, body: RouteBody, scope: Caller, state: State) -> dict[str, Any]:
    """Where the scenario sends a question and how it would answer: route and the rule that matched, risk,
    intent, prompt profile and retrieval plan (nothing is searched or generated)."""
    lore = state.lore
    check_length("question", body.question, lore.settings.answer.max_question_chars)

    def run() -> dict[str, Any]:
        sc = require_scenario(lore, scope, scenario_id)
        search = lore.search_options(body.top_k)
        d = decide(
            Router(sc),
            scenario_profiles(sc),
            sc.prompt_variables(),
            body.question,
            top_k=search.top_k,
            recall_k=search.recall_k,
            rerank=search.rerank,
            max_passages=lore.settings.answer.max_passages,
            context_budget=lore.settings.answer.context_budget,
            faq_threshold=lore.settings.scenario.faq_direct_threshold,
        )
        return {
            "scenario": sc.id,
            "question": body.question,
            "route": d.route.to_json(),
            "direct": d.route.direct,
            "intent": d.intent,
            "profile": d.profile.to_json(),
            "plan": d.plan.to_json(),
            "source": d.source(),
        }

    return await run_in_threadpool(run)
