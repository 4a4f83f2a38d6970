"""Versions: list, activate, roll back, quality reports."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from lore.api.access import require_kb
from lore.api.deps import Caller, State
from lore.api.limits import Seq
from lore.catalog import Version
from lore.engine import Lore
from lore.policy import Action

router = APIRouter(prefix="/api/kbs/{kb}", tags=["versions"])


def _json(v: Version, active: int | None) -> dict[str, Any]:
    return {
        "seq": v.seq,
        "status": str(v.status),
        "active": v.seq == active,
        "description": v.description,
        **v.counts,
        "embedding_model": v.embedding_model,
        "chunk_schema": v.chunk_schema,
        "base_seq": v.base_seq,
        "gate_passed": v.gate_passed,
        "created_at": v.created_at.isoformat(),
        "finished_at": v.finished_at.isoformat() if v.finished_at else None,
        "activated_at": v.activated_at.isoformat() if v.activated_at else None,
    }


def version_json(lore: Lore, kb: str, seq: int) -> dict[str, Any]:
    """One version as JSON."""
    record = lore.catalog.get_kb(kb)
    active = lore.catalog.active_version(record.id)
    return _json(lore.catalog.get_version(record.id, seq), active.seq if active else None)


@router.get("/versions")
async def list_versions(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """Every version, oldest first, and the activation log."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb)
        active = state.lore.catalog.active_version(record.id)
        seq = active.seq if active else None
        return {
            "kb": kb,
            "active": seq,
            "versions": [_json(v, seq) for v in state.lore.catalog.list_versions(record.id)],
            "activations": [
                {
                    "from_seq": a.from_seq,
                    "to_seq": a.to_seq,
                    "actor": a.actor,
                    "reason": a.reason,
                    "at": a.at.isoformat(),
                }
                for a in state.lore.catalog.activation_log(record.id)
            ],
        }

    return await run_in_threadpool(run)


class ReasonBody(BaseModel):
    """Why the active pointer moves (kept in the activation log)."""

    model_config = ConfigDict(extra="forbid")

    reason: str = ""


@router.post("/versions/{seq}/activate")
async def activate(
    kb: str, seq: Seq, scope: Caller, state: State, body: ReasonBody | None = None
) -> dict[str, Any]:
    """Serve version `seq` (admin of the tenant owning all of the KB's content)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.ACTIVATE)
        reason = body.reason if body else ""
        with state.lore.catalog.transaction():
            v = state.lore.catalog.activate(record.id, seq, actor=scope.actor[:64], reason=reason)
            state.lore.catalog.audit(
                "activate", tenant=scope.tenant, key_id=scope.key_id, kb=kb, target=str(seq), reason=reason
            )
        return _json(v, v.seq)  # the version just activated is the active one

    return await run_in_threadpool(run)


@router.post("/rollback")
async def rollback(kb: str, scope: Caller, state: State, body: ReasonBody | None = None) -> dict[str, Any]:
    """Serve the newest retired version older than the active one (admin of the tenant owning all of it)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.ROLLBACK)
        reason = body.reason if body else ""
        with state.lore.catalog.transaction():
            v = state.lore.catalog.rollback(record.id, actor=scope.actor[:64], reason=reason)
            state.lore.catalog.audit(
                "rollback", tenant=scope.tenant, key_id=scope.key_id, kb=kb, target=str(v.seq), reason=reason
            )
        return _json(v, v.seq)

    return await run_in_threadpool(run)


@router.get("/versions/{seq}/report")
async def report(kb: str, seq: Seq, scope: Caller, state: State) -> dict[str, Any]:
    """A version's quality report (it names every file: admins who may change the KB)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.REPORT)
        state.lore.catalog.get_version(record.id, seq)
        data = state.lore.storage.read_bytes(f"reports/{kb}/{seq}/quality.json")
        if data is None:
            raise HTTPException(404, f"no quality report for version {seq} of knowledge base '{kb}'")
        return json.loads(data)  # type: ignore[no-any-return]

    return await run_in_threadpool(run)


@router.get("/diff")
async def diff(kb: str, base: Seq, candidate: Seq, scope: Caller, state: State) -> dict[str, Any]:
    """Files added, changed and removed from version `base` to `candidate` (with the configured eval set:
    retrieval quality of both); admins who may change the KB."""

    def run() -> dict[str, Any]:
        require_kb(state.lore, scope, kb, Action.REPORT)
        return state.lore.diff(kb, base, candidate)

    return await run_in_threadpool(run)
