"""Knowledge bases: list, create, show, delete."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Admin, Caller, State
from lore.engine import Lore

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"])


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
        "versioned": bool(lore.catalog.list_versions(kb.id)), "active_version": active.seq if active else None,
        "created_at": kb.created_at.isoformat(), "updated_at": kb.updated_at.isoformat(),
    }


@router.get("")
async def list_kbs(_: Caller, state: State) -> list[dict[str, Any]]:
    """Every knowledge base."""
    def run() -> list[dict[str, Any]]:
        return [kb_json(state.lore, kb.name) for kb in state.lore.catalog.list_kbs()]
    return await run_in_threadpool(run)


@router.post("", status_code=201)
async def create_kb(body: KbBody, _: Admin, state: State) -> dict[str, Any]:
    """Create a knowledge base bound to the configured embedder and store (admin)."""
    def run() -> dict[str, Any]:
        state.lore.create_kb(body.name, body.description)
        return kb_json(state.lore, body.name)
    return await run_in_threadpool(run)


@router.get("/{kb}")
async def get_kb(kb: str, _: Caller, state: State) -> dict[str, Any]:
    """One knowledge base."""
    return await run_in_threadpool(kb_json, state.lore, kb)


@router.delete("/{kb}", status_code=204)
async def delete_kb(kb: str, _: Admin, state: State) -> None:
    """Delete a knowledge base, its index and its uploaded files (admin)."""
    def run() -> None:
        state.lore.delete_kb(kb)
        shutil.rmtree(uploads_dir(state.lore, kb), ignore_errors=True)
    await run_in_threadpool(run)


def uploads_dir(lore: Lore, kb: str) -> Path:
    """Where a knowledge base's uploaded files are kept: `<home>/uploads/<kb>/`."""
    return lore.settings.home / "uploads" / kb
