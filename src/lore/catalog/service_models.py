"""Catalog tables of the HTTP service: API keys, chat sessions and messages, feedback, request traces.

A one-column index or check is declared on its column (named by the metadata's naming convention)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from lore.catalog.models import Base
from lore.catalog.types import Float64, LongText


class ApiKeyRow(Base):
    """An API key: only its SHA-256 is kept; the scope (tenant, datasets, roles) every request gets."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ux_api_keys_key_hash", "key_hash", unique=True),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    prefix: Mapped[str] = mapped_column(String(16))  # first characters of the key, to recognise it
    name: Mapped[str] = mapped_column(String(128), default="")
    tenant_id: Mapped[str] = mapped_column(String(128))
    datasets: Mapped[str | None] = mapped_column(Text)  # JSON list; NULL = every dataset of the tenant
    roles: Mapped[str] = mapped_column(Text)  # JSON list
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]  # NULL: never
    last_used_at: Mapped[datetime | None]  # written at most once a minute (`Catalog.use_api_key`)


class SessionRow(Base):
    """A conversation with one knowledge base, owned by a tenant (and the key that opened it)."""

    __tablename__ = "chat_sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128), index=True)
    key_id: Mapped[str | None] = mapped_column(String(32))
    kb: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(Text, default="")
    summary: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class MessageRow(Base):
    """One turn of a session: the user's question (with its standalone rewrite) or the answer."""

    __tablename__ = "chat_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("chat_sessions.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(
        String(16), CheckConstraint("role IN ('user', 'assistant')", name="role")
    )
    content: Mapped[str] = mapped_column(LongText)
    query: Mapped[str | None] = mapped_column(Text)  # the standalone question actually searched
    trace_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime]


class FeedbackRow(Base):
    """Thumbs up (+1) or down (-1) with a note on one answer, identified by its trace."""

    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(String(32))
    tenant_id: Mapped[str] = mapped_column(String(128), index=True)
    key_id: Mapped[str | None] = mapped_column(String(32))
    kb: Mapped[str] = mapped_column(String(64))
    rating: Mapped[int] = mapped_column(Integer, CheckConstraint("rating IN (-1, 1)", name="rating"))
    note: Mapped[str] = mapped_column(Text, default="")
    question: Mapped[str] = mapped_column(LongText, default="")
    answer: Mapped[str] = mapped_column(LongText, default="")
    citations: Mapped[str] = mapped_column(LongText, default="[]")  # JSON: chunk ids and files cited
    created_at: Mapped[datetime]
    # Set when an administrator handled it (e.g. made it a FAQ row: `handled_as` "faq:<scenario>:<row>").
    handled_at: Mapped[datetime | None]
    handled_by: Mapped[str | None] = mapped_column(String(255))
    handled_as: Mapped[str | None] = mapped_column(String(255))


class TraceRow(Base):
    """One answered (or failed) request: stages with timings, route, plan, hits, confidences."""

    __tablename__ = "traces"
    __table_args__ = (Index("ix_traces_tenant_id_created_at", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    key_id: Mapped[str | None] = mapped_column(String(32))
    session_id: Mapped[str | None] = mapped_column(String(32))
    kb: Mapped[str] = mapped_column(String(64))
    kb_version: Mapped[int | None] = mapped_column(Integer)
    transport: Mapped[str] = mapped_column(String(16))  # sse | websocket | openai
    question: Mapped[str] = mapped_column(LongText)
    query: Mapped[str] = mapped_column(Text)  # the standalone question searched
    status: Mapped[str] = mapped_column(String(16))  # ok | error | cancelled
    route: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    first_token_ms: Mapped[float | None] = mapped_column(Float64)
    total_ms: Mapped[float] = mapped_column(Float64)
    data: Mapped[str] = mapped_column(LongText)  # JSON: stages, timings, plan, hits, confidences, citations
    created_at: Mapped[datetime]
