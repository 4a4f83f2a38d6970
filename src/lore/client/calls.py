"""What each API call sends and how its reply is read, shared by the sync and the async client."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from lore.client.models import (
    Answer,
    AskEvent,
    Document,
    Hit,
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
UploadProgress = Callable[[str, int, int], None]  # (file name, bytes sent, file size)
BuildProgress = Callable[[AskEvent], None]  # each `status` event of a streamed build


@dataclass
class Call(Generic[T]):
    """One request and the function that turns its JSON reply into a typed result."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] | None = None
    files: list[tuple[str, tuple[str, IO[bytes], str]]] = field(default_factory=list)


def settings_from_env(base_url: str | None, api_key: str | None) -> tuple[str, str | None]:
    """The server URL and key: arguments first, then LORE_SERVER / LORE_API_KEY."""
    url = base_url or os.environ.get("LORE_SERVER")
    if not url:
        raise LoreAPIError(0, "no server: pass base_url or set LORE_SERVER (e.g. http://127.0.0.1:8000)")
    return url.rstrip("/"), api_key or os.environ.get("LORE_API_KEY") or None


def headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def raise_for(response: httpx.Response, body: bytes | None = None) -> None:
    """A non-2xx reply as LoreAPIError carrying the server's `detail` (or OpenAI-style error message)."""
    if response.is_success:
        return
    raw = body if body is not None else response.content
    try:
        data = json.loads(raw)
        detail = data.get("detail", data.get("error", {}).get("message") if isinstance(data, dict) else data)
    except (ValueError, AttributeError):
        detail = raw.decode("utf-8", "replace").strip() or response.reason_phrase
    message = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
    raise LoreAPIError(
        response.status_code, message, method=response.request.method, url=str(response.request.url)
    )


class SseParser:
    """Server-sent events from lines as they arrive: `event:` then `data:` (JSON)."""

    def __init__(self) -> None:
        self.kind = "message"

    def feed(self, line: str) -> AskEvent | None:
        if line.startswith("event:"):
            self.kind = line[6:].strip()
        elif line.startswith("data:"):
            event = AskEvent(self.kind, json.loads(line[5:].strip()))
            self.kind = "message"
            return event
        return None


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


def _kbs(data: list[dict[str, Any]]) -> list[KnowledgeBase]:
    return [KnowledgeBase.from_json(k) for k in data]


def list_kbs() -> Call[list[KnowledgeBase]]:
    return Call("GET", "/api/kbs", _kbs)


def get_kb(kb: str) -> Call[KnowledgeBase]:
    return Call("GET", kb_path(kb), KnowledgeBase.from_json)


def create_kb(name: str, description: str) -> Call[KnowledgeBase]:
    return Call("POST", "/api/kbs", KnowledgeBase.from_json, json={"name": name, "description": description})


def delete_kb(kb: str) -> Call[None]:
    return Call("DELETE", kb_path(kb), lambda _: None)


def upload(kb: str, readers: list[ProgressReader]) -> Call[list[Upload]]:
    files = [("file", (r.name, r, "application/octet-stream")) for r in readers]
    return Call(
        "POST", kb_path(kb, "/files"), lambda d: [Upload.from_json(f) for f in d["files"]], files=files
    )  # type: ignore[arg-type]


def list_files(kb: str) -> Call[dict[str, Any]]:
    return Call("GET", kb_path(kb, "/files"), lambda d: d)


def sources(files: list[str] | None, paths: list[str] | None, dataset: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"files": files, "paths": paths or []}
    if dataset is not None:
        body["dataset"] = dataset
    return body


def ingest(kb: str, body: dict[str, Any]) -> Call[IngestResult]:
    return Call("POST", kb_path(kb, "/ingest"), IngestResult.from_json, json=body)


def ingest_url(
    kb: str, url: str, sitemap: bool, prefix: str | None, max_pages: int | None, dataset: str | None
) -> Call[IngestResult]:
    """Web pages crawled by the server (inside its `api.web_sources`) and indexed."""
    body: dict[str, Any] = {"url": url, "sitemap": sitemap, "prefix": prefix, "max_pages": max_pages}
    if dataset is not None:
        body["dataset"] = dataset
    return Call("POST", kb_path(kb, "/sources"), IngestResult.from_json, json=body)


