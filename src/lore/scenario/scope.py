"""`Scope`: what one caller may see (tenant, datasets, visibility, roles, scenario, version).

A scope only ever narrows: request parameters that name a tenant, dataset, visibility level, role or
version outside it raise `ScopeError`; nothing is silently widened or silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lore.errors import LoreError
from lore.scenario.config import Scenario
from lore.schema import VISIBILITIES, SearchFilter


class ScopeError(LoreError):
    """A request asks for data outside the caller's scope (or names something unknown)."""


@dataclass(frozen=True)
class Scope:
    """The caller's grant. `datasets=None` means every dataset of the tenant; `roles=()` sees only
    chunks open to every role; `version=None` is the active version."""

    tenant: str
    datasets: tuple[str, ...] | None = None
    visibility: tuple[str, ...] = ("public", "internal")
    roles: tuple[str, ...] = ()
    scenario: str | None = None
    version: int | None = None
    time_travel: bool = False  # may the caller name another version than `version`?

    def __post_init__(self) -> None:
        if not self.tenant:
            raise ScopeError("scope: tenant is required")
        if bad := [v for v in self.visibility if v not in VISIBILITIES]:
            raise ScopeError(f"scope: visibility {bad} (allowed: {', '.join(VISIBILITIES)})")
        for name in ("datasets", "visibility", "roles"):  # lists from callers become tuples
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def at_version(self, version: int | None) -> Scope:
        """This scope reading `version` (None: the scope's own); another version needs time travel.
        (Narrowing datasets, visibility or roles goes through `bound` on the request filter.)"""
        if version is not None and version != self.version and not self.time_travel:
            raise ScopeError(
                f"version {version}: the caller may not read another version than "
                f"{'the active one' if self.version is None else self.version}"
            )
        return self if version is None else replace(self, version=version)

    def to_filter(self) -> SearchFilter:
        """The store filter for this scope (every field set: nothing is left unrestricted by accident)."""
        return SearchFilter(
            tenant_ids=[self.tenant],
            dataset_ids=None if self.datasets is None else list(self.datasets),
            visibility=list(self.visibility),
            roles=list(self.roles),
        )

    def bound(self, request: SearchFilter) -> SearchFilter:
        """A request filter limited to this scope; a request field wider than the scope is an error.

        Fields the scope does not govern (source types, sources, documents) narrow freely.
        """
        if request.tenant_ids is not None:
            _subset("tenant", request.tenant_ids, (self.tenant,))
        base = self.to_filter()
        return replace(
            request,
            tenant_ids=base.tenant_ids,
            dataset_ids=_subset("datasets", request.dataset_ids, self.datasets)
            if request.dataset_ids is not None
            else base.dataset_ids,
            visibility=_subset("visibility", request.visibility, self.visibility)
            if request.visibility is not None
            else base.visibility,
            roles=_subset("roles", request.roles, self.roles) if request.roles is not None else base.roles,
        )

    def to_json(self) -> dict:
        return {
            "tenant": self.tenant,
            "datasets": None if self.datasets is None else list(self.datasets),
            "visibility": list(self.visibility),
            "roles": list(self.roles),
            "scenario": self.scenario,
            "version": self.version,
        }


def _subset(name: str, asked: Sequence[str], held: Sequence[str] | None) -> list[str]:
    if isinstance(asked, str):
        raise ScopeError(f"{name}: a list is required, not the string {asked!r}")
    if held is not None and (outside := [a for a in asked if a not in held]):
        raise ScopeError(
            f"{name} {', '.join(map(repr, outside))}: outside the caller's scope "
            f"(holds: {', '.join(held) or 'none'})"
        )
    return list(dict.fromkeys(asked))


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
        raise ScopeError(f"visibility {bad}: not allowed in scenario {scenario.id!r} "
                         f"(visibility: {', '.join(scenario.access.visibility)})")
    checked = scenario_scope(scenario, tenant=scope.tenant, roles=scope.roles, datasets=scope.datasets)
    return replace(scope, datasets=checked.datasets, scenario=scenario.id)
