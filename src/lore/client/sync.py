"""`LoreClient`: the Lore HTTP API from Python, blocking (httpx)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx

from lore.client import calls
from lore.client.calls import BuildProgress, Call, ProgressReader, UploadProgress
from lore.client.models import (
    Answer,
    AskEvent,
    Document,
    IngestResult,
    KnowledgeBase,
    LoreAPIError,
    Passage,
    SearchResult,
    Session,
    Upload,
    Version,
)

T = TypeVar("T")


class LoreClient:
    """A `lore serve` service: `LoreClient("http://127.0.0.1:8000", api_key=KEY)` (or
    LORE_SERVER/LORE_API_KEY).

    Every method raises `LoreAPIError` (with the server's status and message) when the server refuses.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url, key = calls.settings_from_env(base_url, api_key)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=calls.headers(key),
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        try:
            response = self._http.request(
                call.method, call.path, json=call.json, params=call.params, files=call.files or None
            )
        except httpx.TransportError as exc:
            raise LoreAPIError(0, f"cannot reach {self.base_url}: {exc or type(exc).__name__}") from exc
        calls.raise_for(response)
        return call.parse(response.json() if response.content else None)

    def _stream(self, call: Call[Any]) -> Iterator[AskEvent]:
        try:
            with self._http.stream(call.method, call.path, json=call.json) as response:
                if not response.is_success:
                    calls.raise_for(response, response.read())
                parser = calls.SseParser()
                for line in response.iter_lines():
                    if (event := parser.feed(line)) is not None:
                        yield event
        except httpx.TransportError as exc:
            raise LoreAPIError(0, f"cannot reach {self.base_url}: {exc or type(exc).__name__}") from exc

    # --- knowledge bases and files ------------------------------------------------------------

    def list_kbs(self) -> list[KnowledgeBase]:
        """The knowledge bases this key can read (or, as an admin, change)."""
        return self._run(calls.list_kbs())

    def get_kb(self, kb: str) -> KnowledgeBase:
        return self._run(calls.get_kb(kb))

    def create_kb(self, name: str, description: str = "") -> KnowledgeBase:
        return self._run(calls.create_kb(name, description))

    def delete_kb(self, kb: str) -> None:
        self._run(calls.delete_kb(kb))

    def upload(
        self, kb: str, paths: list[str | Path], progress: UploadProgress | None = None
    ) -> list[Upload]:
        """Upload files (folders: the files in them); `progress(name, sent, size)` as bytes go out."""
        readers = [ProgressReader(p, progress) for p in calls.local_files(paths)]
        try:
            return self._run(calls.upload(kb, readers))
        finally:
            for r in readers:
                r.close()

    def list_files(self, kb: str) -> dict[str, Any]:
        return self._run(calls.list_files(kb))

    def ingest(
        self,
        kb: str,
        files: list[str] | None = None,
        *,
        paths: list[str] | None = None,
        dataset: str | None = None,
    ) -> IngestResult:
        """Index uploaded `files` (default: every upload) and server `paths` into an unversioned KB."""
        return self._run(calls.ingest(kb, calls.sources(files, paths, dataset)))

    def ingest_url(
        self,
        kb: str,
        url: str,
        *,
        sitemap: bool = False,
        prefix: str | None = None,
        max_pages: int | None = None,
        dataset: str | None = None,
    ) -> IngestResult:
        """Have the server crawl `url` (links under `prefix`), or the sitemap at `url`, and index the pages
        (`max_pages`: the server's default, 100, when None)."""
        return self._run(calls.ingest_url(kb, url, sitemap, prefix, max_pages, dataset))

    def upload_and_ingest(
        self, kb: str, paths: list[str | Path], progress: UploadProgress | None = None
    ) -> IngestResult:
        """Upload local files, then index exactly those."""
        uploaded = self.upload(kb, paths, progress)
        return self.ingest(kb, [u.name for u in uploaded])

    # --- builds and versions ------------------------------------------------------------------

    def build(
        self,
        kb: str,
        files: list[str] | None = None,
        *,
        paths: list[str] | None = None,
        description: str = "",
        activate: bool = False,
        quality_gate: bool = False,
        force: bool = False,
        dataset: str | None = None,
        incremental_from: str = "latest",
        progress: BuildProgress | None = None,
    ) -> IngestResult:
        """Build a new version of exactly these sources (a server job, followed to its end); `progress` gets
        each per-file `status` event."""
        body = {
            **calls.sources(files, paths, dataset),
            "description": description,
            "activate": activate,
            "quality_gate": quality_gate,
            "force": force,
            "incremental_from": incremental_from,
        }
        # the server queues a build as a job (202); its event stream carries the progress and the result
        for event in self._stream(calls.build(kb, body)):
            if event.event in ("end", "error"):
                return calls.finish_build(kb, event)
            if progress is not None:
                progress(event)
        raise LoreAPIError(0, "the build stream ended without an 'end' event")

    def versions(self, kb: str) -> list[Version]:
        return self._run(calls.versions(kb))

    def activate(self, kb: str, seq: int, reason: str = "") -> Version:
        return self._run(calls.activate(kb, seq, reason))

    def rollback(self, kb: str, reason: str = "") -> Version:
        return self._run(calls.rollback(kb, reason))

    def report(self, kb: str, seq: int) -> dict[str, Any]:
        return self._run(calls.report(kb, seq))

    # --- search and answers -------------------------------------------------------------------

    def search(
        self, kb: str, query: str, *, top_k: int = 10, mode: str | None = None, version: int | None = None
    ) -> SearchResult:
        return self._run(calls.search(kb, query, top_k, mode, version))

    def ask_stream(self, question: str, kb: str | None = None, **options: Any) -> Iterator[AskEvent]:
        """The answer's events as they arrive (`start`, `status`, `token`, `end`/`error`).

        Options: scenario, session_id, new_session, version, top_k, mode ("fast"/"deep"), rewrite, source.
        """
        yield from self._stream(calls.ask({"kb": kb, "question": question, **options}))

    def ask(self, question: str, kb: str | None = None, **options: Any) -> Answer:
        """The whole answer with its citations; a refusal is an `Answer` with `refused=True`."""
        return calls.finish_ask(self.ask_stream(question, kb, **options))

    def get_passage(self, kb: str, chunk_id: str, version: int | None = None) -> Passage:
        return self._run(calls.get_passage(kb, chunk_id, version))

    def get_document(self, kb: str, file: str, version: int | None = None) -> Document:
        return self._run(calls.get_document(kb, file, version))

    # --- sessions and feedback ----------------------------------------------------------------

    def sessions(self, kb: str | None = None) -> list[Session]:
        return self._run(calls.list_sessions(kb))

    def session(self, session_id: str) -> Session:
        return self._run(calls.get_session(session_id))

    def delete_session(self, session_id: str) -> None:
        self._run(calls.delete_session(session_id))

    def feedback(self, trace_id: str, rating: int, note: str = "") -> dict[str, Any]:
        """Thumbs up (1) or down (-1) on an answer, by its trace id."""
        return self._run(calls.feedback(trace_id, rating, note))
