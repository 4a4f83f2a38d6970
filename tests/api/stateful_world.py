"""The world the stateful test drives: a real `lore serve` (uvicorn over TCP) on a real home, two tenants'
keys, the operator's CLI, a web site to crawl, the build worker, and what the model expects of each
knowledge base (its uploads, index and versions).

Every file a tenant uploads (and every page it crawls) carries a canary word unique to it. A response to
a key of tenant T may hold a canary only if T wrote it and it is still alive (its KB, file and share
exist); every response passes through `World.call`, which checks that and that no call is a 5xx or runs
over its budget.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from lore.cli.main import app as cli_app
from lore.engine import Lore
from tests.api.stateful_parts import HeldWorker, PageSite

TENANTS = ("acme", "beta")
BUDGET_S = 60.0  # no call of this test may take longer (a build is polled within it)
_serial = itertools.count(1)


class Violation(AssertionError):
    """An invariant of the service does not hold."""


def expect(ok: bool, message: str) -> None:
    if not ok:
        raise Violation(message)


@dataclass
class Upload:
    """One file a tenant uploaded, and the canary word its text carries."""

    tenant: str
    name: str
    canary: str


Key = tuple[str, str]  # (tenant, file name or page URL)


@dataclass
class VersionModel:
    """One built version: its status and the canary of each of its files."""

    status: str
    files: dict[Key, str]


@dataclass
class KbModel:
    """What the model knows of one knowledge base."""

    name: str
    owner: str
    shared: set[str] = field(default_factory=set)
    uploads: list[Upload] = field(default_factory=list)  # every upload, replaced ones too
    versioned: bool = False
    pages: list[Upload] = field(default_factory=list)  # crawled pages (url as name)
    current: dict[Key, str] = field(default_factory=dict)  # uploads there now: their canary
    built: dict[Key, str] = field(default_factory=dict)  # the index now / after the latest build
    pending: set[Key] = field(default_factory=set)  # versioned: deleted uploads the next build drops
    versions: dict[int, VersionModel] = field(default_factory=dict)
    active: int | None = None

    def sees(self, tenant: str) -> bool:
        return self.owner == tenant or tenant in self.shared

    def uploaded(self, upload: Upload) -> None:
        self.uploads.append(upload)
        self.current[(upload.tenant, upload.name)] = upload.canary
        self.pending.discard((upload.tenant, upload.name))  # uploaded again: no longer to drop

    def ingested(self, tenant: str) -> None:
        """Unversioned: the tenant's uploads are indexed (replacing their earlier text)."""
        self.built.update({k: c for k, c in self.current.items() if k[0] == tenant})

    def file_deleted(self, key: Key) -> None:
        self.current.pop(key, None)
        if not self.versioned:
            self.built.pop(key, None)
        elif key in self.built:
            self.pending.add(key)

    def tenant_removed(self, tenant: str) -> list[Upload]:
        """Unshared: the tenant's uploads, pages and indexed files leave the KB (returns the dead ones)."""
        dead = [u for u in self.uploads + self.pages if u.tenant == tenant]
        self.uploads = [u for u in self.uploads if u.tenant != tenant]
        self.pages = [u for u in self.pages if u.tenant != tenant]
        for files in (self.current, self.built, *(v.files for v in self.versions.values())):
            for key in [k for k in files if k[0] == tenant]:
                del files[key]
        self.pending = {k for k in self.pending if k[0] != tenant}
        return dead

    def build_done(self, tenant: str, seq: int, status: str) -> None:
        """A build by `tenant` of its uploads (mode add): the KB's other files stay, deleted uploads go."""
        files = {k: c for k, c in self.built.items() if k not in self.pending}
        files.update({k: c for k, c in self.current.items() if k[0] == tenant})
        self.built, self.pending, self.versioned = files, set(), True
        if status == "active":
            self.activated(seq)
        self.versions[seq] = VersionModel(status, dict(files))

    def activated(self, seq: int) -> None:
        if self.active is not None and self.active in self.versions:
            self.versions[self.active].status = "retired"
        if seq in self.versions:
            self.versions[seq].status = "active"
        self.active = seq

    def rollback_target(self) -> int | None:
        """The newest retired version older than the active one."""
        older = [s for s, v in self.versions.items() if v.status == "retired" and s < (self.active or 0)]
        return max(older, default=None)


@dataclass
class Counts:
    steps: int = 0
    sequences: int = 0
    calls: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    done: Counter[str] = field(default_factory=Counter)  # what the version and web rules did

    def did(self, what: str) -> None:
        self.done[what] += 1


