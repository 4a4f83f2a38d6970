"""Scenarios the caller may ask (for the chat's scenario picker)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.api.scenarios import visible_scenarios

router = APIRouter(prefix="/api/scenarios", tags=["scenarios"])


@router.get("")
async def list_scenarios(scope: Caller, state: State) -> list[dict[str, Any]]:
    """The scenarios serving the key's tenant, with their knowledge base and business sources."""
    found = await run_in_threadpool(visible_scenarios, state.lore, scope)
    return [
        {
            "id": sc.id,
            "name": sc.name,
            "domain": sc.domain,
            "description": sc.description,
            "kb": sc.kb_name,
            "assistant_name": sc.assistant_name,
            "sources": [{"id": s.id, "label": s.label} for s in sc.sources],
        }
        for sc in found
    ]
