"""Service methods of the Catalog: API keys, sessions and messages, feedback, traces (the records they
return are in `service_records`)."""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from lore.catalog.service_models import ApiKeyRow, FeedbackRow, MessageRow, SessionRow, TraceRow
from lore.catalog.service_records import ApiKey, ChatSession, Feedback, Message, Trace
from lore.errors import LoreError, NotFoundError

KEY_PREFIX = "lore_"
LAST_USE_EVERY = timedelta(minutes=1)  # how stale a key's recorded last use may get
Owned = TypeVar("Owned", SessionRow, TraceRow)
_WHAT = {SessionRow: "session", TraceRow: "trace"}


def hash_key(secret: str) -> str:
    """SHA-256 of a key (keys are 256-bit random, so a fast hash is enough to store them)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _id() -> str:
    return uuid.uuid4().hex


class ServiceMixin:
    """API keys, sessions, messages, feedback and traces; joins the Catalog's thread-local transaction."""

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    # -- API keys ------------------------------------------------------------------------------

    def create_api_key(
        self,
        tenant_id: str,
        roles: list[str],
        datasets: list[str] | None = None,
        name: str = "",
        expires_at: datetime | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key for a tenant (valid until `expires_at`, if given); returns the record and the secret
        (shown once, stored hashed)."""
        tenant_id = tenant_id.strip()
        if not tenant_id:
            raise LoreError("api key: tenant must not be empty")
        roles = [r.strip() for r in roles if r.strip()]
        if datasets is not None:
            datasets = [d.strip() for d in datasets if d.strip()]
            if not datasets:
                raise LoreError(
                    "api key: datasets given but empty; omit it to allow every dataset of the tenant"
                )
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        row = ApiKeyRow(
            id=_id()[:16],
            key_hash=hash_key(secret),
            prefix=secret[:12],
            name=name,
            tenant_id=tenant_id,
            datasets=None if datasets is None else json.dumps(datasets),
            roles=json.dumps(roles),
            created_at=_now(),
            revoked_at=None,
            expires_at=expires_at,
        )
        with self.transaction() as s:
            s.add(row)
            s.flush()
            return ApiKey.from_row(row), secret

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live (neither revoked nor expired) key with this secret, or None."""
        key = self._unrevoked_key(secret)
        return None if key is None or key.expired(_now()) else key

    def use_api_key(self, secret: str, now: datetime | None = None) -> ApiKey | None:
        """The unrevoked key with this secret, expired or not (the caller says which), or None; a live key's
        last use is recorded, at most once a minute per key (not a write per request)."""
        now = now or _now()
        key = self._unrevoked_key(secret)
        if key is None or key.expired(now) or (key.last_used_at and now - key.last_used_at < LAST_USE_EVERY):
            return key
        with self.transaction() as s:
            s.execute(
                update(ApiKeyRow)
                .where(
                    ApiKeyRow.id == key.id,
                    ApiKeyRow.last_used_at.is_(None) | (ApiKeyRow.last_used_at <= now - LAST_USE_EVERY),
                )
                .values(last_used_at=now)
            )
        return replace(key, last_used_at=now)

    def _unrevoked_key(self, secret: str) -> ApiKey | None:
        with self.transaction() as s:
            row = s.scalar(select(ApiKeyRow).where(ApiKeyRow.key_hash == hash_key(secret)))
            return None if row is None or row.revoked_at is not None else ApiKey.from_row(row)

    def revoke_api_key(self, key: str) -> ApiKey:
        """Revoke a key given by id, prefix or the secret itself; NotFoundError if none matches."""
        with self.transaction() as s:
            rows = list(
                s.scalars(
                    select(ApiKeyRow).where(
                        (ApiKeyRow.id == key)
                        | (ApiKeyRow.key_hash == hash_key(key))
                        | (ApiKeyRow.prefix == key)
                    )
                )
            )
            if not rows:
                raise NotFoundError(f"api key {key!r} not found (give its id, prefix or the key)")
            if len(rows) > 1:
                raise LoreError(f"api key {key!r} matches {len(rows)} keys; give the id")
            rows[0].revoked_at = rows[0].revoked_at or _now()
            s.flush()
            return ApiKey.from_row(rows[0])

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, oldest first."""
        with self.transaction() as s:
            return [ApiKey.from_row(r) for r in s.scalars(select(ApiKeyRow).order_by(ApiKeyRow.created_at))]

    # -- sessions and messages ----------------------------------------------------------------

    def create_session(
        self, tenant_id: str, kb: str, key_id: str | None = None, title: str = ""
    ) -> ChatSession:
        """Open a conversation with a knowledge base."""
        now = _now()
        row = SessionRow(
            id=_id(),
            tenant_id=tenant_id,
            key_id=key_id,
            kb=kb,
            title=title[:200],
            summary="",
            created_at=now,
            updated_at=now,
        )
        with self.transaction() as s:
            s.add(row)
            s.flush()
            return ChatSession.from_row(row)

    def get_session(self, session_id: str, tenant_id: str, key_id: str | None = None) -> ChatSession:
        """The tenant's session (with `key_id`: only if that key opened it); NotFoundError otherwise
        (its existence is not revealed)."""
        with self.transaction() as s:
            return ChatSession.from_row(_owned(s, SessionRow, session_id, tenant_id, key_id))

    def list_sessions(
        self, tenant_id: str, kb: str | None = None, limit: int = 50, key_id: str | None = None
    ) -> list[ChatSession]:
        """The tenant's sessions (with `key_id`: only that key's), most recent first."""
        query = _owned_rows(SessionRow, tenant_id, kb, key_id).order_by(SessionRow.updated_at.desc())
        with self.transaction() as s:
            return [ChatSession.from_row(r) for r in s.scalars(query.limit(limit))]

    def delete_session(self, session_id: str, tenant_id: str, key_id: str | None = None) -> None:
        """Remove a session and its messages (with `key_id`: only a session that key opened)."""
        with self.transaction() as s:
            row = _owned(s, SessionRow, session_id, tenant_id, key_id)
            s.delete(row)  # its messages go with it (ON DELETE CASCADE; SQLite runs with foreign_keys=ON)

    def add_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        query: str | None = None,
        trace_id: str | None = None,
    ) -> Message:
        """Append a turn to a session."""
        now = _now()
        row = MessageRow(
            session_id=session_id, role=role, content=content, query=query, trace_id=trace_id, created_at=now
        )
        with self.transaction() as s:
            s.add(row)
            s.execute(update(SessionRow).where(SessionRow.id == session_id).values(updated_at=now))
            s.flush()
            return Message.from_row(row)

    def messages(self, session_id: str, limit: int | None = None) -> list[Message]:
        """A session's turns in order; with `limit`, only the last `limit`."""
        query = select(MessageRow).where(MessageRow.session_id == session_id).order_by(MessageRow.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.transaction() as s:
            return [Message.from_row(r) for r in reversed(list(s.scalars(query)))]

    def set_session_summary(self, session_id: str, summary: str) -> None:
        """Replace the rolling summary of a session."""
        with self.transaction() as s:
            s.execute(update(SessionRow).where(SessionRow.id == session_id).values(summary=summary))

    # -- feedback ------------------------------------------------------------------------------

    def add_feedback(
        self,
        *,
        trace_id: str,
        tenant_id: str,
        key_id: str | None,
        rating: int,
        note: str = "",
        owner_key: str | None = None,
    ) -> Feedback:
        """Rate the answer of one of the tenant's traces (with `owner_key`: only that key's traces);
        question, answer and citations are copied."""
        if rating not in (-1, 1):
            raise LoreError(f"feedback rating: 1 (thumbs up) or -1 (thumbs down), not {rating!r}")
        trace = self.get_trace(trace_id, tenant_id, owner_key)
        end = trace.data.get("end") or {}
        cites = [
            {"chunk_id": c.get("chunk_id"), "file": c.get("file"), "n": c.get("n")}
            for c in end.get("citations", [])
        ]
        row = FeedbackRow(
            trace_id=trace_id,
            tenant_id=tenant_id,
            key_id=key_id,
            kb=trace.kb,
            rating=rating,
            note=note,
            question=trace.question,
            answer=end.get("answer", ""),
            citations=json.dumps(cites, ensure_ascii=False),
            created_at=_now(),
        )
        with self.transaction() as s:
            s.add(row)
            s.flush()
            return Feedback.from_row(row)

    def list_feedback(self, *, rating: int | None = None, kb: str | None = None) -> list[Feedback]:
        """Feedback, oldest first, optionally only one rating and/or knowledge base."""
        query = select(FeedbackRow).order_by(FeedbackRow.id)
        if rating is not None:
            query = query.where(FeedbackRow.rating == rating)
        if kb is not None:
            query = query.where(FeedbackRow.kb == kb)
        with self.transaction() as s:
            return [Feedback.from_row(r) for r in s.scalars(query)]

    def get_feedback(self, feedback_id: int, tenant_id: str) -> Feedback:
        """One of the tenant's ratings; NotFoundError for any other."""
        with self.transaction() as s:
            row = s.get(FeedbackRow, feedback_id)
            if row is None or row.tenant_id != tenant_id:
                raise NotFoundError(f"feedback {feedback_id} not found")
            return Feedback.from_row(row)

    def mark_feedback_handled(
        self, feedback_id: int, tenant_id: str, *, by: str, handled_as: str
    ) -> Feedback:
        """Record that an administrator handled one of the tenant's ratings (`handled_as`: what it became)."""
        with self.transaction() as s:
            row = s.get(FeedbackRow, feedback_id)
            if row is None or row.tenant_id != tenant_id:
                raise NotFoundError(f"feedback {feedback_id} not found")
            row.handled_at, row.handled_by, row.handled_as = _now(), by[:255], handled_as[:255]
            s.flush()
            return Feedback.from_row(row)

    # -- traces --------------------------------------------------------------------------------

    def save_trace(self, *, id: str, data: dict[str, Any], **columns: Any) -> Trace:
        """Record one request's trace: `data` (stages, timings, plan, hits...) and the other columns of
        `TraceRow` (tenant_id, key_id, session_id, kb, kb_version, transport, question, query, status,
        route, error, first_token_ms, total_ms); an unknown column is a TypeError."""
        row = TraceRow(
            id=id, data=json.dumps(data, ensure_ascii=False, default=str), created_at=_now(), **columns
        )
        with self.transaction() as s:
            s.add(row)
            s.flush()
            return Trace.from_row(row)

    def get_trace(self, trace_id: str, tenant_id: str, key_id: str | None = None) -> Trace:
        """The tenant's trace (with `key_id`: only that key's); NotFoundError for any other."""
        with self.transaction() as s:
            return Trace.from_row(_owned(s, TraceRow, trace_id, tenant_id, key_id))

    def list_traces(
        self, tenant_id: str, kb: str | None = None, limit: int = 50, key_id: str | None = None
    ) -> list[Trace]:
        """The tenant's most recent traces (with `key_id`: only that key's)."""
        query = _owned_rows(TraceRow, tenant_id, kb, key_id).order_by(TraceRow.created_at.desc())
        with self.transaction() as s:
            return [Trace.from_row(r) for r in s.scalars(query.limit(limit))]


def _owned(s: Session, model: type[Owned], row_id: str, tenant_id: str, key_id: str | None) -> Owned:
    """The tenant's session or trace (with `key_id`: only that key's); NotFoundError otherwise."""
    row = s.get(model, row_id)
    if row is None or row.tenant_id != tenant_id or (key_id is not None and row.key_id != key_id):
        raise NotFoundError(f"{_WHAT[model]} '{row_id}' not found")
    return row


def _owned_rows(model: type[Owned], tenant_id: str, kb: str | None, key_id: str | None) -> Select[Owned]:
    """The tenant's sessions or traces (with `kb`, `key_id`: only that knowledge base's, that key's)."""
    query = select(model).where(model.tenant_id == tenant_id)
    if key_id is not None:
        query = query.where(model.key_id == key_id)
    if kb is not None:
        query = query.where(model.kb == kb)
    return query
