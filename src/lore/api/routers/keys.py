"""API keys of the caller's tenant: list, create with a scope, revoke (platform admins)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import PLATFORM_ADMIN_ROLE, Scope, State, admin_scope_of
from lore.catalog.service import ApiKey

router = APIRouter(prefix="/api/keys", tags=["keys"])


async def platform_admin_of(scope: Annotated[Scope, Depends(admin_scope_of)]) -> Scope:
    """Dependency: keys are managed only by keys with the admin and platform-admin roles."""
    if not scope.is_platform_admin:
        raise HTTPException(403, f"managing keys needs an API key with the '{PLATFORM_ADMIN_ROLE}' role")
    return scope


PlatformAdmin = Annotated[Scope, Depends(platform_admin_of)]


class KeyBody(BaseModel):
    """A new key of the caller's tenant."""

    model_config = ConfigDict(extra="forbid")

    roles: list[str] = Field(default_factory=list, max_length=20)
    datasets: list[str] | None = Field(default=None, max_length=50)
    name: str = Field(default="", max_length=200)


def key_json(key: ApiKey) -> dict[str, Any]:
    """A key without its secret."""
    return {"id": key.id, "prefix": key.prefix, "name": key.name, "tenant": key.tenant_id, "roles": key.roles,
            "datasets": key.datasets, "created_at": key.created_at.isoformat(),
            "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None}


@router.get("")
async def list_keys(scope: PlatformAdmin, state: State) -> list[dict[str, Any]]:
    """The tenant's keys, oldest first (secrets are never shown again)."""
    keys = await run_in_threadpool(state.lore.catalog.list_api_keys)
    return [key_json(k) for k in keys if k.tenant_id == scope.tenant_id]


@router.post("", status_code=201)
async def create_key(body: KeyBody, scope: PlatformAdmin, state: State) -> dict[str, Any]:
    """A new key of the caller's tenant; the secret is in this response only."""
    key, secret = await run_in_threadpool(state.lore.catalog.create_api_key, scope.tenant_id, body.roles,
                                          body.datasets, body.name)
    return {**key_json(key), "secret": secret}


@router.delete("/{key_id}", status_code=204)
async def revoke_key(key_id: str, scope: PlatformAdmin, state: State) -> None:
    """Revoke one of the tenant's keys by id (404 for another tenant's)."""
    def run() -> None:
        mine = {k.id for k in state.lore.catalog.list_api_keys() if k.tenant_id == scope.tenant_id}
        if key_id not in mine:
            raise HTTPException(404, f"api key {key_id!r} not found")
        state.lore.catalog.revoke_api_key(key_id)
    await run_in_threadpool(run)
