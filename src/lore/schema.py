"""Small typed objects passed between the parts: loaded sections, chunks, filters and hits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

SourceType = Literal["faq", "doc", "table_row"]
Visibility = Literal["public", "internal", "restricted"]
VISIBILITIES: tuple[str, ...] = get_args(Visibility)
SearchMode = Literal["dense", "bm25", "hybrid"]


@dataclass
class Section:
    """One piece of a loaded document with its location (page, slide, heading, sheet/row)."""

    text: str
    page: int | None = None
    slide: int | None = None
    heading_path: list[str] = field(default_factory=list)
    sheet: str | None = None
    row: int | None = None
    kind: Literal["text", "table", "table_row"] = "text"
    # For table rows: the header line kept with every row so a row never loses its headers.
    header: str | None = None


@dataclass
class LoadedDocument:
    """A document as a loader read it: sections in reading order plus facts for the quality report."""

    path: str
    sections: list[Section]
    document_id: str | None = None  # set by record formats (JSONL) that carry their own id
    title: str | None = None
    encoding: str | None = None
    ocr_pages: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Chunk:
    """A searchable child chunk carrying the metadata contract from DESIGN.md."""

    chunk_id: str
    text: str
    parent_id: str
    parent_text: str
    kb_id: str
    document_id: str
    file_path: str
    file_sha256: str
    chunk_index: int
    chunk_schema: str
    embedding_model: str
    source_type: SourceType = "doc"
    scenario_id: str = "default"
    source: str = "default"
    tenant_id: str = "default"
    dataset_id: str = "default"
    visibility: Visibility = "internal"
    allowed_roles: list[str] = field(default_factory=list)
    page: int | None = None
    slide: int | None = None
    heading_path: list[str] = field(default_factory=list)
    sheet: str | None = None
    row: int | None = None
    title: str | None = None
    valid_from_seq: int = 1
    valid_to_seq: int = 0  # 0 = still valid
    answer: str | None = None  # FAQ chunks: the standard answer (the chunk text is the question)

    def metadata(self) -> dict[str, Any]:
        """All fields except the texts, as a plain dict (for JSON output and stores)."""
        skip = {"text", "parent_text"}
        return {k: v for k, v in self.__dict__.items() if k not in skip}


@dataclass
class SearchFilter:
    """Scope of a search; every backend applies it inside the store query.

    `None` means "no restriction on this field". `roles` matches a chunk whose `allowed_roles`
    shares any role, or whose `allowed_roles` is empty (open to every role).
    `version_seq` keeps chunks valid at that version: valid_from <= seq and (valid_to == 0 or > seq).
    """

    tenant_ids: list[str] | None = None
    dataset_ids: list[str] | None = None
    visibility: list[str] | None = None
    roles: list[str] | None = None
    source_types: list[str] | None = None
    sources: list[str] | None = None
    document_ids: list[str] | None = None
    version_seq: int | None = None

    def matches(self, c: Chunk) -> bool:
        """True if the chunk passes this filter (the same test the stores run inside their queries)."""
        fields = (
            (self.tenant_ids, c.tenant_id),
            (self.dataset_ids, c.dataset_id),
            (self.visibility, c.visibility),
            (self.source_types, c.source_type),
            (self.sources, c.source),
            (self.document_ids, c.document_id),
        )
        if any(wanted is not None and value not in wanted for wanted, value in fields):
            return False
        if self.roles is not None and c.allowed_roles and not set(c.allowed_roles) & set(self.roles):
            return False
        seq = self.version_seq
        return seq is None or (c.valid_from_seq <= seq and (c.valid_to_seq == 0 or c.valid_to_seq > seq))


@dataclass
class Hit:
    """One search result: the chunk, its fused score and the scores of each retriever."""

    chunk: Chunk
    score: float
    dense_score: float | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None
    # the reranker's score calibrated to [0, 1], when one re-scored this hit
    rerank_score: float | None = None
    fused_score: float | None = None  # a hybrid hit's RRF score, kept when a reranker replaces `score`

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view with location fields flattened for the CLI and API."""
        c = self.chunk
        return {
            "chunk_id": c.chunk_id,
            "document_id": c.document_id,
            "file": c.file_path,
            "page": c.page,
            "slide": c.slide,
            "sheet": c.sheet,
            "row": c.row,
            "heading_path": c.heading_path,
            "source_type": c.source_type,
            "text": c.text,
            "score": self.score,
            "dense_score": self.dense_score,
            "bm25_score": self.bm25_score,
            "dense_rank": self.dense_rank,
            "bm25_rank": self.bm25_rank,
            "rerank_score": self.rerank_score,
            "fused_score": self.fused_score,
        }


def hit_record(hit: Hit) -> dict[str, Any]:
    """A hit as plain JSON-ready data (for shared caches)."""
    return asdict(hit)


def hit_from_record(record: dict[str, Any]) -> Hit:
    """The hit `hit_record` made."""
    data = dict(record)
    return Hit(Chunk(**data.pop("chunk")), **data)


def index_text(chunk: Chunk) -> str:
    """The text that is embedded and tokenised: the chunk with its title/heading/sheet context."""
    context = chunk_context(chunk)
    return (context + "\n" + chunk.text) if context else chunk.text


def chunk_context(chunk: Chunk) -> str:
    """Where the chunk sits: its title, heading path and sheet ("Handbook / 年假 / 如何申请年假"), or ""."""
    context = [chunk.title] if chunk.title and chunk.title not in chunk.heading_path else []
    context += chunk.heading_path
    if chunk.sheet:
        context.append(chunk.sheet)
    return " / ".join(context)
