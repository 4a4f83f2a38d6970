"""Knowledge bases: list, create, show, delete."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.access import check_kb_visible, check_kb_write, holds_other_tenants, kb_visible
from lore.api.deps import Admin, Caller, State
from lore.engine import Lore
from lore.errors import NotFoundError

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"])
_KB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class KbBody(BaseModel):
    """A new knowledge base."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="1-64 letters, digits, '_' or '-'.")
    description: str = ""


def kb_json(lore: Lore, name: str) -> dict[str, Any]:
    """A knowledge base with its counts and active version."""
    kb = lore.catalog.get_kb(name)
    active = lore.catalog.active_version(kb.id)
    return {
        "name": kb.name, "description": kb.description, "embedding_model": kb.embedding_model,
        "embedding_dim": kb.embedding_dim, "store_backend": kb.store_backend, "chunk_schema": kb.chunk_schema,
        "files": len(lore.catalog.list_files(kb.id, "ingested")), "chunks": lore.catalog.count_chunks(kb.id),
        "versioned": lore.catalog.has_versions(kb.id), "active_version": active.seq if active else None,
        "created_at": kb.created_at.isoformat(), "updated_at": kb.updated_at.isoformat(),
    }


@router.get("")
async def list_kbs(scope: Caller, state: State) -> list[dict[str, Any]]:
    """The knowledge bases the caller can read from (or, as an admin, may change)."""
    def run() -> list[dict[str, Any]]:
        lore = state.lore
        return [kb_json(lore, kb.name) for kb in lore.catalog.list_kbs() if kb_visible(lore, kb, scope)]
    return await run_in_threadpool(run)


@router.post("", status_code=201)
async def create_kb(body: KbBody, _: Admin, state: State) -> dict[str, Any]:
    """Create a knowledge base bound to the configured embedder and store (admin)."""
    def run() -> dict[str, Any]:
        state.lore.create_kb(body.name, body.description)
        return kb_json(state.lore, body.name)
    return await run_in_threadpool(run)


@router.get("/{kb}")
async def get_kb(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """One knowledge base (404 for one the caller may not see)."""
    def run() -> dict[str, Any]:
        check_kb_visible(state.lore, state.lore.catalog.get_kb(kb), scope)
        return kb_json(state.lore, kb)
    return await run_in_threadpool(run)


@router.delete("/{kb}", status_code=204)
async def delete_kb(kb: str, scope: Admin, state: State) -> None:
    """Delete a knowledge base, its index and its uploaded files (admin of its only tenant).

    403 for a KB holding other tenants' documents; 409 even for a platform admin (it would delete them).
    """
    def run() -> None:
        record = state.lore.catalog.get_kb(kb)
        check_kb_write(state.lore, record, scope)
        if holds_other_tenants(state.lore, record, scope.tenant_id):
            raise HTTPException(409, f"knowledge base '{kb}' holds other tenants' documents; it cannot be "
                                     f"deleted by tenant '{scope.tenant_id}'")
        state.lore.delete_kb(kb)
        shutil.rmtree(uploads_dir(state.lore, kb), ignore_errors=True)
    await run_in_threadpool(run)


def uploads_dir(lore: Lore, kb: str) -> Path:
    """Where a knowledge base's uploaded files are kept: `<storage dir>/uploads/<kb>/` (never outside it)."""
    if not _KB_NAME.fullmatch(kb):
        raise NotFoundError(f"knowledge base {kb!r} not found")
    return lore.settings.files_dir / "uploads" / kb
