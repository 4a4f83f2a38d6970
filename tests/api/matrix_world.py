"""The world of the attack matrix: two tenants, their knowledge bases, a shared KB, a scenario, keys, traces,
and a unique canary string in every document, upload and FAQ row, with who may read each one."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.storage.layout import uploads_key
from tests.api.conftest import auth, sse_events

A, B = "acme", "bluefin"
# canary -> (tenant, dataset, visibility, allowed roles); file names are <tenant letter>_<kind>.md
KINDS = {
    "public": ("main", "internal", []),
    "restricted": ("main", "restricted", []),
    "manager": ("main", "internal", ["manager"]),
    "ds2": ("ds2", "internal", []),
}


def canary(tenant: str, kind: str) -> str:
    return f"QX{tenant[0].upper()}{kind.upper().replace('_', '')}Q"


@dataclass(frozen=True)
class Caller:
    """One row of the matrix: a key (or none)."""

    name: str
    tenant: str | None  # None: no key / revoked
    roles: tuple[str, ...] = ()
    datasets: tuple[str, ...] | None = None
    revoked: bool = False

    @property
    def authed(self) -> bool:
        return self.tenant is not None and not self.revoked

    @property
    def admin(self) -> bool:
        return self.authed and "admin" in self.roles

    @property
    def platform(self) -> bool:
        return self.admin and "platform-admin" in self.roles


CALLERS = (
    Caller("owner_admin", A, ("admin", "employee")),
    Caller("owner_employee", A, ("employee",)),
    Caller("owner_manager", A, ("manager",)),
    Caller("other_admin", B, ("admin",)),
    Caller("other_platform_admin", B, ("admin", "platform-admin")),
    Caller("other_employee", B, ("employee",)),
    Caller("no_role", A, ("guest",)),
    Caller("other_dataset", A, ("admin",), ("ds2",)),
    Caller("revoked", A, ("admin",), revoked=True),
    Caller("no_key", None),
)


def readable(c: Caller) -> set[str]:
    """The canaries a caller may read, from the rules in README (independent of lore.policy)."""
    if not c.authed:
        return set()
    t = c.tenant
    assert t is not None
    out = set()
    for kind, (dataset, visibility, roles) in KINDS.items():
        if c.datasets is not None and dataset not in c.datasets:
            continue
        if visibility == "restricted" and not c.admin:
            continue
        if roles and not set(roles) & set(c.roles):
            continue
        out.add(canary(t, kind))
    if c.admin:
        out.add(canary(t, "upload"))  # its tenant's upload, not indexed yet
    if c.datasets is None:
        out.add(canary(t, "shared"))  # its own record in the shared KB (dataset main)
        if t == A:
            out.add(canary(A, "faq"))
            if "manager" in c.roles:
                out.add(canary(A, "faq_mgr"))
            if c.admin:
                out.add(canary(A, "scn_restricted"))
    return out


ALL_CANARIES = {canary(t, k) for t in (A, B) for k in (*KINDS, "upload", "shared")} | {
    canary(A, "faq"),
    canary(A, "faq_mgr"),
    canary(A, "scn_restricted"),
}
SEES = {"ka": {A}, "kb": {B}, "shared": {A, B}, "nokb": set()}  # who may see each KB
OWNERS = {"ka": {A}, "kb": {B}, "shared": {A, B}, "nokb": set()}  # whose content each KB holds


@dataclass
class World:
    """What the matrix calls run against."""

    client: TestClient
    lore: Lore
    secrets: dict[str, str]
    traces: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (trace id, session id)
    counter: itertools.count = field(default_factory=itertools.count)

    def headers(self, c: Caller) -> dict[str, str]:
        return auth(self.secrets[c.name]) if c.name in self.secrets else {}

    def fresh_kb(
        self, owner: str, upload: str | None = None, shared: tuple[str, ...] = (), versioned: bool = False
    ) -> str:
        """A throwaway KB for one destructive cell."""
        name = f"t{next(self.counter)}"
        kb = self.lore.create_kb(name, owner_tenant=owner)
        for tenant in shared:
            self.lore.catalog.share_kb(kb.id, tenant)
        if upload:
            folder = self.lore.storage.path(uploads_key(kb))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / upload).write_text("# Harmless\n\nA harmless note about parking.\n", encoding="utf-8")
            self.lore.catalog.claim_files(kb.id, [upload], owner)
            if versioned:
                self.lore.build(
                    name, [folder / upload], activate=True, chunk_metadata=lambda _s: {"tenant_id": owner}
                )
        return name


def _doc(tenant: str, kind: str) -> str:
    return (
        f"# {kind} notes of {tenant}\n\nThe canary code of the {kind} document is {canary(tenant, kind)}.\n"
    )


def build_world(lore: Lore, client: TestClient, scenarios_dir: Path) -> World:
    """Create keys, KBs, documents, the scenario and a few traces."""
    secrets = {}
    for c in CALLERS:
        if c.tenant is None:
            continue
        key, secret = lore.catalog.create_api_key(
            c.tenant, list(c.roles), None if c.datasets is None else list(c.datasets)
        )
        if c.revoked:
            lore.catalog.revoke_api_key(key.id)
        secrets[c.name] = secret
    world = World(client, lore, secrets)
    for tenant, kb in ((A, "ka"), (B, "kb")):
        folder = lore.storage.path(uploads_key(lore.create_kb(kb, owner_tenant=tenant)))
        folder.mkdir(parents=True)
        meta = {}
        for kind, (dataset, visibility, roles) in KINDS.items():
            name = f"{tenant[0]}_{kind}.md"
            (folder / name).write_text(_doc(tenant, kind), encoding="utf-8")
            meta[name] = {
                "tenant_id": tenant,
                "dataset_id": dataset,
                "visibility": visibility,
                "allowed_roles": roles,
            }
        lore.build(kb, sorted(folder.iterdir()), activate=True, chunk_metadata=lambda s, m=meta: m[s.name])
        admin = next(c for c in CALLERS if c.tenant == tenant and c.admin and c.datasets is None)
        r = client.post(
            f"/api/kbs/{kb}/files",
            headers=world.headers(admin),
            files={"file": (f"{tenant[0]}_upload.md", _doc(tenant, "upload").encode())},
        )
        assert r.status_code == 201, r.text
    # The shared KB: owned by A, shared with B; both tenants' JSONL records carry _id 1 (finding 2).
    shared = lore.create_kb("shared", owner_tenant=A)
    lore.catalog.share_kb(shared.id, B)
    folder = lore.storage.path(uploads_key(shared))
    folder.mkdir(parents=True)
    for tenant in (A, B):
        path = folder / f"{tenant[0]}_rec.jsonl"
        path.write_text(
            json.dumps(
                {
                    "_id": "1",
                    "title": f"{tenant} record",
                    "text": f"The canary code of the shared record is {canary(tenant, 'shared')}.",
                }
            )
            + "\n",
            encoding="utf-8",
        )
        lore.ingest(
            "shared", [path], chunk_metadata=lambda _s, t=tenant: {"tenant_id": t, "dataset_id": "main"}
        )
    _scenario(lore, scenarios_dir)
    for label, caller, kb, kind in (
        ("mgr", "owner_manager", "ka", "manager"),
        ("adm", "owner_admin", "ka", "restricted"),
        ("b", "other_employee", "kb", "public"),
    ):
        c = next(x for x in CALLERS if x.name == caller)
        r = client.post(
            "/api/ask",
            headers=world.headers(c),
            json={"kb": kb, "question": f"What is the canary code of the {kind} document?"},
        )
        events = sse_events(r.text)
        assert canary(c.tenant or "", kind) in r.text, r.text  # the asker itself reads it
        world.traces[label] = (events[-1][1]["trace_id"], events[0][1]["session_id"])
    owner_admin = next(x for x in CALLERS if x.name == "owner_admin")
    r = client.post(
        "/api/ask",
        headers=world.headers(owner_admin),  # the scenario reaches its restricted source
        json={"scenario": "ahr", "question": "What is the canary code of the board minutes?"},
    )
    assert canary(A, "scn_restricted") in r.text, r.text
    return world


def _scenario(lore: Lore, root: Path) -> None:
    """Scenario `ahr` of tenant A whose access lists allow restricted chunks (finding 1)."""
    folder = root / "ahr"
    (folder / "data" / "board").mkdir(parents=True)
    (folder / "data" / "policy").mkdir(parents=True)
    (folder / "scenario.toml").write_text(
        """id = "ahr"
