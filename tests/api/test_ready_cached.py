"""`/api/ready` answers at once from checks a background thread runs: a component that hangs (a Milvus
address that accepts connections and never answers) makes it say 503 quickly, naming the part."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore

HANG_S = 60  # the store's per-call timeout: a check run inline would take this long


@pytest.fixture()
def silent_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP port that accepts every connection and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    listener.close()
    for conn in accepted:
        conn.close()


def test_ready_answers_503_at_once_while_a_store_hangs(
    tmp_path: Path, silent_server: tuple[str, list[socket.socket]]
) -> None:
    uri, accepted = silent_server
    maker = Lore(load_settings(home=tmp_path, store={"backend": "milvus"}))
    maker.create_kb("slow")  # a Milvus KB; the service below reaches its store at the silent address
    maker.close()
    lore = Lore(
        load_settings(
            home=tmp_path,
            store={"backend": "milvus", "uri": uri, "timeout_s": HANG_S},
            api={"ready_refresh_s": 2},
        )
    )
    try:
        with TestClient(create_app(lore, run_preflight=False)) as client:
            started = time.monotonic()
            answers = [client.get("/api/ready") for _ in range(5)]
            took = time.monotonic() - started
            health = client.app.state.health  # type: ignore[attr-defined]
            assert health.runs == 0  # the first round is still stuck on the store: no request ran it
            assert accepted  # the background round did reach the silent server
        for r in answers:
            assert r.status_code == 503, r.text
            checks = r.json()["checks"]
            assert checks["catalog"] == "ok" and checks["store"].startswith("no answer"), checks
        assert took < HANG_S / 3, f"5 probes took {took:.1f} s"  # generous: inline, one alone takes 60 s
    finally:
        lore.close()
