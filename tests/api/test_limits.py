"""Issue 12 findings 9 and 10 against the real app: bad Unicode, huge numbers and oversized input are 4xx.

Lone surrogates, invalid UTF-8, 2^63 version numbers and binary WebSocket frames used to give 500s or
drop the socket; a 1 MB question was echoed and stored; uploads without Content-Length passed the cap;
a DOCX inflating to 300 MB was parsed on /preview.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pymupdf
import pytest
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.storage.layout import uploads_key
from tests.api.conftest import Keys, LiveServer, auth, sse_events
from tests.conftest import EXAMPLES

BIG = 2**63
SURROGATE_BODIES = [  # raw JSON text: "\ud800" is a valid JSON escape, but not valid Unicode text
    ("/api/ask", '{"kb": "hb", "question": "\\ud800 refund"}'),
    ("/api/ask", '{"kb": "\\udc00", "question": "refund"}'),
    ("/api/search", '{"kb": "hb", "query": "refund \\udfff"}'),
    ("/api/search", '{"kb": "hb", "query": "refund", "\\ud800": 1}'),
    ("/api/feedback", '{"trace_id": "\\ud800", "rating": 1}'),
    ("/api/kbs", '{"name": "uni", "description": "\\ud800"}'),
    ("/v1/chat/completions", '{"model": "hb", "messages": [{"role": "user", "content": "\\ud800"}]}'),
]


@pytest.mark.parametrize(("path", "raw"), SURROGATE_BODIES)
def test_lone_surrogates_are_422(client: TestClient, keys: Keys, path: str, raw: str) -> None:
    r = client.post(
        path, content=raw.encode(), headers={**auth(keys.admin), "Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    body = r.json()
    message = body["error"]["message"] if path.startswith("/v1/") else body["detail"]
    assert "surrogate" in message


def test_nul_characters_are_422(client: TestClient, keys: Keys) -> None:
    headers = {**auth(keys.admin), "Content-Type": "application/json"}
    for path, raw in [
        ("/api/search", '{"kb": "hb", "query": "a\\u0000b"}'),
        ("/api/feedback", '{"trace_id": "t\\u0000", "rating": 1}'),
        ("/api/kbs/hb/ingest", '{"paths": ["\\u0000"]}'),
    ]:
        r = client.post(path, content=raw.encode(), headers=headers)
        assert r.status_code == 422 and "NUL" in r.json()["detail"], (path, r.text)
    for path in ["/api/traces/a%00b", "/api/sessions?kb=a%00"]:
        r = client.get(path, headers=headers)
        assert r.status_code == 422 and "NUL" in r.json()["detail"], (path, r.text)


def test_invalid_utf8_is_422_and_surrogate_pairs_still_work(client: TestClient, keys: Keys) -> None:
    r = client.post(
        "/api/search",
        content=b'{"kb": "hb", "query": "refund \xff\xfe"}',
        headers={**auth(keys.staff), "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and "UTF-8" in r.json()["detail"]
    # A pair of surrogate escapes is one real character (an emoji): accepted.
    r = client.post(
        "/api/search",
        content=b'{"kb": "hb", "query": "\\ud83d\\ude00 refund window"}',
        headers={**auth(keys.staff), "Content-Type": "application/json"},
    )
    assert r.status_code == 200 and r.json()["query"].startswith("\U0001f600")


def test_huge_integers_are_422(client: TestClient, keys: Keys) -> None:
    admin = auth(keys.admin)
    calls = [
        ("POST", "/api/ask", {"kb": "hb", "question": "refund window", "version": BIG}),
        ("POST", "/api/search", {"kb": "hb", "query": "refund", "version": BIG}),
        ("POST", f"/api/kbs/hb/versions/{BIG}/activate", None),
        ("GET", f"/api/kbs/hb/versions/{BIG}/report", None),
        ("GET", f"/api/kbs/hb/diff?base=1&candidate={BIG}", None),
        ("POST", "/api/kbs/hb/chunks", {"file": "a.md", "chunks": [{"text": "x", "page": BIG}]}),
        ("POST", "/api/search", {"kb": "hb", "query": "refund", "top_k": 10**9}),
    ]
    for method, path, body in calls:
        r = client.request(method, path, json=body, headers=admin)
        assert r.status_code == 422, (path, r.status_code, r.text)


def test_long_question_is_refused_before_anything_streams(client: TestClient, lore: Lore, keys: Keys) -> None:
    question = "年假" * 500_000  # 1,000,000 characters
    before = len(lore.catalog.list_traces("default", None, 500, None))
    for path, body in [
        ("/api/ask", {"kb": "hb", "question": question}),
        ("/v1/chat/completions", {"model": "hb", "messages": [{"role": "user", "content": question}]}),
        (
            "/v1/chat/completions",
            {
                "model": "hb",
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "user", "content": "年假有几天"},
                ],
            },
        ),
        ("/api/search", {"kb": "hb", "query": question}),
    ]:
        r = client.post(path, json=body, headers=auth(keys.staff))
        assert r.status_code == 422, (path, r.status_code)
        assert len(r.content) < 500 and "limit 2000" in r.text  # named, never echoed
    assert len(lore.catalog.list_traces("default", None, 500, None)) == before  # nothing stored
    # Validation errors name the field, never echo the input (here: no KB named, a 1 MB question).
    for path, body in [
        ("/api/ask", {"question": question}),
        ("/api/search", {"kb": question, "query": 1}),
        ("/v1/chat/completions", {"model": "hb", "messages": [{"role": "nobody", "content": question}]}),
        ("/api/search", {"kb": question, "query": "refund"}),
    ]:
        r = client.post(path, json=body, headers=auth(keys.staff))
        assert r.status_code in (404, 422) and len(r.content) < 2000, (path, r.status_code, len(r.content))


def test_websocket_binary_frames_and_bad_text_keep_the_socket(live: LiveServer, keys: Keys) -> None:
    with connect(
        live.url.replace("http", "ws") + "/api/stream", additional_headers=auth(keys.staff), open_timeout=10
    ) as ws:
        ws.send(b'{"kb": "hb", "question": "refund window"}')  # a binary frame
        event = json.loads(ws.recv(timeout=30))
        assert event["event"] == "error" and "text frame" in event["data"]["message"]
        ws.send('{"kb": "hb", "question": "\\ud800"}')
        event = json.loads(ws.recv(timeout=30))
        assert event["event"] == "error" and "surrogate" in event["data"]["message"]
        ws.send(json.dumps({"kb": "hb", "question": "x" * 100_000}))
        event = json.loads(ws.recv(timeout=30))
        assert (
            event["event"] == "error"
            and event["data"]["status"] == 422
            and len(event["data"]["message"]) < 200
        )
        ws.send(json.dumps({"kb": "hb", "question": "报销需要什么材料？"}))  # the socket still answers
        kinds = []
        while not kinds or kinds[-1] not in ("end", "error"):
            kinds.append(json.loads(ws.recv(timeout=60))["event"])
        assert kinds[0] == "start" and kinds[-1] == "end"


# -- size limits with a small configuration, through a real uvicorn ---------------------------------


@pytest.fixture()
def small(tmp_path: Path) -> Iterator[tuple[httpx.Client, Lore]]:
    """A live server with small limits: 1 MB uploads, 20 KB JSON bodies, PDFs of at most 3 pages."""
    lore = Lore(
        load_settings(
            home=tmp_path / "home",
            api={"max_upload_mb": 1, "max_body_mb": 0.02, "rate_limit_per_minute": 0},
            ingest={"max_pdf_pages": 3},
        )
    )
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    lore.create_kb("lim")
    with (
        LiveServer(create_app(lore)) as server,
        httpx.Client(base_url=server.url, headers=auth(secret), timeout=120) as http,
    ):
        yield http, lore
    lore.close()


def _chunked(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    """A body sent in pieces without Content-Length (Transfer-Encoding: chunked)."""
    for i in range(0, len(data), size):
        yield data[i : i + size]


def _multipart(*files: tuple[str, bytes]) -> tuple[bytes, str]:
    request = httpx.Request("POST", "http://x/", files=[("file", f) for f in files])
    return request.read(), request.headers["content-type"]


def test_json_body_cap_counts_bytes_whatever_the_headers(small: tuple[httpx.Client, Lore]) -> None:
    http, _ = small
    body = json.dumps({"name": "big", "description": "d" * 30_000}).encode()
    for content in (body, _chunked(body, 4096)):
        r = http.post("/api/kbs", content=content, headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and "limit of 0.02 MB" in r.json()["detail"]


def test_upload_cap_counts_streamed_bytes(small: tuple[httpx.Client, Lore]) -> None:
    http, lore = small
    part = b"# notes\n\n" + b"a line of text\n" * 40_000  # 0.6 MB each: under the 1 MB per-file limit
    body, ctype = _multipart(("a.md", part), ("b.md", part))
    r = http.post("/api/kbs/lim/files", content=_chunked(body), headers={"Content-Type": ctype})
    assert r.status_code == 413 and "upload request" in r.json()["detail"]
    folder = lore.storage.path(uploads_key(lore.catalog.get_kb("lim")))
    assert not [p for p in folder.iterdir() if not p.name.startswith(".owners")] if folder.exists() else True
    body, ctype = _multipart(("a.md", part))
    r = http.post("/api/kbs/lim/files", content=_chunked(body), headers={"Content-Type": ctype})
    assert r.status_code == 201 and r.json()["files"] == [{"name": "a.md", "size": len(part)}]


def zip_bomb(inflated_mb: int) -> bytes:
    """A real DOCX (the sample travel policy) with one extra part of `inflated_mb` MB of zeros."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(EXAMPLES / "travel_policy.docx") as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        with dst.open("word/media/padding.bin", "w", force_zip64=True) as pad:
            block = bytes(1 << 20)
            for _ in range(inflated_mb):
                pad.write(block)
    return out.getvalue()


