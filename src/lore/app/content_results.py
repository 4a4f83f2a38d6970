"""Typed results about a knowledge base's content: documents and their chunks, uploads, ingests, jobs,
versions, reports and diffs (the HTTP API's response models)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from lore.app.results import Result
from lore.schema import Chunk


class DocumentInfo(Result):
    """A catalogued file with its status, counts and the access fields of its chunks."""

    name: str
    type: str
    size: int
    status: str
    reason: str | None
    chunks: int
    documents: int
    ocr_pages: int
    ocr_unreviewed: int
    encoding: str | None
    pages: int | None
    sheets: list[str] | None
    rows: int | None
    slides: int | None
    tenant: str | None
    dataset: str | None
    visibility: str | None
    roles: list[str]
    versions: list[int]
    updated_at: str


class DocumentList(Result):
    """Every catalogued file the caller may see, and whether it may add to the KB."""

    kb: str
    writable: bool
    documents: list[DocumentInfo]


class ChunkEditInfo(Result):
    """One chunk's edit: switched off or re-texted, by whom, and whether it is still pending."""

    file: str
    chunk_index: int
    original_sha: str
    text: str | None
    off: bool
    by: str
    at: str
    applied_in: int | None
    original_text: str
    pending: bool


class PageMark(Result):
    """Who marked a scanned page reviewed, and when."""

    by: str
    at: str


class OcrReview(Result):
    """An OCR'd PDF's scanned pages and the marks of those reviewed (by page number)."""

    pages: list[int]
    reviewed: dict[str, PageMark]


class DocumentChunks(Result):
    """A document's chunks in order (as stored), its pending edits and its OCR review."""

    kb: str
    name: str
    status: str
    reason: str | None
    versioned: bool
    chunks: list[Chunk]
    edits: list[ChunkEditInfo]
    ocr: OcrReview | None


class ChunkEdited(Result):
    """A chunk edit as stored, and whether it is applied already (an unversioned KB)."""

    kb: str
    file: str
    edit: ChunkEditInfo
    applied: bool


class PageReviewed(Result):
    """A scanned page's review mark, and the file's pages not reviewed yet."""

    kb: str
    file: str
    page: int
    reviewed: bool
    by: str | None
    at: str | None
    unreviewed: list[int]


class StoredFile(Result):
    """An upload: its name and size in bytes."""

    name: str
    size: int


class Uploaded(Result):
    """The files an upload stored."""

    kb: str
    files: list[StoredFile]


class IndexedFile(Result):
    """A catalogued file's status."""

    path: str
    status: str
    chunks: int
    error: str | None
    size: int


class FileList(Result):
    """Uploads and indexed files the caller may see."""

    uploads: list[StoredFile]
    indexed: list[IndexedFile]


class FileDeleted(Result):
    """What a file delete removed; `note` says when the next build drops it from the index."""

    kb: str
    file: str
    upload: bool
    indexed: bool
    note: str | None


class PreviewChunk(Result):
    """One chunk of a preview."""

    chunk_index: int
    text: str
    page: int | None
    sheet: str | None
    row: int | None
    heading_path: list[str]
    source_type: str


class Preview(Result):
    """How an uploaded file splits into chunks (nothing stored)."""

    file: str
    documents: int
    chunks: int
    preview: list[PreviewChunk]


class FileOutcome(Result):
    """One file's outcome in an ingest, build or crawl."""

    name: str
    status: str
    chunks: int
    documents: int
    ocr_pages: int
    error: str | None
    encoding: str | None
    table_rows: int
    note: str | None


class IngestResult(Result):
    """Per-file outcomes and totals of an ingest."""

    kb: str
    files: list[FileOutcome]
    chunks: int
    counts: dict[str, int]


class ChunksCommitted(IngestResult):
    """An add-by-chunks commit: the file and the number of chunks stored."""

    file: str
    committed: int


class RefusedUrl(Result):
    """A URL a crawl did not fetch, and why."""

    url: str
    reason: str


class CrawlResult(IngestResult):
    """A finished crawl: pages indexed, unchanged (304) and refused, with the ingest's outcomes."""

    pages: int
    unchanged: int
    refused: list[RefusedUrl]


class JobInfo(Result):
    """A build or crawl job; `result` is the job's report once it has succeeded (its kind's own shape)."""

    id: str
    kind: str
    status: str
    result: dict[str, Any] | None
    error: str | None
    error_status: int | None
    worker: str | None
    cancelled_by: str | None = None  # who cancelled it (a cancelled job is "failed")
    created_at: str | None
    started_at: str | None
    heartbeat_at: str | None
    finished_at: str | None


class JobQueued(Result):
    """A queued job (202)."""

    kb: str
    job: JobInfo


class CrawlQueued(JobQueued):
    """A queued crawl (202) and the path of its event stream."""

    events: str


class VersionInfo(Result):
    """One version: status, build counts, gate outcome and times."""

    seq: int
    status: str
    active: bool
    description: str
    files_added: int
    files_changed: int
    files_removed: int
    files_reused: int
    chunks_embedded: int
    chunks_reused: int
    embedding_model: str | None
    chunk_schema: str | None
    base_seq: int | None
    gate_passed: bool | None
    created_at: str
    finished_at: str | None
    activated_at: str | None


class Activation(Result):
    """One move of the active pointer."""

    from_seq: int | None
    to_seq: int
    actor: str
    key_name: str | None = None  # the acting key's name, for a key of the caller's own tenant
    reason: str
    at: str


class VersionList(Result):
    """Every version, oldest first, and the activation log."""

    kb: str
    active: int | None
    versions: list[VersionInfo]
    activations: list[Activation]


class QualityReport(Result):
    """A build's quality report as stored with its version (sections vary with the build's features)."""

    model_config = ConfigDict(extra="allow")

    files: dict[str, int]
    chunks: dict[str, Any]
    problems: list[dict[str, Any]] = []


class ChangedFile(Result):
    """A file both versions hold, changed: why, and its chunk counts (base, candidate)."""

    file: str
    why: list[str]
    chunks: list[int]


class FileDiff(Result):
    """Files added, changed and removed from one version to another."""

    added: list[str]
    changed: list[ChangedFile]
    removed: list[str]
    unchanged: int


class Scores(Result):
    """Retrieval figures of one version on an eval set."""

    recall: float
    mrr: float
    ndcg: float


class RetrievalComparison(Result):
    """Both versions' figures; `lost`/`gained`: questions one finds and the other does not (with a base)."""

    k: int
    questions: int
    candidate: Scores
    base: Scores | None
    lost: list[str] | None = None
    gained: list[str] | None = None


class VersionDiff(Result):
    """A diff of two versions; `retrieval` only with an eval set."""

    kb: str
    base: int
    candidate: int
    files: FileDiff
    retrieval: RetrievalComparison | None = None


class EvalSetInfo(Result):
    """An eval set a diff can score versions on."""

    name: str
    questions: int


class EvalSets(Result):
    """The KB's saved eval sets and the configured one."""

    kb: str
    eval_sets: list[EvalSetInfo]