name = "Acme help desk"
domain = "hr"
description = "matrix scenario"
support_contact = "desk"
assistant_name = "bot"
[defaults]
tenant = "acme"
dataset = "main"
visibility = "internal"
[access]
tenants = ["acme"]
datasets = ["main", "ds2"]
roles = ["employee", "manager", "admin", "guest"]
default_roles = ["employee"]
visibility = ["public", "internal", "restricted"]
[[sources]]
id = "board"
label = "Board"
patterns = ["board"]
visibility = "restricted"
[[sources]]
id = "policy"
label = "Policy"
patterns = ["policy"]
""",
        encoding="utf-8",
    )
    (folder / "data" / "board" / "board.md").write_text(
        f"# Board\n\nThe canary code of the board minutes is {canary(A, 'scn_restricted')}.\n",
        encoding="utf-8",
    )
    (folder / "data" / "policy" / "policy.md").write_text(
        "# Policy\n\nThe office opens at nine.\n", encoding="utf-8"
    )
    (folder / "faq.csv").write_text(
        "问题,答案,source,tenant,dataset,roles\n"
        f"What is the wifi canary code?,The wifi canary code is {canary(A, 'faq')}.,policy,acme,main,\n"
        "What is the bonus canary code?,The bonus canary code is "
        f"{canary(A, 'faq_mgr')}.,policy,acme,main,manager\n",
        encoding="utf-8",
    )
    build_scenario(lore, Scenarios(root).get("ahr"), activate=True)


def leaks(text: str, c: Caller) -> set[str]:
    """Canaries in `text` that the caller may not read."""
    return {x for x in ALL_CANARIES - readable(c) if x in text}


def body_text(r: Any) -> str:
    """A response's body as text (downloads included)."""
    return r.content.decode("utf-8", "replace")


WEB_SOURCE = "http://127.0.0.1:9/intranet/"


@pytest.fixture(scope="module", name="world")
def world_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The matrix world behind an in-process client."""
    base = tmp_path_factory.mktemp("matrix")
    lore = Lore(
        load_settings(
            home=base / "home",
            # web sources on, pointing at a closed port: an allowed crawl fetches nothing (422)
            api={"rate_limit_per_minute": 0, "web_sources": [WEB_SOURCE]},
            scenario={"scenarios_dir": base / "scenarios"},
        )
    )
    with TestClient(create_app(lore)) as client:
        world = build_world(lore, client, base / "scenarios")
        health = client.app.state.health  # type: ignore[attr-defined]
        deadline = time.monotonic() + 120
        while health.runs == 0:  # /api/ready's cells see the first round of checks (slow on a busy machine)
            assert time.monotonic() < deadline, "no round of readiness checks in 120 s"
            time.sleep(0.05)
        yield world
    lore.close()
