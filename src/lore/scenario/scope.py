"""A scenario's grant: its default tenant and roles, checked against the scenario's access lists.

The grant type itself is `lore.grant.Grant` (`Scope` here is the same class).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lore.grant import Grant, ScopeError
from lore.scenario.config import Scenario

Scope = Grant  # one grant type for the API, scenarios, the CLI and deep mode (lore.grant)
__all__ = ["Scope", "ScopeError", "check_scope", "scenario_scope"]


def scenario_scope(
    scenario: Scenario,
    *,
    tenant: str | None = None,
    roles: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    version: int | None = None,
    time_travel: bool = False,
) -> Scope:
    """The scope of a caller of `scenario`: its default tenant and roles unless named, each checked
    against the scenario's access lists (unknown tenant, dataset or role -> `ScopeError`)."""
    t = tenant or scenario.defaults.tenant
    if t not in scenario.tenants:
        raise ScopeError(
            f"tenant {t!r}: not a tenant of scenario {scenario.id!r} (tenants: {', '.join(scenario.tenants)})"
        )
    r = list(scenario.access.default_roles) if roles is None else list(roles)
    if scenario.access.roles and (bad := [x for x in r if x not in scenario.access.roles]):
        raise ScopeError(
            f"roles {bad}: not roles of scenario {scenario.id!r} (roles: {', '.join(scenario.access.roles)})"
        )
    if datasets is not None and (bad := [d for d in datasets if d not in scenario.datasets]):
        raise ScopeError(
            f"datasets {bad}: not datasets of scenario {scenario.id!r} "
            f"(datasets: {', '.join(scenario.datasets)})"
        )
    return Scope(
        t,
        tuple(datasets) if datasets is not None else tuple(scenario.datasets),
        tuple(scenario.access.visibility),
        tuple(r),
        scenario.id,
        version,
        time_travel,
    )


def check_scope(scope: Scope, scenario: Scenario) -> Scope:
    """A scope handed in by a caller must fit the scenario it asks; returns it bounded by the
    scenario's lists (no datasets given = the scenario's datasets, never the whole tenant)."""
    if scope.scenario is not None and scope.scenario != scenario.id:
        raise ScopeError(f"scope is for scenario {scope.scenario!r}, not {scenario.id!r}")
    if bad := [v for v in scope.visibility if v not in scenario.access.visibility]:
        raise ScopeError(
            f"visibility {bad}: not allowed in scenario {scenario.id!r} "
            f"(visibility: {', '.join(scenario.access.visibility)})"
        )
    checked = scenario_scope(scenario, tenant=scope.tenant, roles=scope.roles, datasets=scope.datasets)
    return replace(scope, datasets=checked.datasets, scenario=scenario.id)
