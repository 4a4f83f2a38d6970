"""The service's records as the catalog reports them: API keys (never the secret), chat sessions and
their messages, feedback, and answer traces."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lore.catalog.service_models import ApiKeyRow, FeedbackRow, MessageRow, SessionRow, TraceRow


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key's scope as the catalog reports it (never the secret)."""

    id: str
    prefix: str
    name: str
    tenant_id: str
    datasets: list[str] | None
    roles: list[str]
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def from_row(cls, row: ApiKeyRow) -> ApiKey:
        """Copy an ORM row into a detached record."""
        return cls(
            id=row.id,
            prefix=row.prefix,
            name=row.name,
            tenant_id=row.tenant_id,
            datasets=None if row.datasets is None else json.loads(row.datasets),
            roles=json.loads(row.roles),
            created_at=row.created_at,
            revoked_at=row.revoked_at,
        )


@dataclass(frozen=True, slots=True)
class ChatSession:
    """A conversation with one knowledge base."""

    id: str
    tenant_id: str
    key_id: str | None
    kb: str
    title: str
    summary: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: SessionRow) -> ChatSession:
        """Copy an ORM row into a detached record."""
        return cls(
            id=row.id,
            tenant_id=row.tenant_id,
            key_id=row.key_id,
            kb=row.kb,
            title=row.title,
            summary=row.summary,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a session."""

    id: int
    session_id: str
    role: str
    content: str
    query: str | None
    trace_id: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: MessageRow) -> Message:
        """Copy an ORM row into a detached record."""
        return cls(
            id=row.id,
            session_id=row.session_id,
            role=row.role,
            content=row.content,
            query=row.query,
            trace_id=row.trace_id,
            created_at=row.created_at,
        )


@dataclass(frozen=True, slots=True)
class Feedback:
    """A rating of one answer."""

    id: int
    trace_id: str
    tenant_id: str
    kb: str
    rating: int
    note: str
    question: str
    answer: str
    citations: list[dict[str, Any]]
    created_at: datetime

    @classmethod
    def from_row(cls, row: FeedbackRow) -> Feedback:
        """Copy an ORM row into a detached record."""
        return cls(
            id=row.id,
            trace_id=row.trace_id,
            tenant_id=row.tenant_id,
            kb=row.kb,
            rating=row.rating,
            note=row.note,
            question=row.question,
            answer=row.answer,
            citations=json.loads(row.citations),
            created_at=row.created_at,
        )

    def as_badcase(self) -> dict[str, Any]:
        """This answer as one line of the bad-case eval set (`lore badcases export`, the console's export)."""
        return {
            "question": self.question,
            "kb": self.kb,
            "bad_answer": self.answer,
            "note": self.note,
            "cited_files": sorted({c["file"] for c in self.citations if c.get("file")}),
            "trace_id": self.trace_id,
            "tenant_id": self.tenant_id,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Trace:
    """One request's trace."""

    id: str
    tenant_id: str
    key_id: str | None
    session_id: str | None
    kb: str
    kb_version: int | None
    transport: str
    question: str
    query: str
    status: str
    route: str | None
    error: str | None
    first_token_ms: float | None
    total_ms: float
    data: dict[str, Any]
    created_at: datetime

    @classmethod
    def from_row(cls, row: TraceRow) -> Trace:
        """Copy an ORM row into a detached record."""
        return cls(
            id=row.id,
            tenant_id=row.tenant_id,
            key_id=row.key_id,
            session_id=row.session_id,
            kb=row.kb,
            kb_version=row.kb_version,
            transport=row.transport,
            question=row.question,
            query=row.query,
            status=row.status,
            route=row.route,
            error=row.error,
            first_token_ms=row.first_token_ms,
            total_ms=row.total_ms,
            data=json.loads(row.data),
            created_at=row.created_at,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view."""
        out = {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]
        out["created_at"] = self.created_at.isoformat()
        return out
