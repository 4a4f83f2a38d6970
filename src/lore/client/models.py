"""Typed results of the Lore HTTP API, built from its JSON (unknown fields are kept in `raw`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Self

from lore.errors import LoreError


class LoreAPIError(LoreError):
    """The server refused a request: `status` is the HTTP status, `message` the server's own reason; status 0
    is no HTTP reply at all (unreachable server, bad input before sending), its message says why."""

    def __init__(self, status: int, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status, self.message, self.method, self.url = status, message, method, url


class _Json:
    """`from_json` for dataclasses: known fields by name, the whole object in `raw`."""

    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        names = {f.name for f in fields(cls)} - {"raw"}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names}, raw=data)  # type: ignore[call-arg]


@dataclass
class KnowledgeBase(_Json):
    """A knowledge base as the caller sees it."""

    name: str
    description: str = ""
    embedding_model: str = ""
    files: int = 0
    chunks: int = 0
    versioned: bool = False
    active_version: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Location(_Json):
    """Where a passage is: file, page, slide, sheet/row, heading path."""

    file: str
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    row: int | None = None
    heading_path: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def where(self) -> str:
        """'file p.2 Sheet!5 Heading > Sub'."""
        parts = [self.file]
        if self.page:
            parts.append(f"p.{self.page}")
        if self.slide:
            parts.append(f"slide {self.slide}")
        if self.sheet:
            parts.append(f"{self.sheet}!{self.row}")
        if self.heading_path:
            parts.append(" > ".join(self.heading_path))
        return " ".join(parts)


@dataclass
class Hit(Location):
    """One search hit, best first."""

    chunk_id: str = ""
    document_id: str = ""
    text: str = ""
    score: float = 0.0
    source_type: str = "doc"


@dataclass
class SearchResult:
    """Hits of one search, with the version they were read from (None: an unversioned KB)."""

    kb: str
    query: str
    hits: list[Hit]
    version: int | None = None
    mode: str | None = None  # the mode searched (None: a server older than the field)
    rerank: dict[str, Any] | None = None  # the reranker's report: provider, candidates, ms


@dataclass
class Citation(Location):
    """A numbered source of an answer: `[n]` in the answer text points at it."""

    n: int = 0
    chunk_id: str = ""
    document_id: str = ""
    text: str = ""


@dataclass
class AskEvent:
    """One streamed event: `start`, `status`, `token`, `end` or `error`."""

    event: str
    data: dict[str, Any]


@dataclass
class Answer(_Json):
    """The `end` event of a question: the answer, its citations, or a refusal (a normal result)."""

    question: str = ""
    answer: str = ""
    refused: bool = False
    route: str = ""
    citations: list[Citation] = field(default_factory=list)
    evidence_confidence: float = 0.0
    answer_confidence: float = 0.0
    warning: str | None = None
    trace_id: str = ""
    session_id: str | None = None
    kb_version: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_end(cls, end: dict[str, Any], start: dict[str, Any] | None = None) -> Answer:
        """From the `end` event's data (and the `start` event's, for the version read)."""
        answer = cls.from_json({**end, "kb_version": (start or {}).get("kb_version")})
        answer.citations = [Citation.from_json(c) for c in end.get("citations", [])]
        return answer


@dataclass
class FileResult(_Json):
    """One file's outcome in an ingest or build: ingested, skipped, failed (with the reason)..."""

    name: str
    status: str
    chunks: int = 0
    documents: int = 0
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class IngestResult:
    """Per-file outcomes and totals of an ingest or build."""

    kb: str
    files: list[FileResult]
    chunks: int
    counts: dict[str, int]
    version: Version | None = None  # builds: the version made
    gate_reasons: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # web sources: (URL, reason) not fetched
    unchanged: int = 0  # web sources: pages the server answered 304 Not Modified

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestResult:
        version = data.get("version")
        return cls(
            data["kb"],
            [FileResult.from_json(f) for f in data.get("files", [])],
            data.get("chunks", 0),
            data.get("counts", {}),
            Version.from_json(version) if isinstance(version, dict) else None,
            data.get("gate_reasons", []),
            [(r["url"], r["reason"]) for r in data.get("refused", [])],
            data.get("unchanged", 0),
        )

    def count(self, status: str) -> int:
        return self.counts.get(status, 0)


@dataclass
class Version(_Json):
    """One version of a knowledge base."""

    seq: int
    status: str
    active: bool = False
    description: str = ""
    gate_passed: bool | None = None
    created_at: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Upload(_Json):
    """A file stored on the server by an upload."""

    name: str
    size: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Session(_Json):
    """A conversation session (with its messages when fetched one by one)."""

    id: str
    kb: str
    title: str = ""
    summary: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Passage(Location):
    """One passage by id, with its surrounding (parent) text."""

    chunk_id: str = ""
    document_id: str = ""
    text: str = ""
    parent_text: str = ""
    version: int | None = None


@dataclass
class Document(_Json):
    """The readable text of one indexed file, section by section."""

    kb: str
    file: str
    text: str
    sections: list[dict[str, Any]] = field(default_factory=list)
    version: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
