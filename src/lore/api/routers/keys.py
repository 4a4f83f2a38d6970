"""API keys of the caller's tenant: list, create with a scope, revoke (platform admins)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.access import audit
from lore.api.deps import Caller, State
from lore.api.limits import Name
from lore.catalog.service import ApiKey
from lore.grant import Grant
from lore.policy import Action, Kind, Resource, check

router = APIRouter(prefix="/api/keys", tags=["keys"])


def _manage(scope: Grant, tenant: str | None = None, key_id: str = "keys") -> None:
    """Keys are managed by keys with the admin and platform-admin roles, for their own tenant only."""
    check(scope, Action.MANAGE_KEYS, Resource(Kind.KEY, key_id, tenants=frozenset({tenant or scope.tenant})))


class KeyBody(BaseModel):
    """A new key of the caller's tenant."""

    model_config = ConfigDict(extra="forbid")

    roles: list[Name] = Field(default_factory=list, max_length=20)
    datasets: list[Name] | None = Field(default=None, max_length=50)
    name: str = Field(default="", max_length=200)


def key_json(key: ApiKey) -> dict[str, Any]:
    """A key without its secret."""
    return {
        "id": key.id,
        "prefix": key.prefix,
        "name": key.name,
        "tenant": key.tenant_id,
        "roles": key.roles,
        "datasets": key.datasets,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }


@router.get("")
async def list_keys(scope: Caller, state: State) -> list[dict[str, Any]]:
    """The tenant's keys, oldest first (secrets are never shown again)."""
    _manage(scope)
    keys = await run_in_threadpool(state.lore.catalog.list_api_keys)
    return [key_json(k) for k in keys if k.tenant_id == scope.tenant]


@router.post("", status_code=201)
async def create_key(body: KeyBody, scope: Caller, state: State) -> dict[str, Any]:
    """A new key of the caller's tenant; the secret is in this response only."""
    _manage(scope)

    def run() -> tuple[ApiKey, str]:
        catalog = state.lore.catalog
        with catalog.transaction():
            key, secret = catalog.create_api_key(scope.tenant, body.roles, body.datasets, body.name)
            audit(state.lore, scope, "key_create", target=key.id, roles=key.roles, datasets=key.datasets)
        return key, secret

    key, secret = await run_in_threadpool(run)
    return {**key_json(key), "secret": secret}


@router.delete("/{key_id}", status_code=204)
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
