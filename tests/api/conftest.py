"""Fixtures for the service: a real sample KB with a second tenant's document, keys, the app, a real
uvicorn."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from playwright import sync_api

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.kb_homes import build_handbook, cached_home

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SECRET_B = "# Project Nightingale\n\nProject Nightingale uses launch code NG-7731 and ships on 12 March.\n"


@dataclass
class Keys:
    """Secrets of the keys the tests use."""

    admin: str  # tenant "default", roles admin
    staff: str  # tenant "default", roles staff
    tenant_b: str  # tenant "tenant-b"
    revoked: str


def ingest_for_tenant(lore: Lore, kb: str, files: list[Path], tenant: str) -> None:
    """Share the KB with `tenant` and ingest through the real pipeline with the chunks stamped with it."""
    lore.catalog.share_kb(lore.catalog.get_kb(kb).id, tenant)
    report = lore.ingest(kb, files, chunk_metadata=lambda _src: {"tenant_id": tenant})
    assert report.count("ingested") == len(files)


def build_api_home(home: Path) -> None:
    """The sample handbook as KB "hb" with tenant-b's document in it (shared with tenant-b)."""
    build_handbook(home, "hb", "sample handbook")
    lore = Lore(load_settings(home=home))
    try:
        with tempfile.TemporaryDirectory() as folder:
            secret = Path(folder) / "nightingale.md"
            secret.write_text(SECRET_B, encoding="utf-8")
            ingest_for_tenant(lore, "hb", [secret], "tenant-b")
    finally:
        lore.close()


@pytest.fixture(scope="module")
def api_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of its own for each module (built once per run)."""
    return cached_home(tmp_path_factory, "api_home", build_api_home)


@pytest.fixture(scope="module")
def keys(api_home: Path) -> Keys:
    lore = Lore(load_settings(home=api_home))
    cat = lore.catalog
    revoked = cat.create_api_key("default", ["staff"])
    cat.revoke_api_key(revoked[0].id)
    keys = Keys(
        cat.create_api_key("default", ["admin"])[1],
        cat.create_api_key("default", ["staff"])[1],
        cat.create_api_key("tenant-b", ["staff"])[1],
        revoked[1],
    )
    lore.close()
    return keys


@pytest.fixture(scope="module")
def lore(api_home: Path, keys: Keys) -> Iterator[Lore]:
    lore = Lore(load_settings(home=api_home, api={"rate_limit_per_minute": 0}))
    yield lore
    lore.close()


@pytest.fixture(scope="module")
def app(lore: Lore) -> FastAPI:
    return create_app(lore)


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


def auth(secret: str) -> dict[str, str]:
    """The Authorization header for a key."""
    return {"Authorization": f"Bearer {secret}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """A real uvicorn serving an app in a thread on a free port."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", ws="websockets-sansio")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="module")
def live(app: FastAPI) -> Iterator[LiveServer]:
    with LiveServer(app) as server:
        yield server


def iter_sse(lines: Iterable[str]) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs from the lines of a server-sent event stream, as they arrive."""
    kind = "message"
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            yield kind, json.loads(line[6:])


def sse_events(text: str) -> list[tuple[str, dict]]:
    """(event, data) pairs of a whole SSE body."""
    return list(iter_sse(text.splitlines()))


def build_and_wait(
    client: TestClient, kb: str, body: dict, headers: dict[str, str] | None = None, timeout: float = 120.0
) -> dict:
    """POST a build (202 + job), then poll the job until it has finished; returns the job's JSON."""
    r = client.post(f"/api/kbs/{kb}/builds", json=body, headers=headers or {})
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert r.headers["location"] == f"/api/kbs/{kb}/jobs/{job['id']}"
    deadline = time.monotonic() + timeout
    while job["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, f"build job still {job['status']} after {timeout} s"
        time.sleep(0.1)
        job = client.get(f"/api/kbs/{kb}/jobs/{job['id']}", headers=headers or {}).json()
    return job


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str, Lore]]:
    """A live service on an empty home, with an admin key: (url, secret, lore); a file may define its own."""
    lore = Lore(load_settings(home=tmp_path / "home"))
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret, lore
    lore.close()


@pytest.fixture()
def page(site: tuple[str, str, Lore]) -> Iterator[object]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(locale="en-US", accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(60_000)
        console: list[str] = []
        errors: list[str] = []
        page.on("console", lambda msg: console.append(msg.text))
        page.on("pageerror", lambda error: errors.append(str(error)))  # e.g. a module that failed to load
        yield page
        browser.close()
    # The UI runs under a Content-Security-Policy (no inline script or style): nothing may trip it.
    assert not [m for m in console if "Content Security Policy" in m], console
    assert not errors, errors
