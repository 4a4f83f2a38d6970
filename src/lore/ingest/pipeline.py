"""Ingestion: files -> loaders -> chunks -> embeddings -> store, recorded in the catalog.

Loading and chunking of the next file runs in a worker thread while the current file is
embedded, so the embedder (the bottleneck on CPU) is kept busy. Each file is committed on its own
(store, then catalog) once all of it is embedded: a stop keeps every finished file and nothing of the
one in progress, and a re-run skips the finished ones.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePosixPath
from typing import Any, Generic, Literal, TypeVar, cast

import numpy as np

from lore.catalog import Catalog, FileRecord, FileStatus, KnowledgeBase
from lore.embed.base import Embedder
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.errors import LoadError, LoadErrorKind, LoreError
from lore.ingest.chunk_factory import chunk_document
from lore.ingest.chunking import Chunker
from lore.ingest.edits import ChunkEdits
from lore.ingest.eta import EtaClock, file_sizes, page_count
from lore.ingest.files import SourceFile, sha256_file
from lore.ingest.loaders import reader_version
from lore.ingest.loaders.limits import FileLimits
from lore.ingest.pictures import BatchPictures
from lore.ingest.tally import FileTally
from lore.lexical import tokenize
from lore.schema import Chunk, LoadedDocument, index_text
from lore.store.base import VectorStore
from lore.text.normalise import normalise
from lore.text.units import stable_id, text_units


@dataclass
class FileResult:
    """What happened to one file: status, counts and, for failures, the reason."""

    name: str
    status: str  # ingested | skipped | failed | unsupported | empty | too_large
    chunks: int = 0
    documents: int = 0
    ocr_pages: int = 0
    error: str | None = None
    encoding: str | None = None
    table_rows: int = 0
    # For a build's quality report only (empty on a plain ingest):
    chunk_units: list[int] = field(default_factory=list)  # size of each chunk
    chunk_hashes: list[str] = field(default_factory=list)  # normalised-text hashes, to find duplicates
    note: str | None = None  # e.g. why an unchanged file was re-embedded


@dataclass
class IngestReport(FileTally[FileResult]):
    """The outcome of one ingest call."""

    files: list[FileResult] = field(default_factory=list)
    stopped: bool = False  # the caller asked to stop: `files` are the finished ones, all committed
    unfinished: list[str] = field(default_factory=list)  # not ingested, the one in progress first


@dataclass
class _Prepared:
    source: SourceFile
    sha256: str
    size: int
    mtime: float
    chunks: list[Chunk] = field(default_factory=list)
    index_texts: list[str] = field(default_factory=list)
    documents: list[LoadedDocument] = field(default_factory=list)
    result: FileResult | None = None  # set when the file is done before embedding
    note: str | None = None  # why an unchanged file is indexed again


class Progress:
    """Callbacks for long work; the CLI draws Rich bars from them, the API sends status events."""

    # `file_reading`: loading (and any OCR) of a file begins, in a read-ahead thread; `file_started`: it is
    # chunked and its embedding begins. `pages`: the pages, slides or sheets of the file (None: none);
    # `eta_s`: the time left, once known.
    def file_reading(self, name: str) -> None: ...
    def file_started(self, name: str, chunks: int, pages: int | None = None) -> None: ...
    def embedded(self, n: int, eta_s: float | None = None) -> None: ...
    def file_done(self, result: FileResult, eta_s: float | None = None) -> None: ...

    def stop_requested(self) -> bool:
        """True once the caller wants the run to stop (checked between files and embedding batches)."""
        return False


class Interrupted(LoreError):
    """A versioned build was asked to stop: its version would miss files, so the build fails instead."""


class _Stopped(Exception):
    """Raised inside a run when its progress asks to stop."""


# A file's status from why it could not be read; encrypted, corrupt and no-text files are "failed".
FailStatus = Literal["failed", "empty", "unsupported", "too_large"]
_STATUS: dict[LoadErrorKind, FailStatus] = {
    LoadErrorKind.UNSUPPORTED: "unsupported",
    LoadErrorKind.EMPTY: "empty",
    LoadErrorKind.TOO_LARGE: "too_large",
}

ChunkMetadata = Callable[[SourceFile], dict[str, Any]]
"""Chunk fields (tenant_id, source, ...) for a file's chunks, overriding the defaults."""
CustomChunks = Callable[[SourceFile, str, "int | None"], "list[Chunk] | None"]
"""(file, sha256, seq) -> the file's chunks made by the caller (e.g. FAQ rows), or None to load it."""


