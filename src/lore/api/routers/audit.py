"""The audit log of the caller's tenant: activations, rollbacks, builds, deletes, shares (admin)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.results import AuditEntry
from lore.policy import Action, Kind, Resource, check

router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("", response_model=list[AuditEntry])
async def audit_log(
    scope: Caller, state: State, kb: str | None = None, limit: int = Query(default=100, ge=1, le=1000)
) -> list[dict[str, Any]]:
    """The newest audit entries of the key's tenant (admin), optionally of one knowledge base; each names
    the key that acted (`key_name`; "" for an unnamed key, None for the local operator)."""

    def run() -> list[dict[str, Any]]:
        check(scope, Action.AUDIT, Resource(Kind.AUDIT, "audit", tenants=frozenset({scope.tenant})))
        catalog = state.lore.catalog
        names = {k.id: k.name for k in catalog.list_api_keys() if k.tenant_id == scope.tenant}
        return [
            {**e.to_json(), "key_name": None if e.key_id is None else names.get(e.key_id, "")}
            for e in catalog.audit_log(scope.tenant, kb, limit)
        ]

    return await run_in_threadpool(run)
