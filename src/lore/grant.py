"""`Grant`: what one caller may see and do (tenant, datasets, visibility, roles, scenario, version).

The one scope type of the API, scenarios, the CLI and deep mode. A grant only ever narrows: a request
naming a tenant, dataset, visibility level, role or version outside it raises `ScopeError`, and a
scenario intersects a key's grant (`narrow`), never widens it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from lore.errors import LoreError
from lore.schema import VISIBILITIES, SearchFilter

ADMIN_ROLE = "admin"
PLATFORM_ADMIN_ROLE = "platform-admin"  # may add its own files to a KB that also holds other tenants'
OPEN_VISIBILITY: tuple[str, ...] = ("public", "internal")  # what every key reads; restricted needs admin


class ScopeError(LoreError):
    """A request asks for data outside the caller's grant (or names something unknown)."""


@dataclass(frozen=True)
class Grant:
    """The caller's grant. `datasets=None` means every dataset of the tenant; `roles=()` sees only chunks
    open to every role; `version=None` is the active version; `key_id=None` is the local operator (CLI)."""

    tenant: str
    datasets: tuple[str, ...] | None = None
    visibility: tuple[str, ...] = OPEN_VISIBILITY
    roles: tuple[str, ...] = ()
    scenario: str | None = None
    version: int | None = None
    time_travel: bool = False  # may the caller name another version than `version`?
    key_id: str | None = None

    def __post_init__(self) -> None:
        if not self.tenant:
            raise ScopeError("scope: tenant is required")
        for name in ("datasets", "visibility", "roles"):  # lists from callers become tuples
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if bad := [v for v in self.visibility if v not in VISIBILITIES]:
            raise ScopeError(f"scope: visibility {bad} (allowed: {', '.join(VISIBILITIES)})")

    @classmethod
    def of_key(cls, key_id: str, tenant: str, roles: Sequence[str], datasets: Sequence[str] | None) -> Grant:
        """The grant of an API key: restricted chunks and other versions only with the admin role."""
        admin = ADMIN_ROLE in roles
        return cls(
            tenant,
            None if datasets is None else tuple(datasets),
            (*OPEN_VISIBILITY, "restricted") if admin else OPEN_VISIBILITY,
            tuple(roles),
            time_travel=admin,
            key_id=key_id,
        )

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.roles

    @property
    def is_platform_admin(self) -> bool:
        return PLATFORM_ADMIN_ROLE in self.roles

    @property
    def owner_key(self) -> str | None:
        """The key whose own sessions and traces this caller sees; None for the tenant's admins (all)."""
        return None if self.is_admin else self.key_id

    @property
    def actor(self) -> str:
        """Who acts, for the activation and audit logs: `key:<id>@<tenant>`, or `cli@<tenant>`."""
        return f"key:{self.key_id}@{self.tenant}" if self.key_id else f"cli@{self.tenant}"

    def narrow(self, other: Grant) -> Grant:
        """The intersection of two grants (a scenario's with a key's): never more than either."""
        if other.tenant != self.tenant:
            raise ScopeError(f"tenant {other.tenant!r}: outside the caller's scope (holds: {self.tenant})")
        datasets = (
            other.datasets
            if self.datasets is None
            else tuple(d for d in self.datasets if other.datasets is None or d in other.datasets)
        )
        return replace(
            self,
            datasets=datasets,
            visibility=tuple(v for v in self.visibility if v in other.visibility),
            roles=tuple(r for r in self.roles if r in other.roles),
            scenario=other.scenario or self.scenario,
            version=other.version if other.version is not None else self.version,
            time_travel=self.time_travel and other.time_travel,
        )

    def covers(self, other: Grant) -> bool:
        """True if this grant reads everything `other` reads (same tenant, wider or equal in every field)."""
        return (
            self.tenant == other.tenant
            and (
                self.datasets is None
                or (other.datasets is not None and set(other.datasets) <= set(self.datasets))
            )
            and set(other.visibility) <= set(self.visibility)
            and set(other.roles) <= set(self.roles)
        )

    def at_version(self, version: int | None) -> Grant:
        """This grant reading `version` (None: the grant's own); another version needs time travel."""
        if version is not None and version != self.version and not self.time_travel:
            raise ScopeError(
                f"version {version}: the caller may not read another version than "
                f"{'the active one' if self.version is None else self.version}"
            )
        return self if version is None else replace(self, version=version)

    def to_filter(self) -> SearchFilter:
        """The store filter for this grant (every field set: nothing is left unrestricted by accident)."""
        return SearchFilter(
            tenant_ids=[self.tenant],
            dataset_ids=None if self.datasets is None else list(self.datasets),
            visibility=list(self.visibility),
            roles=list(self.roles),
        )

    def bound(self, request: SearchFilter) -> SearchFilter:
        """A request filter limited to this grant; a request field wider than the grant is an error.

        Fields the grant does not govern (source types, sources, documents) narrow freely.
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

    def chunk_stamp(self, dataset: str | None = None) -> dict[str, str]:
        """Chunk fields this caller's writes carry: its tenant, and its dataset (a grant with several
        datasets must name one: `ScopeError` otherwise)."""
        stamp = {"tenant_id": self.tenant}
        allowed = self.datasets
        if dataset is not None:
            if allowed is not None and dataset not in allowed:
                raise ScopeError(f"dataset {dataset!r} is not one of this key's datasets: {list(allowed)}")
            stamp["dataset_id"] = dataset
        elif allowed and len(allowed) == 1:
            stamp["dataset_id"] = allowed[0]
        elif allowed:
            raise ScopeError(
                f"dataset: this key has several datasets {list(allowed)}; name the one to write to"
            )
        return stamp

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "datasets": None if self.datasets is None else list(self.datasets),
            "visibility": list(self.visibility),
            "roles": list(self.roles),
            "scenario": self.scenario,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Grant:
        """Inverse of `to_json` (a trace keeps the asker's grant)."""
        return cls(
            data["tenant"],
            None if data.get("datasets") is None else tuple(data["datasets"]),
            tuple(data.get("visibility") or ()),
            tuple(data.get("roles") or ()),
            data.get("scenario"),
            data.get("version"),
        )


def _subset(name: str, asked: Sequence[str], held: Sequence[str] | None) -> list[str]:
    if isinstance(asked, str):
        raise ScopeError(f"{name}: a list is required, not the string {asked!r}")
    if held is not None and (outside := [a for a in asked if a not in held]):
        raise ScopeError(
            f"{name} {', '.join(map(repr, outside))}: outside the caller's scope "
            f"(holds: {', '.join(held) or 'none'})"
        )
    return list(dict.fromkeys(asked))
