"""API keys of the caller's tenant: list, create with known roles, revoke (platform admins); and what the
caller's own key is and may do (`GET /api/me`, for the console to show only what the key can use)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import audit
from lore.app.fields import Name
from lore.app.results import ApiKeyInfo, Me, NewApiKey
from lore.catalog.service_records import ApiKey
from lore.config import Settings
from lore.grant import ADMIN_ROLE, PLATFORM_ADMIN_ROLE, Grant
from lore.policy import Action, Kind, Resource, can, check

router = APIRouter(tags=["keys"])


def _manage(scope: Grant, tenant: str | None = None, key_id: str = "keys") -> None:
    """Keys are managed by keys with the admin and platform-admin roles, for their own tenant only."""
    check(scope, Action.MANAGE_KEYS, Resource(Kind.KEY, key_id, tenants=frozenset({tenant or scope.tenant})))


def known_roles(settings: Settings) -> list[str]:
    """The roles a key may be given through the API: the configured ones and the two built in."""
    return list(dict.fromkeys([*settings.api.key_roles, ADMIN_ROLE, PLATFORM_ADMIN_ROLE]))


class KeyBody(BaseModel):
    """A new key of the caller's tenant."""

    model_config = ConfigDict(extra="forbid")

    roles: list[Name] = Field(default_factory=list, max_length=20)
    datasets: list[Name] | None = Field(default=None, max_length=50)
    name: str = Field(default="", max_length=200)
    expires_in_days: int | None = Field(default=None, ge=1, le=3650, description="None: never expires")


def allowed_actions(scope: Grant) -> list[str]:
    """What the key may do to a knowledge base of its own tenant, and to its tenant's keys, audit log and
    feedback, as `lore.policy` decides it (per KB the server still checks each request)."""
    own = frozenset({scope.tenant})
    kb = Resource(Kind.KB, "", tenants=own, owners=own, owner=scope.tenant)
    tenant_wide = {
        Action.MANAGE_KEYS: Resource(Kind.KEY, "keys", tenants=own),
        Action.AUDIT: Resource(Kind.AUDIT, "audit", tenants=own),
        Action.REVIEW: Resource(Kind.FEEDBACK, "feedback", tenants=own),
    }
    return [a.value for a in Action if can(scope, a, tenant_wide.get(a, kb))]


@router.get("/api/me", response_model=Me)
async def me(scope: Caller, state: State) -> dict[str, Any]:
    """The caller's key (tenant, name, roles, datasets) and the actions it may take."""

    def name() -> str:
        return next((k.name for k in state.lore.catalog.list_api_keys() if k.id == scope.key_id), "")

    return {
        "tenant": scope.tenant,
        "key_id": scope.key_id,
        "name": await run_in_threadpool(name),
        "roles": list(scope.roles),
        "datasets": None if scope.datasets is None else list(scope.datasets),
        "actions": allowed_actions(scope),
        "key_roles": known_roles(state.lore.settings),
    }


@router.get("/api/keys", response_model=list[ApiKeyInfo])
async def list_keys(scope: Caller, state: State) -> list[ApiKeyInfo]:
    """The tenant's keys, oldest first (secrets are never shown again)."""
    _manage(scope)
    keys = await run_in_threadpool(state.lore.catalog.list_api_keys)
    return [ApiKeyInfo.of(k) for k in keys if k.tenant_id == scope.tenant]


@router.post("/api/keys", status_code=201, response_model=NewApiKey)
async def create_key(body: KeyBody, scope: Caller, state: State) -> NewApiKey:
    """A new key of the caller's tenant; the secret is in this response only. A role the server does
    not know (`api.key_roles`, admin, platform-admin) is a 422."""
    _manage(scope)
    known = known_roles(state.lore.settings)
    if unknown := [r for r in body.roles if r.strip() and r.strip() not in known]:
        raise HTTPException(422, f"roles: unknown role '{unknown[0][:64]}' (known: {', '.join(known)})")

    def run() -> tuple[ApiKey, str]:
        catalog = state.lore.catalog
        with catalog.transaction():
            days = body.expires_in_days
            expires = None if days is None else datetime.now(UTC) + timedelta(days=days)
            key, secret = catalog.create_api_key(scope.tenant, body.roles, body.datasets, body.name, expires)
            audit(
                state.lore,
                scope,
                "key_create",
                target=key.id,
                roles=key.roles,
                datasets=key.datasets,
                expires_at=key.expires_at.isoformat() if key.expires_at else None,
            )
        return key, secret

    key, secret = await run_in_threadpool(run)
    return NewApiKey(**ApiKeyInfo.of(key).model_dump(), secret=secret)


@router.delete("/api/keys/{key_id}", status_code=204)
async def revoke_key(key_id: str, scope: Caller, state: State) -> None:
    """Revoke one of the tenant's keys by id (404 for another tenant's, as for an unknown one)."""

    def run() -> None:
        _manage(scope)
        owner = next((k.tenant_id for k in state.lore.catalog.list_api_keys() if k.id == key_id), None)
        _manage(scope, owner or "", key_id)
        with state.lore.catalog.transaction():
            state.lore.catalog.revoke_api_key(key_id)
            audit(state.lore, scope, "key_revoke", target=key_id)

    await run_in_threadpool(run)