class World:
    """The live service and its keys; `call` checks every response against the canaries."""

    def __init__(self, lore: Lore, url: str, home: Path, site: PageSite, worker: HeldWorker) -> None:
        self.lore, self.url, self.home, self.site, self.worker = lore, url, home, site, worker
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
        self.record(key, f"{method} {path}", r.status_code, r.text, time.monotonic() - start)
        return r

    def stream(self, key: str, path: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
        """A POST answered as server-sent events, read to its end; each event is checked."""
        start = time.monotonic()
        events: list[tuple[str, Any]] = []
        headers = {"Authorization": f"Bearer {key}"}
        with self.http.stream("POST", path, json=body, headers=headers) as r:
            text = r.read().decode("utf-8", "replace")
        self.record(key, f"POST {path}", r.status_code, text, time.monotonic() - start)
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

    def record(self, key: str, what: str, status: int, text: str, took: float) -> None:
        """Check one response (or frame) to `key`: no 5xx, within the budget, no canary it may not read."""
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

    def new_upload(self, tenant: str, name: str) -> tuple[Upload, bytes]:
        canary = f"qz{tenant}{next(_serial)}canary"
        self.canaries[canary] = tenant
        self.alive.add(canary)
        text = f"# Note {name}\n\nThe launch word of the {tenant} team is {canary}; keep it private.\n"
        return Upload(tenant, name, canary), text.encode()

    def new_pages(self, tenant: str, n: int) -> tuple[str, str, list[Upload]]:
        """`n` linked pages on the site, each with a canary of `tenant`: (start URL, prefix, pages)."""
        pages = [Upload(tenant, "", f"qz{tenant}{next(_serial)}canary") for _ in range(n)]
        for page in pages:
            self.canaries[page.canary] = tenant
            self.alive.add(page.canary)
        texts = [f"The launch word of the {tenant} team is {p.canary}; keep it private." for p in pages]
        start, prefix, urls = self.site.add(texts)
        for page, url in zip(pages, urls, strict=True):
            page.name = url
        return start, prefix, pages

    def finds(self, tenant: str, kb: str, canary: str) -> bool:
        """Whether the tenant's admin finds its canary's text among the hits of a search of the KB for it
        (the response repeats the query: only the writer of a live canary may send it)."""
        assert self.canaries[canary] == tenant and canary in self.alive, (tenant, canary)
        body = {"kb": kb, "query": canary, "top_k": 10}
        r = self.call(self.admin[tenant], "POST", "/api/search", json=body)
        if r.status_code != 200:
            raise Violation(f"search {kb} as {tenant}: {r.status_code} {r.text[:200]}")
        return canary in json.dumps(r.json()["hits"], ensure_ascii=False)

    def new_key(self, tenant: str, roles: list[str]) -> tuple[str, str]:
        """(id, secret) of a new key of `tenant`, made through the API."""
        r = self.call(self.admin[tenant], "POST", "/api/keys", json={"roles": roles, "name": "stateful"})
        if r.status_code != 201:
            raise Violation(f"POST /api/keys: {r.status_code} {r.text[:200]}")
        self.tenant_of[r.json()["secret"]] = tenant
        return r.json()["id"], r.json()["secret"]

    def kill(self, uploads: list[Upload]) -> None:
        """These files' canaries may no longer reach anyone."""
        self.alive -= {u.canary for u in uploads}

    # -- the operator ------------------------------------------------------------------------------

    def cli(self, *args: str) -> tuple[int, str]:
        """The operator's `lore` command on the service's home (in this process)."""
        result = CliRunner().invoke(cli_app, list(args), env={"LORE_HOME": str(self.home)})
        return result.exit_code, result.output

    def wait_job(self, key: str, kb: str, job_id: str, path: str | None = None) -> dict[str, Any]:
        """Poll a job (at `path`, default the KB's job route) until it has finished."""
        deadline = time.monotonic() + BUDGET_S
        while True:
            job = self.call(key, "GET", path or f"/api/kbs/{kb}/jobs/{job_id}")
            if job.status_code != 200:
                raise Violation(f"job {job_id} of {kb}: {job.status_code} {job.text[:200]}")
            if job.json()["status"] in ("succeeded", "failed"):
                return dict(job.json())
            if time.monotonic() > deadline:
                raise Violation(f"job {job_id} of {kb} not finished within {BUDGET_S} s {self.worker.errors}")
            time.sleep(0.05)

    def reset(self) -> None:
        """Between sequences: the operator deletes every knowledge base (all of its canaries die)."""
        for kb in self.lore.catalog.list_kbs():
            self.lore.delete_kb(kb.name)
        self.alive.clear()