class IngestPipeline:
    """Ingests files into one knowledge base (its store, embedder and catalog rows)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        catalog: Catalog,
        store: VectorStore,
        embedder: Embedder,
        chunker: Chunker,
        cache: EmbeddingCache | None,
        *,
        max_file_bytes: int,
        ocr: bool = True,
        limits: FileLimits | None = None,
        progress: Progress | None = None,
        seq: int | None = None,
        force: bool = False,
        chunk_metadata: ChunkMetadata | None = None,
        custom_chunks: CustomChunks | None = None,
        edits: ChunkEdits | None = None,
    ) -> None:
        self.kb, self.catalog, self.store, self.embedder = kb, catalog, store, embedder
        self.chunk_metadata, self.custom_chunks = chunk_metadata, custom_chunks
        self.edits = edits
        self.chunker, self.cache, self.max_file_bytes = chunker, cache, max_file_bytes
        self.ocr, self.limits, self.seq, self.force = ocr, limits, seq, force
        self.progress = progress or Progress()
        self.eta = EtaClock([])
        self.pictures = BatchPictures([])

    def run(self, files: list[SourceFile]) -> IngestReport:
        """Ingest every file; a bad file is reported and the rest go on.

        When `progress.stop_requested()`, the run returns at once with the files finished so far
        (`report.stopped`); a versioned build raises `Interrupted` instead.
        """
        report, self.eta = IngestReport(), EtaClock(file_sizes(files))
        self.pictures = BatchPictures(
            files, self.chunk_metadata or _no_metadata, ocr=self.ocr, limits=self.limits
        )
        stopping = self.progress.stop_requested
        try:
            for prepared in _prefetch(self._prepare, files, stopping):
                if prepared.result is None and stopping():
                    raise _Stopped
                self.eta.reached(prepared.size, 0 if prepared.result else len(prepared.chunks))
                result = prepared.result or self._write(prepared)
                report.files.append(result)
                self.progress.file_done(result, eta_s=self.eta.done())
        except _Stopped:
            done = {f.name for f in report.files}
            report.stopped, report.unfinished = True, [f.name for f in files if f.name not in done]
            if self.seq is not None:
                raise Interrupted(
                    f"build of version {self.seq} stopped before {report.unfinished[0]!r}"
                ) from None
        return report

    def _prepare(self, source: SourceFile) -> _Prepared:
        try:
            stat = source.path.stat()
        except FileNotFoundError:
            return self._fail(_Prepared(source, "", 0, 0.0), "failed", "the file vanished before it was read")
        prepared = _Prepared(source, "", stat.st_size, stat.st_mtime)
        if stat.st_size > self.max_file_bytes:
            limit = self.max_file_bytes / 1e6
            return self._fail(
                prepared, "too_large", f"file is {stat.st_size / 1e6:.1f} MB, limit {limit:g} MB"
            )
        try:
            prepared.sha256 = sha256_file(source.path)
        except FileNotFoundError:
            return self._fail(prepared, "failed", "the file vanished before it was read")
        known = self.catalog.get_file(self.kb.id, source.name)
        edited = self.edits is not None and self.edits.pending(source.name)  # re-chunk to apply the edit
        if (
            known
            and known.status == "ingested"
            and known.sha256 == prepared.sha256
            and not (self.force or edited)
        ):
            outdated = self._outdated(known, source.name)
            if not outdated:
                prepared.result = FileResult(source.name, "skipped", known.chunk_count, known.document_count)
                return prepared
            prepared.note = outdated
        if self.custom_chunks is not None:
            custom = self.custom_chunks(source, prepared.sha256, self.seq)
            if custom is not None:
                prepared.chunks, prepared.index_texts = custom, [index_text(c) for c in custom]
                return prepared if custom else self._fail(prepared, "empty", "no entries to index")
        self.progress.file_reading(source.name)
        try:
            prepared.documents = self.pictures.load(source.path)
        except LoadError as exc:
            return self._fail(prepared, _STATUS.get(exc.kind, "failed"), exc.reason)
        if _changed_since(source, stat.st_size, stat.st_mtime):
            return self._fail(prepared, "failed", "the file changed while it was being read; build again")
        self._chunk(prepared)
        if not prepared.chunks:
            return self._fail(prepared, "empty", "no text to index after chunking")
        return prepared

    def _outdated(self, known: FileRecord, name: str) -> str | None:
        """Why an unchanged file must be re-indexed (its chunk schema, reader or embedding model changed)."""
        schema, model = self._file_schema(name), self.embedder.model_id
        if known.chunk_schema != schema:
            old, _, old_reader = (known.chunk_schema or "").partition("+")
            if old == self.chunker.params.schema:
                reader = schema.partition("+")[2]
                return f"re-read: its reader changed ({old_reader or 'first version'} -> {reader or 'none'})"
            return f"re-chunked: chunk schema {known.chunk_schema} -> {schema}"
        if known.embedding_model != model:
            return f"re-embedded: embedding model {known.embedding_model} -> {model}"
        return None

    def _file_schema(self, name: str) -> str:
        """The chunk schema, with the version of the reader of the file's type when it declares one."""
        reader = reader_version(PurePosixPath(name))
        return f"{self.chunker.params.schema}+{reader}" if reader else self.chunker.params.schema

    def _chunk(self, p: _Prepared) -> None:
        meta = self.chunk_metadata(p.source) if self.chunk_metadata else {}
        for doc in p.documents:
            p.chunks += chunk_document(
                doc,
                self.chunker,
                kb_id=self.kb.id,
                file_name=p.source.name,
                file_sha256=p.sha256,
                embedding_model=self.embedder.model_id,
                seq=self.seq,
                metadata=meta,
            )
        if self.edits is not None:
            p.chunks = self.edits.apply(p.source.name, p.chunks)
        p.index_texts = [index_text(c) for c in p.chunks]

    def _embed(self, p: _Prepared) -> tuple[np.ndarray, list[list[str]]]:
        """The file's vectors and BM25 tokens, made in a worker thread: a stop does not wait for a batch."""
        stopping = self.progress.stop_requested

        def on_batch(n: int) -> None:
            self.progress.embedded(n, eta_s=self.eta.embedded(n))
            if stopping():  # the worker ends here; the batches done are in the embedding cache
                raise _Stopped

        def work() -> tuple[np.ndarray, list[list[str]]]:
            vectors = embed_texts(self.embedder, p.index_texts, "passage", self.cache, on_batch)
            return vectors, [tokenize(t) for t in p.index_texts]

        return _Job(work).wait(stopping)

    def _write(self, p: _Prepared) -> FileResult:
        self.progress.file_started(p.source.name, len(p.chunks), pages=page_count(p.documents))
        vectors, tokens = self._embed(p)
        # From here on no stop is checked: the store, then the catalog, get the whole file.
        known = self.catalog.get_file(self.kb.id, p.source.name)
        new_ids = {c.chunk_id for c in p.chunks}
        self.store.upsert(p.chunks, vectors, tokens)
        if known is not None:
            stale = [c for c in self.catalog.file_chunk_ids(known.id) if c not in new_ids]
            if stale and self.seq:
                self.store.expire(stale, self.seq)  # older versions keep seeing them
            elif stale:
                self.store.delete(stale)
        ocr_pages = sum(len(d.ocr_pages) for d in p.documents)
        encoding = next((d.encoding for d in p.documents if d.encoding), None)
        with self.catalog.transaction():
            record = self.catalog.upsert_file(
                self.kb.id,
                p.source.name,
                sha256=p.sha256,
                size=p.size,
                mtime=p.mtime,
                status="ingested",
                chunk_count=len(p.chunks),
                document_count=len(p.documents),
                ocr_pages=ocr_pages,
                encoding=encoding,
                chunk_schema=self._file_schema(p.source.name),
                embedding_model=self.embedder.model_id,
            )
            self.catalog.set_file_chunks(
                record.id, [(c.chunk_id, c.chunk_index, c.parent_id, c.document_id) for c in p.chunks]
            )
            self.catalog.claim_files(self.kb.id, [p.source.name], p.chunks[0].tenant_id)
            if self.edits is not None and self.edits.pending(p.source.name):  # with the file's rows
                self.edits.mark_applied(p.source.name, self.seq)
        return FileResult(
            p.source.name,
            "ingested",
            len(p.chunks),
            len(p.documents),
            ocr_pages,
            encoding=encoding,
            table_rows=sum(c.source_type == "table_row" for c in p.chunks),
            # Only a versioned build makes a quality report; a plain ingest skips its per-chunk data.
            chunk_units=[text_units(c.text) for c in p.chunks] if self.seq else [],
            chunk_hashes=[stable_id(normalise(c.text, width=False)) for c in p.chunks] if self.seq else [],
            note=p.note,
        )

    def _fail(self, p: _Prepared, status: FailStatus, reason: str) -> _Prepared:
        # Only the catalog row of this file changes; chunks already stored for it stay searchable.
        known = self.catalog.get_file(self.kb.id, p.source.name)
        if known is None or known.status != "ingested":
            meta = self.chunk_metadata(p.source) if self.chunk_metadata else {}
            with self.catalog.transaction():
                self.catalog.upsert_file(
                    self.kb.id,
                    p.source.name,
                    sha256=p.sha256,
                    size=p.size,
                    mtime=p.mtime,
                    status=_catalog_status(status),
                    error=reason,
                )
                self.catalog.claim_files(self.kb.id, [p.source.name], meta.get("tenant_id", "default"))
        p.result = FileResult(p.source.name, status, error=reason)
        return p


