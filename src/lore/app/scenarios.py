"""Scenarios in the service: a key's grant narrowed by a scenario's access lists, and the scenarios it sees.

A scenario only narrows: its grant is the intersection of the key's and the scenario's (tenant, datasets,
visibility, roles, version rights). A scenario that does not serve the key's tenant, or whose knowledge
base the key may not read, is the same 404 as an unknown one (no folder, no other scenario ids).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lore.app.access import kb_resource
from lore.engine import Lore
from lore.errors import ForbiddenError, LoreError, NotFoundError
from lore.grant import Grant, ScopeError
from lore.policy import Action, Kind, Resource, can, check
from lore.scenario.build import FAQ_FILE
from lore.scenario.config import Scenario
from lore.scenario.faq import FaqEntry, faq_chunks
from lore.scenario.request import scenarios
from lore.scenario.scope import scenario_scope

MODEL_PREFIX = "scenario:"  # OpenAI-compatible model ids of scenarios: "scenario:<id>"


@dataclass(frozen=True)
class ScenarioCall:
    """One request's scenario and the grant its key holds there."""

    scenario: Scenario
    scope: Grant


def scenario_resource(lore: Lore, scenario: Scenario) -> Resource:
    """A scenario is seen by the tenants it serves that may also read its knowledge base."""
    try:
        kb_tenants = kb_resource(lore, lore.catalog.get_kb(scenario.kb_name)).tenants
    except NotFoundError:
        kb_tenants = frozenset()
    return Resource(Kind.SCENARIO, scenario.id, tenants=frozenset(scenario.tenants) & kb_tenants)


def visible_scenarios(lore: Lore, caller: Grant) -> list[Scenario]:
    """The scenarios the caller may list (a malformed scenario.toml is an error naming the file)."""
    found = scenarios(lore)
    return [
        sc
        for sc in (found.get(i) for i in found.ids())
        if can(caller, Action.LIST, scenario_resource(lore, sc))
    ]


def key_scope(scenario: Scenario, caller: Grant, version: int | None = None) -> Grant:
    """The key's grant narrowed by the scenario: datasets, visibility and roles are intersected.

    A key's roles the scenario does not know grant nothing there (they are dropped, not refused);
    datasets none of which the scenario holds is a 403.
    """
    if caller.datasets is not None and not [d for d in caller.datasets if d in scenario.datasets]:
        raise ForbiddenError(
            f"this key's datasets ({', '.join(caller.datasets) or 'none'}) include none of "
            f"scenario '{scenario.id}' ({', '.join(scenario.datasets)})"
        )
    allowed = scenario.access.roles
    roles = [r for r in caller.roles if r in allowed] if allowed else list(caller.roles)
    try:
        datasets = None if caller.datasets is None else [d for d in caller.datasets if d in scenario.datasets]
        own = scenario_scope(scenario, tenant=caller.tenant, roles=roles, datasets=datasets, time_travel=True)
        return caller.narrow(own).at_version(version)
    except ScopeError as exc:
        raise ForbiddenError(str(exc)) from exc


def require_scenario(lore: Lore, caller: Grant, scenario_id: str) -> Scenario:
    """The scenario if the caller may read it; unknown or not the caller's is the same 404."""
    try:
        scenario = scenarios(lore).get(scenario_id)
    except NotFoundError:
        raise NotFoundError(f"scenario '{scenario_id}' not found") from None
    check(caller, Action.READ, scenario_resource(lore, scenario))
    return scenario


def resolve(
    lore: Lore, caller: Grant, scenario_id: str, source: str | None, version: int | None
) -> ScenarioCall:
    """Load the scenario (404 if unknown or not the caller's), check a named source (400) and narrow the
    key's grant by it (403)."""
    scenario = require_scenario(lore, caller, scenario_id)
    if source is not None and source != "general":
        try:
            scenario.source(source)
        except LoreError as exc:
            raise LoreError(f"source: {exc}") from exc
    if version is not None:
        check(caller, Action.READ_VERSION, scenario_resource(lore, scenario))
    return ScenarioCall(scenario, key_scope(scenario, caller, version))


def faq_reader(scenario: Scenario, caller: Grant) -> Callable[[FaqEntry], bool]:
    """Which FAQ rows the caller reads: each row as the chunk it becomes, against the key's grant narrowed
    by the scenario (as asking would); a row that does not resolve (malformed) is read by none."""
    try:
        flt = replace(key_scope(scenario, caller).to_filter(), version_seq=None)
    except ForbiddenError:
        return lambda _e: False

    def reads(entry: FaqEntry) -> bool:
        if entry.row is None:
            return False
        chunk = faq_chunks(
            [entry.row],
            scenario_id=scenario.id,
            kb_id="",
            file_name=FAQ_FILE,
            file_sha256="",
            embedding_model="",
            chunk_schema="",
            seq=None,
        )[0]
        return flt.matches(chunk)

    return reads
