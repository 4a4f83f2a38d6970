"""The service's records as the catalog reports them: API keys (never the secret), chat sessions and
their messages, feedback, and answer traces."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from lore.catalog.records import RowRecord, json_or_none


@dataclass(frozen=True, slots=True)
class ApiKey(RowRecord):
    """An API key's scope as the catalog reports it (never the secret)."""

    CONVERT: ClassVar = {"datasets": json_or_none, "roles": json.loads}

    id: str
    prefix: str
    name: str
    tenant_id: str
    datasets: list[str] | None
    roles: list[str]
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None
    last_used_at: datetime | None

    def expired(self, now: datetime) -> bool:
        """Whether the key has expired by `now`."""
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True, slots=True)
class ChatSession(RowRecord):
    """A conversation with one knowledge base."""

    id: str
    tenant_id: str
    key_id: str | None
    kb: str
    title: str
    summary: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Message(RowRecord):
    """One turn of a session."""

    id: int
    session_id: str
    role: str
    content: str
    query: str | None
    trace_id: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Feedback(RowRecord):
    """A rating of one answer."""

    CONVERT: ClassVar = {"citations": json.loads}

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
    handled_at: datetime | None = None
    handled_by: str | None = None
    handled_as: str | None = None

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
class Trace(RowRecord):
    """One request's trace."""

    CONVERT: ClassVar = {"data": json.loads}

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

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view."""
        out = {name: getattr(self, name) for name in self.__slots__}
        out["created_at"] = self.created_at.isoformat()
        return out
