"""Typed results of the use cases every transport shares: knowledge bases, keys, audit, sessions, traces,
feedback and passages (the HTTP API's response models; the wire contract test holds the client to them)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from lore.catalog.service_records import ApiKey


class Result(BaseModel):
    """A reply's model: a key the use case returns but the model does not declare is an error, not dropped."""

    model_config = ConfigDict(extra="forbid")


class KnowledgeBaseInfo(Result):
    """A knowledge base with the caller's tenant's counts (a shared KB shows each tenant its own)."""

    name: str
    description: str
    embedding_model: str
    embedding_dim: int
    store_backend: str
    chunk_schema: str
    owner: bool
    files: int
    chunks: int
    versioned: bool
    active_version: int | None
    created_at: str
    updated_at: str


class KbShares(Result):
    """The tenants a knowledge base is shared with."""

    kb: str
    shared_with: list[str]


class Me(Result):
    """The caller's key and the actions it may take (`GET /api/me`)."""

    tenant: str
    key_id: str | None
    name: str
    roles: list[str]
    datasets: list[str] | None
    actions: list[str]
    key_roles: list[str]


class ApiKeyInfo(Result):
    """A key without its secret."""

    id: str
    prefix: str
    name: str
    tenant: str
    roles: list[str]
    datasets: list[str] | None
    created_at: str
    revoked_at: str | None
    expires_at: str | None = None  # never, when None
    last_used_at: str | None = None  # to within a minute

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyInfo:
        """The catalog's key without its secret, its times in ISO 8601 (None: never, or not yet)."""
        at = {
            name: (getattr(key, name).isoformat() if getattr(key, name) else None)
            for name in ("revoked_at", "expires_at", "last_used_at")
        }
        return cls(
            id=key.id,
            prefix=key.prefix,
            name=key.name,
            tenant=key.tenant_id,
            roles=list(key.roles),
            datasets=None if key.datasets is None else list(key.datasets),
            created_at=key.created_at.isoformat(),
            **at,
        )


class NewApiKey(ApiKeyInfo):
    """A key just made, with its secret (shown this once)."""

    secret: str


class AuditEntry(Result):
    """One audited action; `key_name`: "" for an unnamed key, None for the local operator."""

    id: int
    at: str
    key_id: str | None
    tenant: str
    action: str
    kb: str | None
    target: str
    detail: dict[str, Any]  # free-form: what each action records
    key_name: str | None


class SessionInfo(Result):
    """A conversation session."""

    id: str
    kb: str
    title: str
    summary: str
    created_at: str
    updated_at: str


class SessionMessage(Result):
    """One turn of a session (an answer without passages the reader may not read)."""

    role: str
    content: str
    query: str | None
    trace_id: str | None
    created_at: str


class SessionDetail(SessionInfo):
    """A session with its messages."""

    messages: list[SessionMessage]


class TraceSummary(Result):
    """A request's trace without its data."""

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
    created_at: str


class TraceDetail(TraceSummary):
    """A trace in full; `data` is the free-form record of its stages, hits and events."""

    data: dict[str, Any]


class FeedbackSaved(Result):
    """A recorded rating."""

    id: int
    trace_id: str
    rating: int
    kb: str


class FeedbackRow(Result):
    """A rating as a reviewer sees it: citations it may not read lose their text (`redacted`)."""

    id: int
    trace_id: str
    kb: str
    rating: int
    note: str
    question: str
    created_at: str
    redacted: bool
    answer: str | None
    citations: list[dict[str, Any]]  # the answer's citations as they were stored


class Where(Result):
    """Where a passage is: file, page, slide, sheet/row, heading path."""

    file: str
    page: int | None
    slide: int | None
    sheet: str | None
    row: int | None
    heading_path: list[str]


class Passage(Where):
    """One passage with its parent text and location, at the version read."""

    kb: str
    chunk_id: str
    document_id: str
    text: str
    parent_text: str
    source_type: str
    version: int | None


class Section(Where):
    """One section of a document: a parent passage's text and where it is."""

    text: str


class DocumentText(Result):
    """An indexed file's text as the caller may read it, section by section."""

    kb: str
    file: str
    document_id: str
    version: int | None
    text: str
    sections: list[Section]


class SearchHit(Where):
    """One search hit, best first: the passage, its fused score and each retriever's score and rank."""

    chunk_id: str
    document_id: str
    source_type: str
    text: str
    score: float
    dense_score: float | None
    bm25_score: float | None
    dense_rank: int | None
    bm25_rank: int | None
    rerank_score: float | None
    fused_score: float | None = None  # hybrid: the RRF of the dense and BM25 ranks (`score` once reranked)
