"""Scenarios in the service: the caller's scenario scope from its API key, and the scenarios a key may use."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import HTTPException

from lore.api.deps import Scope
from lore.engine import Lore
from lore.errors import LoreError, NotFoundError
from lore.scenario.config import Scenario
from lore.scenario.request import scenarios
from lore.scenario.scope import Scope as ScenarioScope
from lore.scenario.scope import ScopeError, scenario_scope

MODEL_PREFIX = "scenario:"  # OpenAI-compatible model ids of scenarios: "scenario:<id>"


@dataclass(frozen=True)
class ScenarioCall:
    """One request's scenario and the scope its key grants there."""

    scenario: Scenario
    scope: ScenarioScope


def serves(scenario: Scenario, caller: Scope) -> bool:
    """Does the scenario answer callers of this key's tenant?"""
    return caller.tenant_id in scenario.tenants


def visible_scenarios(lore: Lore, caller: Scope) -> list[Scenario]:
    """The scenarios serving the caller's tenant (a malformed scenario.toml is an error naming the file)."""
    found = scenarios(lore)
    return [sc for sc in (found.get(i) for i in found.ids()) if serves(sc, caller)]


def key_scope(scenario: Scenario, caller: Scope, version: int | None = None) -> ScenarioScope:
    """The scenario scope of an API key: its tenant, its datasets and roles within the scenario's access lists.

    A key's roles the scenario does not know grant nothing there (they are dropped, not refused);
    a tenant the scenario does not serve, or datasets none of which the scenario holds, is a 403.
    """
    key = caller.key
    if not serves(scenario, caller):
        raise HTTPException(403, f"scenario '{scenario.id}' does not serve tenant '{key.tenant_id}' "
                                 f"(tenants: {', '.join(scenario.tenants)}); use a key of one of its tenants")
    datasets = None
    if key.datasets is not None:
        datasets = [d for d in key.datasets if d in scenario.datasets]
        if not datasets:
            raise HTTPException(403, f"this key's datasets ({', '.join(key.datasets) or 'none'}) include none of "
                                     f"scenario '{scenario.id}' ({', '.join(scenario.datasets)})")
    allowed = scenario.access.roles
    roles = [r for r in key.roles if r in allowed] if allowed else list(key.roles)
    try:
        return scenario_scope(scenario, tenant=key.tenant_id, roles=roles, datasets=datasets, version=None,
                              time_travel=caller.is_admin).at_version(version)
    except ScopeError as exc:
        raise HTTPException(403, str(exc)) from exc


def resolve(lore: Lore, caller: Scope, scenario_id: str, source: str | None,
            version: int | None) -> ScenarioCall:
    """Load the scenario (404 if unknown), check a named source (400) and bound the key's scope (403)."""
    try:
        scenario = scenarios(lore).get(scenario_id)
        if source is not None and source != "general":
            scenario.source(source)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from exc
    except LoreError as exc:
        raise HTTPException(400, f"source: {exc}" if source else str(exc)) from exc
    return ScenarioCall(scenario, key_scope(scenario, caller, version))
