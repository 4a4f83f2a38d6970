"""The audit log of the caller's tenant: activations, rollbacks, builds, deletes, shares (admin)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.policy import Action, Kind, Resource, check

router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("")
async def audit_log(
    scope: Caller, state: State, kb: str | None = None, limit: int = Query(default=100, ge=1, le=1000)
) -> list[dict[str, Any]]:
    """The newest audit entries of the key's tenant (admin), optionally of one knowledge base."""

    def run() -> list[dict[str, Any]]:
        check(scope, Action.AUDIT, Resource(Kind.AUDIT, "audit", tenants=frozenset({scope.tenant})))
        return [e.to_json() for e in state.lore.catalog.audit_log(scope.tenant, kb, limit)]

    return await run_in_threadpool(run)