def _no_metadata(_source: SourceFile) -> dict[str, Any]:
    return {}


def _changed_since(source: SourceFile, size: int, mtime: float) -> bool:
    try:
        now = source.path.stat()
    except FileNotFoundError:
        return True
    return (now.st_size, now.st_mtime) != (size, mtime)


def _catalog_status(status: FailStatus) -> FileStatus:
    return "failed" if status == "too_large" else status


_T = TypeVar("_T")
_POLL_S = 0.1  # how often a wait for a worker checks for a stop


class _Job(Generic[_T]):
    """fn() in a daemon thread with the caller's context; neither a stop nor the process's exit waits
    for it (a PDF being parsed, a batch inside the embedding engine)."""

    def __init__(self, fn: Callable[[], _T]) -> None:
        self._done = threading.Event()
        self._value: _T | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        threading.Thread(target=self._run, args=(context, fn), name="lore-ingest", daemon=True).start()

    def _run(self, context: contextvars.Context, fn: Callable[[], _T]) -> None:
        try:
            self._value = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self._error = exc
        finally:
            self._done.set()

    def wait(self, stopping: Callable[[], bool]) -> _T:
        """fn's result (or its exception); raises _Stopped if a stop is asked while waiting."""
        while not self._done.wait(_POLL_S):
            if stopping():
                raise _Stopped
        if self._error is not None:
            raise self._error
        return cast(_T, self._value)  # set by the thread, which raised otherwise


def _prefetch(
    fn: Callable[[SourceFile], _Prepared], items: list[SourceFile], stopping: Callable[[], bool]
) -> Iterator[_Prepared]:
    """Yield fn(item) in order while computing the next item in a worker thread."""
    if not items:
        return
    pending = _Job(lambda: fn(items[0]))
    for nxt in items[1:]:
        current = pending.wait(stopping)
        pending = _Job(partial(fn, nxt))
        yield current
    yield pending.wait(stopping)
