"""A build's progress events carry each file's pages (a PDF's, none for Markdown) and, once a file is done
and work is left, the build's time left (`eta_s`) as the server estimates it."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, sse_events
from tests.conftest import SHARED

PAPER = SHARED / "fixtures" / "documents" / "unstructured_layout-parser-paper-fast.pdf"  # 2 pages of text


def test_a_build_streams_pages_per_file_and_its_time_left(tmp_path: Path) -> None:
    lore = Lore(
        load_settings(home=tmp_path / "home", ingest={"ocr": False}, api={"rate_limit_per_minute": 0})
    )
    _, admin = lore.catalog.create_api_key("default", ["admin"])
    try:
        with TestClient(create_app(lore), headers=auth(admin)) as client:
            assert client.post("/api/kbs", json={"name": "papers"}).status_code == 201
            notes = b"# Notes\n\nLayoutParser is a toolkit for document image analysis.\n"
            files = [("file", ("a-notes.md", notes)), ("file", ("paper.pdf", PAPER.read_bytes()))]
            assert client.post("/api/kbs/papers/files", files=files).status_code == 201
            r = client.post("/api/kbs/papers/builds/stream", json={"activate": True})
            assert r.status_code == 200, r.text
            events = sse_events(r.text)
    finally:
        lore.close()
    assert events[-1][0] == "end", events[-1]
    status = [d for k, d in events if k == "status"]
    started = {d["file"]: d for d in status if d["stage"] == "file"}
    assert started["paper.pdf"]["pages"] == 2 and started["paper.pdf"]["chunks"] > 0
    assert "pages" not in started["a-notes.md"]  # a file without pages
    # Each file says when its reading begins (before it is chunked), so a long parse is seen to start.
    assert [d["file"] for d in status if d["stage"] == "reading"] == ["a-notes.md", "paper.pdf"]
    done = [d for d in status if d["stage"] == "file_done"]
    assert [d["file"] for d in done] == ["a-notes.md", "paper.pdf"]
    # After the first file the PDF's bytes are left: an estimate; after the last nothing is left.
    assert isinstance(done[0]["eta_s"], float) and done[0]["eta_s"] >= 0, done[0]
    assert "eta_s" not in done[1]
    assert all(d["eta_s"] >= 0 for d in status if "eta_s" in d)