def build(kb: str, body: dict[str, Any]) -> Call[IngestResult]:
    """A build, queued as a job whose events (progress, then the result) stream back."""
    return Call("POST", kb_path(kb, "/builds/stream"), IngestResult.from_json, json=body)


def versions(kb: str) -> Call[list[Version]]:
    return Call("GET", kb_path(kb, "/versions"), lambda d: [Version.from_json(v) for v in d["versions"]])


def activate(kb: str, seq: int, reason: str) -> Call[Version]:
    return Call(
        "POST", kb_path(kb, f"/versions/{int(seq)}/activate"), Version.from_json, json={"reason": reason}
    )


def rollback(kb: str, reason: str) -> Call[Version]:
    return Call("POST", kb_path(kb, "/rollback"), Version.from_json, json={"reason": reason})


def report(kb: str, seq: int) -> Call[dict[str, Any]]:
    return Call("GET", kb_path(kb, f"/versions/{int(seq)}/report"), lambda d: d)


def _search_result(data: dict[str, Any]) -> SearchResult:
    return SearchResult(
        data["kb"], data["query"], [Hit.from_json(h) for h in data["hits"]], data.get("version")
    )


def search(kb: str, query: str, top_k: int, mode: str | None, version: int | None) -> Call[SearchResult]:
    body = {"kb": kb, "query": query, "top_k": top_k, "mode": mode, "version": version}
    return Call("POST", "/api/search", _search_result, json={k: v for k, v in body.items() if v is not None})


def ask(body: dict[str, Any]) -> Call[Answer]:
    return Call("POST", "/api/ask", lambda d: d, json={k: v for k, v in body.items() if v is not None})


def finish_ask(events: Iterator[AskEvent] | list[AskEvent]) -> Answer:
    """The answer from a question's events: `end` gives it, `error` raises with the server's message.

    The stream is read to its end, so the server has saved the trace and the session's turns on return.
    """
    start: dict[str, Any] = {}
    last: AskEvent | None = None
    for e in events:
        if e.event == "start":
            start = e.data
        elif e.event in ("end", "error"):
            last = e
    if last is None:
        raise LoreAPIError(0, "the answer stream ended without an 'end' event")
    if last.event == "error":
        raise LoreAPIError(int(last.data.get("status", 500)), str(last.data.get("message")))
    return Answer.from_end(last.data, start)


def finish_build(kb: str, event: AskEvent) -> IngestResult:
    if event.event == "error":
        raise LoreAPIError(int(event.data.get("status", 500)), str(event.data.get("message")))
    return IngestResult.from_json({"kb": kb, **event.data})


def list_sessions(kb: str | None) -> Call[list[Session]]:
    return Call(
        "GET", "/api/sessions", lambda d: [Session.from_json(s) for s in d], params={"kb": kb} if kb else None
    )


def get_session(session_id: str) -> Call[Session]:
    return Call("GET", f"/api/sessions/{quote(session_id, safe='')}", Session.from_json)


def delete_session(session_id: str) -> Call[None]:
    return Call("DELETE", f"/api/sessions/{quote(session_id, safe='')}", lambda _: None)


def feedback(trace_id: str, rating: int, note: str) -> Call[dict[str, Any]]:
    return Call(
        "POST", "/api/feedback", lambda d: d, json={"trace_id": trace_id, "rating": rating, "note": note}
    )


def get_passage(kb: str, chunk_id: str, version: int | None) -> Call[Passage]:
    return Call(
        "GET",
        kb_path(kb, f"/passages/{quote(chunk_id, safe='')}"),
        Passage.from_json,
        params={"version": version} if version is not None else None,
    )


def get_document(kb: str, file: str, version: int | None) -> Call[Document]:
    params: dict[str, Any] = {"file": file}
    if version is not None:
        params["version"] = version
    return Call("GET", kb_path(kb, "/document"), Document.from_json, params=params)
