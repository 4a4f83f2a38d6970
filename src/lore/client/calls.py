"""Each API call once: its arguments (the clients' method signatures and docstrings), its request and how its
reply is read. `LoreClient` runs them blocking, `AsyncLoreClient` under asyncio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lore.client import models
from lore.client.models import AskEvent, LoreAPIError
from lore.client.wire import Call, Events, Flow

UploadProgress = Callable[[str, int, int], None]  # (file name, bytes sent, file size)
BuildProgress = Callable[[AskEvent], None]  # each `status` event of a streamed build or crawl
ENDS = ("end", "error")  # the events that close an answer's or a build's stream


class ProgressReader:
    """A file whose reads report how many bytes went out (the upload's progress)."""

    def __init__(self, path: Path, progress: UploadProgress | None) -> None:
        self.name, self.size, self.sent = path.name, path.stat().st_size, 0
        self._fh = path.open("rb")
        self._progress = progress

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self.sent += len(data)
        if self._progress is not None and (data or self.size == 0):
            self._progress(self.name, self.sent, self.size)
        return data

    def close(self) -> None:
        self._fh.close()


def local_files(paths: list[str | Path]) -> list[Path]:
    """Files, with folders expanded to the files inside them (hidden ones left out)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            out.append(p)
        else:
            raise LoreAPIError(0, f"{p}: no such file or folder")
    return out


def kb_path(kb: str, rest: str = "") -> str:
    return f"/api/kbs/{quote(kb, safe='')}{rest}"


def _sources(files: list[str] | None, paths: list[str] | None, dataset: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"files": files, "paths": paths or []}
    if dataset is not None:
        body["dataset"] = dataset
    return body


def _raw(data: Any) -> Any:
    return data


def _nothing(_data: Any) -> None:
    return None


def _uploads(data: dict[str, Any]) -> list[models.Upload]:
    return [models.Upload.from_json(f) for f in data["files"]]


# --- knowledge bases and files ----------------------------------------------------------------------


def list_kbs() -> Call[list[models.KnowledgeBase]]:
    """The knowledge bases this key can read (or, as an admin, change)."""
    return Call("GET", "/api/kbs", lambda d: [models.KnowledgeBase.from_json(k) for k in d])


def me() -> Call[dict[str, Any]]:
    """The caller's key: its tenant, name, roles, datasets and the actions it may take."""
    return Call("GET", "/api/me", _raw)


def get_kb(kb: str) -> Call[models.KnowledgeBase]:
    return Call("GET", kb_path(kb), models.KnowledgeBase.from_json)


def create_kb(name: str, description: str = "") -> Call[models.KnowledgeBase]:
    body = {"name": name, "description": description}
    return Call("POST", "/api/kbs", models.KnowledgeBase.from_json, json=body)


def delete_kb(kb: str) -> Call[None]:
    return Call("DELETE", kb_path(kb), _nothing)


def upload(
    kb: str, paths: list[str | Path], progress: UploadProgress | None = None
) -> Call[list[models.Upload]]:
    """Upload files (folders: the files in them); `progress(name, sent, size)` as bytes go out."""
    readers = [ProgressReader(p, progress) for p in local_files(paths)]
    files = [("file", (r.name, r, "application/octet-stream")) for r in readers]
    return Call("POST", kb_path(kb, "/files"), _uploads, files=files)


def list_files(kb: str) -> Call[dict[str, Any]]:
    return Call("GET", kb_path(kb, "/files"), _raw)


def delete_file(kb: str, name: str) -> Call[dict[str, Any]]:
    """Delete one of your tenant's files: its upload and, in an unversioned KB, its indexed file (in a
    versioned KB the next build drops it)."""
    return Call("DELETE", kb_path(kb, f"/files/{quote(name, safe='')}"), _raw)


def ingest(
    kb: str, files: list[str] | None = None, *, paths: list[str] | None = None, dataset: str | None = None
) -> Call[models.IngestResult]:
    """Index uploaded `files` (default: every upload) and server `paths` into an unversioned KB."""
    body = _sources(files, paths, dataset)
    return Call("POST", kb_path(kb, "/ingest"), models.IngestResult.from_json, json=body)


def ingest_url(
    kb: str,
    url: str,
    *,
    sitemap: bool = False,
    prefix: str | None = None,
    max_pages: int | None = None,
    dataset: str | None = None,
    progress: BuildProgress | None = None,
) -> Flow[models.IngestResult]:
    """Have the server crawl `url` (links under `prefix`), or the sitemap at `url`, and index the pages
    (`max_pages`: the server's default, 100, when None): a server job, followed to its end; `progress` gets
    each `status` event (a `page` per page fetched or refused, then the indexing's per-file ones)."""
    body: dict[str, Any] = {"url": url, "sitemap": sitemap, "prefix": prefix, "max_pages": max_pages}
    if dataset is not None:
        body["dataset"] = dataset
    queued: dict[str, Any] = yield Call("POST", kb_path(kb, "/sources"), _raw, json=body)
    path = kb_path(kb, f"/jobs/{quote(queued['job']['id'], safe='')}/events")
    result: models.IngestResult = yield Call(
        "GET", path, lambda seen: finish_job(kb, seen, "crawl"), events=Events(ENDS, progress)
    )
    return result


def upload_and_ingest(
    kb: str, paths: list[str | Path], progress: UploadProgress | None = None
) -> Flow[models.IngestResult]:
    """Upload local files, then index exactly those."""
    uploaded: list[models.Upload] = yield upload(kb, paths, progress)
    result: models.IngestResult = yield ingest(kb, [u.name for u in uploaded])
    return result


# --- builds and versions ----------------------------------------------------------------------------


def build(
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
    mode: str = "add",
    remove: list[str] | None = None,
    allow_removal: bool = False,
) -> Call[models.IngestResult]:
    """Build a new version from these sources (a server job, followed to its end): `mode` "add" keeps the
    KB's other files but `remove`, "exact" holds only these; `progress` gets each per-file `status` event."""
    body = {
        **_sources(files, paths, dataset),
        "description": description,
        "activate": activate,
        "quality_gate": quality_gate,
        "force": force,
        "incremental_from": incremental_from,
        "mode": mode,
        "remove": remove or [],
        "allow_removal": allow_removal,
    }
    # the server queues a build as a job (202); its event stream carries the progress and the result
    path = kb_path(kb, "/builds/stream")
    return Call("POST", path, lambda seen: finish_build(kb, seen), json=body, events=Events(ENDS, progress))


def versions(kb: str) -> Call[list[models.Version]]:
    return Call(
        "GET", kb_path(kb, "/versions"), lambda d: [models.Version.from_json(v) for v in d["versions"]]
    )


def activate(kb: str, seq: int, reason: str = "") -> Call[models.Version]:
    path = kb_path(kb, f"/versions/{int(seq)}/activate")
    return Call("POST", path, models.Version.from_json, json={"reason": reason})


def rollback(kb: str, reason: str = "") -> Call[models.Version]:
    return Call("POST", kb_path(kb, "/rollback"), models.Version.from_json, json={"reason": reason})


def report(kb: str, seq: int) -> Call[dict[str, Any]]:
    return Call("GET", kb_path(kb, f"/versions/{int(seq)}/report"), _raw)


# --- search and answers -----------------------------------------------------------------------------


def _search_result(data: dict[str, Any]) -> models.SearchResult:
    hits = [models.Hit.from_json(h) for h in data["hits"]]
    return models.SearchResult(
        data["kb"], data["query"], hits, data.get("version"), data.get("mode"), data.get("rerank")
    )


def search(
    kb: str,
    query: str,
    *,
    top_k: int = 10,
    mode: str | None = None,
    version: int | None = None,
    rerank: bool | None = None,
    recall_k: int | None = None,
    rerank_k: int | None = None,
) -> Call[models.SearchResult]:
    """Hits best first; `rerank`, `recall_k`, `rerank_k` override the server's configuration."""
    body = {"kb": kb, "query": query, "top_k": top_k, "mode": mode, "version": version, "rerank": rerank}
    body |= {"recall_k": recall_k, "rerank_k": rerank_k}
    return Call("POST", "/api/search", _search_result, json={k: v for k, v in body.items() if v is not None})


def ask_stream(question: str, kb: str | None = None, **options: Any) -> Call[models.Answer]:
    """The answer's events as they arrive (`start`, `status`, `token`, `end`/`error`).

    Options: scenario, session_id, new_session, version, top_k, mode ("fast"/"deep"), rewrite, source.
    """
    body = {"kb": kb, "question": question, **options}
    json = {k: v for k, v in body.items() if v is not None}
    return Call("POST", "/api/ask", finish_ask, json=json, events=Events())


def ask(question: str, kb: str | None = None, **options: Any) -> Call[models.Answer]:
    """The whole answer with its citations; a refusal is an `Answer` with `refused=True`."""
    return ask_stream(question, kb, **options)


def finish_ask(events: list[AskEvent]) -> models.Answer:
    """The answer from a question's events: `end` gives it, `error` raises with the server's message.

    The stream is read to its end, so the server has saved the trace and the session's turns on return.
    """
    start: dict[str, Any] = {}
    last: AskEvent | None = None
    for e in events:
        if e.event == "start":
            start = e.data
        elif e.event in ENDS:
            last = e
    if last is None:
        raise LoreAPIError(0, "the answer stream ended without an 'end' event")
    _raise_error(last)
    return models.Answer.from_end(last.data, start)


def finish_build(kb: str, events: list[AskEvent]) -> models.IngestResult:
    """The build's result from its last event (`end`), or its `error` raised."""
    return finish_job(kb, events, "build")


def finish_job(kb: str, events: list[AskEvent], kind: str = "job") -> models.IngestResult:
    """A job's result (a build's or a crawl's) from its last event (`end`), or its `error` raised."""
    if not events or events[-1].event not in ENDS:
        raise LoreAPIError(0, f"the {kind} stream ended without an 'end' event")
    _raise_error(events[-1])
    return models.IngestResult.from_json({"kb": kb, **events[-1].data})


def _raise_error(event: AskEvent) -> None:
    if event.event == "error":
        raise LoreAPIError(int(event.data.get("status", 500)), str(event.data.get("message")))


def get_passage(kb: str, chunk_id: str, version: int | None = None) -> Call[models.Passage]:
    params = {"version": version} if version is not None else None
    return Call(
        "GET", kb_path(kb, f"/passages/{quote(chunk_id, safe='')}"), models.Passage.from_json, params=params
    )


def get_document(kb: str, file: str, version: int | None = None) -> Call[models.Document]:
    params: dict[str, Any] = {"file": file}
    if version is not None:
        params["version"] = version
    return Call("GET", kb_path(kb, "/document"), models.Document.from_json, params=params)


# --- sessions and feedback --------------------------------------------------------------------------


def sessions(kb: str | None = None) -> Call[list[models.Session]]:
    params = {"kb": kb} if kb else None
    return Call("GET", "/api/sessions", lambda d: [models.Session.from_json(s) for s in d], params=params)


def session(session_id: str) -> Call[models.Session]:
    return Call("GET", f"/api/sessions/{quote(session_id, safe='')}", models.Session.from_json)


def delete_session(session_id: str) -> Call[None]:
    return Call("DELETE", f"/api/sessions/{quote(session_id, safe='')}", _nothing)


def feedback(trace_id: str, rating: int, note: str = "") -> Call[dict[str, Any]]:
    """Thumbs up (1) or down (-1) on an answer, by its trace id."""
    body = {"trace_id": trace_id, "rating": rating, "note": note}
    return Call("POST", "/api/feedback", _raw, json=body)
