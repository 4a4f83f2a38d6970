"""Knowledge bases: list, create, show, delete, share."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import audit, own_counts, require_kb, visible_kbs
from lore.app.fields import NAME_CHARS, Note
from lore.app.results import KbShares, KnowledgeBaseInfo
from lore.catalog import KnowledgeBase
from lore.engine import Lore
from lore.grant import Grant
from lore.policy import Action, Kind, Resource, check

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"])


class KbBody(BaseModel):
    """A new knowledge base."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=NAME_CHARS, description="1-64 letters, digits, '_' or '-'.")
    description: Note = ""


def kb_json(lore: Lore, kb: KnowledgeBase, grant: Grant) -> dict[str, Any]:
    """A knowledge base with the caller's tenant's counts (a shared KB shows each tenant its own)."""
    active = lore.catalog.active_version(kb.id)
    files, chunks = own_counts(lore, kb, grant)
    return {
        "name": kb.name,
        "description": kb.description,
        "embedding_model": kb.embedding_model,
        "embedding_dim": kb.embedding_dim,
        "store_backend": kb.store_backend,
        "chunk_schema": kb.chunk_schema,
        "owner": kb.owner_tenant == grant.tenant,
        "files": files,
        "chunks": chunks,
        "versioned": lore.catalog.has_versions(kb.id),
        "active_version": active.seq if active else None,
        "created_at": kb.created_at.isoformat(),
        "updated_at": kb.updated_at.isoformat(),
    }


@router.get("", response_model=list[KnowledgeBaseInfo])
async def list_kbs(scope: Caller, state: State) -> list[dict[str, Any]]:
    """The knowledge bases the caller's tenant owns or that are shared with it."""

    def run() -> list[dict[str, Any]]:
        return [kb_json(state.lore, kb, scope) for kb in visible_kbs(state.lore, scope)]

    return await run_in_threadpool(run)


@router.post("", status_code=201, response_model=KnowledgeBaseInfo)
async def create_kb(body: KbBody, scope: Caller, state: State) -> dict[str, Any]:
    """Create a knowledge base owned by the key's tenant, bound to the configured embedder and store
    (admin)."""

    def run() -> dict[str, Any]:
        check(scope, Action.CREATE, Resource(Kind.KB, body.name, tenants=frozenset({scope.tenant})))
        kb = state.lore.create_kb(body.name, body.description, owner_tenant=scope.tenant)
        audit(state.lore, scope, "create", kb=kb.name, target=kb.name)
        return kb_json(state.lore, kb, scope)

    return await run_in_threadpool(run)


@router.get("/{kb}", response_model=KnowledgeBaseInfo)
async def get_kb(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """One knowledge base (404 for one the caller may not see)."""

    def run() -> dict[str, Any]:
        return kb_json(state.lore, require_kb(state.lore, scope, kb), scope)

    return await run_in_threadpool(run)


@router.delete("/{kb}", status_code=204)
async def delete_kb(kb: str, scope: Caller, state: State, reason: Note = "") -> None:
    """Delete a knowledge base with everything it holds: index, uploads, reports, edits, jobs, and the
    files of tenants it is shared with (admin of its owner tenant); audited with `?reason=`."""

    def run() -> None:
        record = require_kb(state.lore, scope, kb, Action.DELETE)
        state.lore.delete_kb(record.name, tenant=scope.tenant, key_id=scope.key_id, reason=reason)

    await run_in_threadpool(run)


class ShareBody(BaseModel):
    """A tenant to share a knowledge base with (or to stop sharing it with)."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(min_length=1, max_length=128)


@router.post("/{kb}/shares", status_code=201, response_model=KbShares)
async def share(kb: str, body: ShareBody, scope: Caller, state: State) -> dict[str, Any]:
    """Let another tenant read the KB and add its own files (admin of the owner tenant)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.SHARE)
        state.lore.catalog.share_kb(record.id, body.tenant)
        audit(state.lore, scope, "share", kb=kb, target=body.tenant)
        return {"kb": kb, "shared_with": sorted(state.lore.catalog.kb_tenants(record.id)[1])}

    return await run_in_threadpool(run)


@router.delete("/{kb}/shares/{tenant}", status_code=204)
async def unshare(kb: str, tenant: str, scope: Caller, state: State) -> None:
    """Stop sharing the KB with a tenant and remove that tenant's files from it (uploads and indexed
    files); its owner tenant's admin may always do it, whatever the other tenant added (audited)."""

    def run() -> None:
        record = require_kb(state.lore, scope, kb, Action.SHARE)
        state.lore.unshare_kb(record.name, tenant, by=scope.tenant, key_id=scope.key_id)

    await run_in_threadpool(run)
