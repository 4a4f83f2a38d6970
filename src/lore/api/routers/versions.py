"""Versions: list, activate, roll back, quality reports."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from lore.api.deps import Caller, State
from lore.app.access import audit, require_kb
from lore.app.content_results import EvalSets, QualityReport, VersionDiff, VersionInfo, VersionList
from lore.app.fields import NOTE_CHARS, Note, Seq
from lore.catalog import Version
from lore.engine import Lore
from lore.errors import LoreError, NotFoundError
from lore.eval.compare import load_eval_set
from lore.policy import Action
from lore.storage.layout import reports_key

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


@router.get("/versions", response_model=VersionList)
async def list_versions(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """Every version, oldest first, and the activation log."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb)
        active = state.lore.catalog.active_version(record.id)
        seq = active.seq if active else None
        # Key names of the caller's own tenant only: another tenant's keys stay ids.
        names = {
            f"key:{k.id}@{k.tenant_id}": k.name
            for k in state.lore.catalog.list_api_keys()
            if k.tenant_id == scope.tenant
        }
        return {
            "kb": kb,
            "active": seq,
            "versions": [_json(v, seq) for v in state.lore.catalog.list_versions(record.id)],
            "activations": [
                {
                    "from_seq": a.from_seq,
                    "to_seq": a.to_seq,
                    "actor": a.actor,
                    "key_name": names.get(a.actor),
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

    reason: Note = ""


@router.post("/versions/{seq}/activate", response_model=VersionInfo)
async def activate(
    kb: str, seq: Seq, scope: Caller, state: State, body: ReasonBody | None = None
) -> dict[str, Any]:
    """Serve version `seq` (admin of the tenant owning all of the KB's content)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.ACTIVATE)
        reason = body.reason if body else ""
        with state.lore.catalog.transaction():
            v = state.lore.catalog.activate(record.id, seq, actor=scope.actor, reason=reason)
            audit(state.lore, scope, "activate", kb=kb, target=str(seq), reason=reason)
        return _json(v, v.seq)  # the version just activated is the active one

    return await run_in_threadpool(run)


@router.post("/rollback", response_model=VersionInfo)
async def rollback(kb: str, scope: Caller, state: State, body: ReasonBody | None = None) -> dict[str, Any]:
    """Serve the newest retired version older than the active one (admin of the tenant owning all of it)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.ROLLBACK)
        reason = body.reason if body else ""
        with state.lore.catalog.transaction():
            v = state.lore.catalog.rollback(record.id, actor=scope.actor, reason=reason)
            audit(state.lore, scope, "rollback", kb=kb, target=str(v.seq), reason=reason)
        return _json(v, v.seq)

    return await run_in_threadpool(run)


@router.get("/versions/{seq}/report", response_model=QualityReport, response_model_exclude_unset=True)
async def report(kb: str, seq: Seq, scope: Caller, state: State) -> dict[str, Any]:
    """A version's quality report (it names every file: admins who may change the KB)."""

    def run() -> dict[str, Any]:
        record = require_kb(state.lore, scope, kb, Action.REPORT)
        state.lore.catalog.get_version(record.id, seq)
        data = state.lore.storage.read_bytes(f"{reports_key(record, seq)}/quality.json")
        if data is None:
            raise HTTPException(404, f"no quality report for version {seq} of knowledge base '{kb}'")
        return json.loads(data)  # type: ignore[no-any-return]

    return await run_in_threadpool(run)


@router.get("/diff", response_model=VersionDiff, response_model_exclude_unset=True)
async def diff(kb: str, base: Seq, candidate: Seq, scope: Caller, state: State) -> dict[str, Any]:
    """Files added, changed and removed from version `base` to `candidate` (with the configured eval set:
    retrieval quality of both); admins who may change the KB."""

    def run() -> dict[str, Any]:
        require_kb(state.lore, scope, kb, Action.REPORT)
        return state.lore.diff(kb, base, candidate)

    return await run_in_threadpool(run)


CONFIGURED = "configured"  # the name GET .../eval-sets gives the gate's configured eval set


def _configured(lore: Lore) -> Path | None:
    """The gate's configured eval set file, if one is set."""
    path = lore.settings.gate.eval_set
    return None if path is None else Path(path)


@router.get("/eval-sets", response_model=EvalSets)
async def list_eval_sets(kb: str, scope: Caller, state: State) -> dict[str, Any]:
    """The eval sets a diff can score versions on (admins who may read reports): the KB's saved ones and
    the configured gate set (`configured`)."""

    def run() -> dict[str, Any]:
        require_kb(state.lore, scope, kb, Action.REPORT)
        configured = _configured(state.lore)
        saved = state.lore.eval_sets(kb).list()
        sets = [
            {"name": s.name, "questions": s.questions}
            for s in saved
            if not (configured and s.name == CONFIGURED)
        ]
        if configured is not None:
            n = (
                sum(1 for line in configured.read_text(encoding="utf-8").splitlines() if line.strip())
                if configured.is_file()
                else 0
            )
            sets.append({"name": CONFIGURED, "questions": n})
        return {"kb": kb, "eval_sets": sets}

    return await run_in_threadpool(run)


class DiffBody(BaseModel):
    """Two versions and, optionally, an eval set: a saved one by name, or JSONL lines given here."""

    model_config = ConfigDict(extra="forbid")

    base: Seq
    candidate: Seq
    eval_set: str | None = Field(default=None, max_length=64, description="A name from GET .../eval-sets.")
    eval_jsonl: str | None = Field(
        default=None, max_length=2_000_000, description='Lines of {"question", "files": [...]}.'
    )
    save_as: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$", description="Keep `eval_jsonl` under this name."
    )


MAX_EVAL_LIST = 100  # files, documents or phrases of one eval question


def check_eval_set(text: str, max_questions: int, max_chars: int) -> None:
    """422 naming the line for an eval set of more than `max_questions` questions, a question over
    `max_chars` characters or a list over `MAX_EVAL_LIST` entries: each question is searched twice."""
    count = 0
    for n, line in enumerate(text.splitlines(), 1):
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue  # load_eval_set names the line
        if not isinstance(row, dict):
            continue
        count += 1
        if count > max_questions:
            raise HTTPException(
                422, f"eval set: more than {max_questions} questions (gate.max_eval_questions)"
            )
        question = row.get("question")
        if isinstance(question, str) and len(question) > max_chars:
            raise HTTPException(
                422, f"eval set line {n}: question of {len(question)} characters, limit {max_chars}"
            )
        for key in ("files", "documents", "contains"):
            items = row.get(key)
            if isinstance(items, list) and len(items) > MAX_EVAL_LIST:
                raise HTTPException(
                    422, f'eval set line {n}: "{key}" has {len(items)} entries, limit {MAX_EVAL_LIST}'
                )
            if isinstance(items, list) and any(isinstance(i, str) and len(i) > NOTE_CHARS for i in items):
                raise HTTPException(
                    422, f'eval set line {n}: an entry of "{key}" is over {NOTE_CHARS} characters'
                )


@router.post("/diff", response_model=VersionDiff, response_model_exclude_unset=True)
async def diff_with_eval(kb: str, body: DiffBody, scope: Caller, state: State) -> dict[str, Any]:
    """`GET .../diff` with a chosen eval set: Recall@k and MRR of both versions side by side (admins who
    may read reports)."""

    def run() -> dict[str, Any]:
        lore = state.lore
        require_kb(lore, scope, kb, Action.REPORT)
        if body.eval_set is not None and body.eval_jsonl is not None:
            raise HTTPException(422, "give eval_set or eval_jsonl, not both")
        text = body.eval_jsonl
        if text is None:
            configured = _configured(lore)
            if body.eval_set is None or (body.eval_set == CONFIGURED and configured is not None):
                return lore.diff(kb, body.base, body.candidate, configured)  # none named: the configured one
            text = lore.eval_sets(kb).body(body.eval_set)
            if text is None:
                raise NotFoundError(f"eval set '{body.eval_set}' not found")
        check_eval_set(text, lore.settings.gate.max_eval_questions, lore.settings.answer.max_question_chars)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "eval.jsonl"
            path.write_text(text, encoding="utf-8")
            try:  # a malformed set is a 400 naming the line, before anything is kept
                load_eval_set(path)
            except LoreError as exc:
                raise LoreError(str(exc).replace(str(path), "eval set")) from None
            out = lore.diff(kb, body.base, body.candidate, path)
            if body.save_as and body.eval_jsonl is not None:
                lore.eval_sets(kb).save(body.save_as, body.eval_jsonl, scope.actor)
            return out

    return await run_in_threadpool(run)
