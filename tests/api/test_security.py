"""Issue 12 findings 5 and 11 against the real app: originals are inert downloads, every response says
`nosniff`, the UI runs under a Content-Security-Policy, and internal errors tell nothing but an id."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.app import WEB_DIR
from lore.config import load_settings
from lore.engine import Lore
from lore.storage.layout import uploads_key
from tests.api.conftest import Keys, auth, sse_events

EVIL = b"<html><body><script>localStorage.setItem('pwned', document.cookie + 'x')</script>hi</body></html>"
LEAK = "/srv/secret-scenarios/acme-pricing"  # what a fault's text may hold: a server path, a scenario id


@pytest.fixture()
def own(tmp_path: Path) -> Iterator[tuple[TestClient, Lore, str]]:
    """A fresh home with one admin key and an empty KB `own`; server errors come back as responses."""
    lore = Lore(load_settings(home=tmp_path / "home", api={"rate_limit_per_minute": 0}))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    lore.create_kb("own")
    with TestClient(create_app(lore), headers=auth(secret), raise_server_exceptions=False) as client:
        yield client, lore, secret
    lore.close()


def test_originals_are_sandboxed_downloads(own: tuple[TestClient, Lore, str]) -> None:
    client, _, _ = own
    files = [
        ("file", ("evil.html", EVIL)),
        ("file", ("page.xhtml", EVIL)),
        ("file", ("notes.md", b"# Notes\n\nplain text\n")),
    ]
    assert client.post("/api/kbs/own/files", files=files).status_code == 201
    for name, media in [
        ("evil.html", "application/octet-stream"),
        ("page.xhtml", "application/octet-stream"),
        ("notes.md", "text/markdown"),
    ]:
        r = client.get(f"/api/kbs/own/files/{name}")
        assert r.status_code == 200
        assert r.headers["content-type"].split(";")[0] == media
        assert r.headers["content-disposition"].startswith("attachment;")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]


def test_every_response_says_nosniff_and_the_ui_has_a_csp(client: TestClient, keys: Keys) -> None:
    for path, headers, status in [
        ("/api/health", {}, 200),
        ("/api/kbs", {}, 401),
        ("/api/kbs/nope", auth(keys.staff), 404),
        ("/api/traces?limit=0", auth(keys.staff), 422),
        ("/", {}, 200),
    ]:
        r = client.get(path, headers=headers)
        assert r.status_code == status and r.headers["x-content-type-options"] == "nosniff", path
    csp = client.get("/").headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "unsafe-inline" not in csp and directives["object-src"] == "'none'"


class _Inline(HTMLParser):
    """Collects what a CSP without 'unsafe-inline' would block in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {k for k, _ in attrs}
        if tag == "script" and "src" not in names or tag == "style":
            self.blocked.append(f"inline <{tag}>")
        self.blocked += [f"{tag} {k}=" for k in names if k == "style" or k.startswith("on")]
        self.blocked += [
            f"{tag} {k}=javascript:" for k, v in attrs if (v or "").strip().startswith("javascript:")
        ]


def test_ui_needs_no_inline_script_or_style() -> None:
    parser = _Inline()
    parser.feed((WEB_DIR / "index.html").read_text(encoding="utf-8"))
    assert parser.blocked == []
    for js in WEB_DIR.glob("*.js"):  # no inline styles or handlers written into markup by script
        script = js.read_text(encoding="utf-8")
        assert "style=" not in script and " on" + "click=" not in script, js.name


def test_internal_errors_are_generic_with_an_id(
    own: tuple[TestClient, Lore, str], caplog: pytest.LogCaptureFixture
) -> None:
    client, lore, _ = own
    # A real fault: the KB's uploads folder is a file, so saving an upload fails with the server's path.
    folder = lore.storage.path(uploads_key(lore.catalog.get_kb("own")))
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("not a folder")
    with caplog.at_level(logging.ERROR, logger="lore.api"):
        r = client.post("/api/kbs/own/files", files=[("file", ("a.md", b"# A\n\ntext\n"))])
    assert r.status_code == 500
    body = r.json()
    assert str(lore.settings.home) not in r.text and "Errno" not in r.text and "FileExistsError" not in r.text
    assert body["trace_id"] in body["detail"] and "server log" in body["detail"]
    assert body["trace_id"] in caplog.text and str(folder) in caplog.text  # the details are logged
    assert r.headers["x-content-type-options"] == "nosniff"


def test_stream_faults_tell_only_the_trace_id(
    own: tuple[TestClient, Lore, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    client, lore, _ = own
    assert (
        client.post(
            "/api/kbs/own/files", files=[("file", ("a.md", b"# Leave\n\n15 days a year.\n"))]
        ).status_code
        == 201
    )
    assert client.post("/api/kbs/own/ingest", json={}).json()["counts"] == {"ingested": 1}

    def fault(*_args: object, **_kwargs: object) -> None:  # an unexpected failure inside the pipeline
        raise RuntimeError(f"cannot open {LEAK}/scenario.toml")

    monkeypatch.setattr(lore, "ask", fault)
    with caplog.at_level(logging.ERROR, logger="lore.api"):
        events = sse_events(
            client.post("/api/ask", json={"kb": "own", "question": "how many leave days"}).text
        )
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "own", "messages": [{"role": "user", "content": "how many leave days"}]},
        )
    kind, data = events[-1]
    assert kind == "error" and LEAK not in data["message"] and "RuntimeError" not in data["message"]
    assert data["trace_id"] in data["message"] and data["kind"] == "internal"
    assert chat.status_code == 500 and LEAK not in chat.text and chat.json()["error"]["trace_id"] in chat.text
    assert LEAK in caplog.text and data["trace_id"] in caplog.text
    trace = client.get(f"/api/traces/{data['trace_id']}").json()
    assert LEAK not in str(trace)
