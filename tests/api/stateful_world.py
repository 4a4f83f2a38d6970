"""The world the stateful test drives: a real `lore serve` (uvicorn over TCP) on a real home, two tenants'
keys, the operator's CLI, and what the model expects of each knowledge base.

Every file a tenant uploads carries a canary word unique to it. A response to a key of tenant T may hold
a canary only if T wrote it and it is still alive (its KB, file and share exist); every response passes
through `World.call`, which checks that and that no call is a 5xx or runs over its budget.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from lore.cli.main import app as cli_app
from lore.engine import Lore

TENANTS = ("acme", "beta")
BUDGET_S = 60.0  # no call of this test may take longer (a build is polled within it)
_serial = itertools.count(1)


class Violation(AssertionError):
    """An invariant of the service does not hold."""


@dataclass
class Upload:
    """One file a tenant uploaded, and the canary word its text carries."""

    tenant: str
    name: str
    canary: str


@dataclass
class KbModel:
    """What the model knows of one knowledge base."""

    name: str
    owner: str
    shared: set[str] = field(default_factory=set)
    uploads: list[Upload] = field(default_factory=list)  # every upload, replaced ones too
    versioned: bool = False


@dataclass
class Counts:
    steps: int = 0
    sequences: int = 0
    calls: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


class World:
    """The live service and its keys; `call` checks every response against the canaries."""

    def __init__(self, lore: Lore, url: str, home: Path) -> None:
        self.lore, self.url, self.home = lore, url, home
        self.http = httpx.Client(base_url=url, timeout=BUDGET_S)
        cat = lore.catalog
        self.admin = {t: cat.create_api_key(t, ["admin", "platform-admin"])[1] for t in TENANTS}
        self.staff = {t: cat.create_api_key(t, ["staff"])[1] for t in TENANTS}
        self.tenant_of = {**{k: t for t, k in self.admin.items()}, **{k: t for t, k in self.staff.items()}}
        self.canaries: dict[str, str] = {}  # canary -> the tenant that wrote it
        self.alive: set[str] = set()
        self.counts = Counts()

    # -- calls -----------------------------------------------------------------------------------

    def call(self, key: str, method: str, path: str, **kw: Any) -> httpx.Response:
        """One request with `key`; its body is checked (no 5xx, no canary the caller may not read)."""
        start = time.monotonic()
        r = self.http.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw)
        self._record(key, f"{method} {path}", r.status_code, r.text, time.monotonic() - start)
        return r

    def stream(self, key: str, path: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
        """A POST answered as server-sent events, read to its end; each event is checked."""
        start = time.monotonic()
        events: list[tuple[str, Any]] = []
        headers = {"Authorization": f"Bearer {key}"}
        with self.http.stream("POST", path, json=body, headers=headers) as r:
            text = r.read().decode("utf-8", "replace")
        self._record(key, f"POST {path}", r.status_code, text, time.monotonic() - start)
        kind = "message"
        for line in text.splitlines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[6:])))
        for kind, data in events:
            if kind == "error" and int(data.get("status", 500)) >= 500:
                raise Violation(f"POST {path}: error event {data}")
        return events

    def _record(self, key: str, what: str, status: int, text: str, took: float) -> None:
        self.counts.calls += 1
        self.counts.statuses[status] = self.counts.statuses.get(status, 0) + 1
        if status >= 500:
            raise Violation(f"{what}: {status} {text[:300]}")
        if took > BUDGET_S:
            raise Violation(f"{what}: took {took:.1f} s, over the budget of {BUDGET_S} s")
        tenant = self.tenant_of[key]
        for canary, writer in self.canaries.items():
            if canary in text and (writer != tenant or canary not in self.alive):
                state = "alive" if canary in self.alive else "dead"
                raise Violation(f"{what} as {tenant}: holds {writer}'s {state} canary {canary}")

    def revoke_on_an_open_socket(self, tenant: str, question: dict[str, Any]) -> tuple[list[Any], int]:
        """A new key of `tenant` asks on a WebSocket, is revoked, asks again: (events after the
        revocation, the socket's close code)."""
        r = self.call(self.admin[tenant], "POST", "/api/keys", json={"roles": ["staff"], "name": "ws"})
        if r.status_code != 201:
            raise Violation(f"POST /api/keys: {r.status_code} {r.text[:200]}")
        key_id, secret = r.json()["id"], r.json()["secret"]
        self.tenant_of[secret] = tenant
        url = self.url.replace("http", "ws") + "/api/stream"
        with connect(url, additional_headers={"Authorization": f"Bearer {secret}"}, open_timeout=10) as ws:
            ws.send(json.dumps(question))
            self._socket_until(ws, secret, ("end", "error"))
            revoked = self.call(self.admin[tenant], "DELETE", f"/api/keys/{key_id}")
            if revoked.status_code != 204:
                raise Violation(f"DELETE /api/keys: {revoked.status_code}")
            ws.send(json.dumps(question))
            try:
                after = self._socket_until(ws, secret, ())
            except ConnectionClosed as closed:
                return [], closed.rcvd.code if closed.rcvd else 1006
        return after, 1000

    def _socket_until(self, ws: Any, secret: str, last: tuple[str, ...]) -> list[Any]:
        events: list[Any] = []
        deadline = time.monotonic() + BUDGET_S
        while not events or events[-1]["event"] not in last:
            text = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            self._record(secret, "WS /api/stream", 200, text, 0.0)
            events.append(json.loads(text))
            if events[-1]["event"] == "error" and int(events[-1]["data"].get("status", 500)) >= 500:
                raise Violation(f"WS /api/stream: error event {events[-1]}")
        return events

    def new_upload(self, tenant: str, name: str) -> tuple[Upload, bytes]:
        canary = f"qz{tenant}{next(_serial)}canary"
        self.canaries[canary] = tenant
        self.alive.add(canary)
        text = f"# Note {name}\n\nThe launch word of the {tenant} team is {canary}; keep it private.\n"
        return Upload(tenant, name, canary), text.encode()

    def kill(self, uploads: list[Upload]) -> None:
        """These files' canaries may no longer reach anyone."""
        self.alive -= {u.canary for u in uploads}

    # -- the operator ------------------------------------------------------------------------------

    def cli(self, *args: str) -> tuple[int, str]:
        """The operator's `lore` command on the service's home (in this process)."""
        result = CliRunner().invoke(cli_app, list(args), env={"LORE_HOME": str(self.home)})
        return result.exit_code, result.output

    def wait_job(self, key: str, kb: str, job_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + BUDGET_S
        while True:
            job = self.call(key, "GET", f"/api/kbs/{kb}/jobs/{job_id}")
            if job.status_code != 200:
                raise Violation(f"job {job_id} of {kb}: {job.status_code} {job.text[:200]}")
            if job.json()["status"] in ("succeeded", "failed"):
                return dict(job.json())
            if time.monotonic() > deadline:
                raise Violation(f"build job {job_id} of {kb} not finished within {BUDGET_S} s")
            time.sleep(0.05)

    def reset(self) -> None:
        """Between sequences: the operator deletes every knowledge base (all of its canaries die)."""
        for kb in self.lore.catalog.list_kbs():
            self.lore.delete_kb(kb.name)
        self.alive.clear()