def test_zip_bomb_is_refused_before_parsing(small: tuple[httpx.Client, Lore]) -> None:
    http, _ = small
    bomb = zip_bomb(300)
    assert len(bomb) < 600_000  # a few hundred KB on the wire
    r = http.post("/api/kbs/lim/files", files=[("file", ("bomb.docx", bomb))])
    assert r.status_code == 201
    r = http.post("/api/kbs/lim/preview", json={"file": "bomb.docx"})
    assert r.status_code == 422 and "decompresses to 315.4 MB, limit 200 MB" in r.json()["detail"]
    r = http.post("/api/kbs/lim/ingest", json={"files": ["bomb.docx"]})
    assert r.status_code == 200
    [result] = r.json()["files"]
    assert result["status"] == "too_large" and "decompresses to" in result["error"]


def test_pdf_page_limit(small: tuple[httpx.Client, Lore]) -> None:
    http, _ = small
    doc = pymupdf.open()
    for i in range(5):
        doc.new_page().insert_text((72, 72), f"Page {i + 1} of the travel rules: hotels up to 500 per night.")
    pdf = doc.tobytes()
    http.post("/api/kbs/lim/files", files=[("file", ("long.pdf", pdf))]).raise_for_status()
    r = http.post("/api/kbs/lim/preview", json={"file": "long.pdf"})
    assert r.status_code == 422 and "PDF has 5 pages, limit 3" in r.json()["detail"]
    [result] = http.post("/api/kbs/lim/ingest", json={"files": ["long.pdf"]}).json()["files"]
    assert result["status"] == "too_large" and "5 pages" in result["error"]


def test_answers_still_work_under_the_limits(small: tuple[httpx.Client, Lore]) -> None:
    http, _ = small
    http.post(
        "/api/kbs/lim/files",
        files=[("file", ("travel_policy.docx", (EXAMPLES / "travel_policy.docx").read_bytes()))],
    )
    assert http.post("/api/kbs/lim/ingest", json={"files": ["travel_policy.docx"]}).json()["counts"] == {
        "ingested": 1
    }
    events = sse_events(http.post("/api/ask", json={"kb": "lim", "question": "出差住宿标准是多少？"}).text)
    assert events[-1][0] == "end" and events[-1][1]["citations"]
