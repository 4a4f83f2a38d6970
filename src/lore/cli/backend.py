"""One path for every command that runs both ways: a command parses its options into one request, calls a
`Backend` — in-process (`backend_local`) or a `lore serve` through `LoreClient` (`backend_http`, with
`--server`) — and prints the one result type either returns. This module imports no engine and no pydantic
(a client-only install runs the HTTP backend)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lore.errors import LoreError
from lore.ingest.tally import FileTally

Events = Generator[tuple[str, dict[str, Any]], None, None]  # an answer's (event, data) pairs, no `start`


@dataclass(frozen=True)
class SearchOptions:
    """`lore search`'s options."""

    kb: str
    query: str
    top_k: int = 10
    mode: str | None = None
    version: int | None = None
    rerank: bool | None = None
    recall_k: int | None = None
    rerank_k: int | None = None


@dataclass(frozen=True)
class AskOptions:
    """`lore ask`'s options (`tenant`, `roles`, `datasets`: the operator's scope, in-process only)."""

    question: str
    kb: str | None = None
    scenario: str | None = None
    top_k: int = 10
    version: int | None = None
    source: str | None = None
    mode: str = "fast"
    rewrite: str = "off"
    session: str | None = None
    tenant: str | None = None
    roles: list[str] | None = None
    datasets: list[str] | None = None


@dataclass(frozen=True)
class IngestOptions:
    """`lore ingest`'s sources: local files and folders, web pages, a sitemap."""

    kb: str
    files: list[Path]
    urls: list[str]
    sitemap: str | None = None
    prefix: str | None = None
    max_pages: int = 100


@dataclass(frozen=True)
class BuildOptions:
    """`lore build`'s options."""

    kb: str
    sources: list[Path]
    description: str = ""
    activate: bool = False
    quality_gate: bool = False
    force: bool = False
    incremental_from: str = "latest"
    remove_missing: bool = False


@dataclass
class KbRow:
    """A knowledge base as `lore kb list` shows it (`owner`: its owner tenant, None when not known)."""

    name: str
    description: str
    owner: str | None
    embedding_model: str
    embedding_dim: int
    store_backend: str
    files: int
    chunks: int
    versioned: bool
    active_version: int | None
    created_at: str


@dataclass
class FileOutcome:
    """One file's outcome in an ingest or a build."""

    name: str
    status: str
    chunks: int = 0
    documents: int = 0
    ocr_pages: int = 0
    error: str | None = None
    note: str | None = None


@dataclass
class Outcome(FileTally[FileOutcome]):
    """Per-file outcomes of an ingest or a build; `refused`: web pages not fetched (URL, reason)."""

    files: list[FileOutcome] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    web: str | None = None  # what a crawl fetched: "N pages fetched (M not modified…)"


@dataclass
class VersionRow:
    """A version as `lore versions --json` prints it."""

    seq: int
    status: str
    active: bool
    created: str
    files_added: int
    files_changed: int
    files_removed: int
    files_reused: int
    chunks_embedded: int
    chunks_reused: int
    gate_passed: bool | None
    description: str
    base_seq: int | None

    @classmethod
    def of(cls, data: dict[str, Any], status: str, active: bool, created: str) -> VersionRow:
        """From a version's fields and counts (as the catalog or the server gives them)."""
        counts = {k: int(data.get(k) or 0) for k in COUNTS}
        return cls(
            seq=data["seq"],
            status=status.upper(),
            active=active,
            created=created[:19],
            **counts,
            gate_passed=data.get("gate_passed"),
            description=data.get("description") or "",
            base_seq=data.get("base_seq"),
        )


COUNTS = ("files_added", "files_changed", "files_removed", "files_reused", "chunks_embedded", "chunks_reused")


@dataclass
class Built:
    """A build's outcome: the version made, its files, what it removed and a failed gate's reasons."""

    outcome: Outcome
    version: VersionRow
    removed: list[str] | None  # None: the server did not say
    gate_reasons: list[str]
    report: str | None  # where the quality report is (None: on the server)


@dataclass
class Found:
    """A search's hits (as JSON objects, best first), the version and mode searched, the reranker's report."""

    version: int | None
    mode: str | None
    rerank: dict[str, Any] | None
    hits: list[dict[str, Any]]


@dataclass
class FileDeletion:
    """What `lore files delete` removed."""

    file: str
    upload: bool
    indexed: bool
    note: str | None = None


@dataclass
class FileListing:
    """A knowledge base's uploads ({name, size}) and indexed files ({path, status, chunks, error, size})."""

    uploads: list[dict[str, Any]]
    indexed: list[dict[str, Any]]


class Backend(Protocol):
    """What the commands that run both ways need; a LoreError is the command's failure (exit code 2)."""

    where: str  # "" in-process, " on URL" against a server

    def create_kb(self, name: str, description: str, tenant: str | None) -> KbRow: ...
    def list_kbs(self) -> tuple[list[KbRow], str | None]: ...  # the rows, and a note for stderr
    def delete_kb(self, name: str) -> None: ...
    def list_files(self, kb: str) -> FileListing: ...
    def delete_file(self, kb: str, name: str) -> FileDeletion: ...
    def ingest(self, options: IngestOptions) -> Outcome: ...
    def build(self, options: BuildOptions) -> Built: ...
    def versions(self, kb: str) -> list[VersionRow]: ...
    def activate(self, kb: str, seq: int, reason: str) -> VersionRow: ...
    def rollback(self, kb: str, reason: str) -> VersionRow: ...
    def search(self, options: SearchOptions) -> Found: ...
    def ask(self, options: AskOptions) -> Events: ...
    def close(self) -> None: ...


def not_on_server(option: str, why: str) -> LoreError:
    """An option a server cannot take (the command fails with exit code 2 instead of dropping it)."""
    return LoreError(f"{option}: not available against a server ({why}); drop it or run locally")
