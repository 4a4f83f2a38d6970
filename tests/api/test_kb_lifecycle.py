"""Sequences over a KB's life (issue 34, findings 1 and 2), on every catalog database: nothing of a deleted KB
reaches the next owner of its name, names compare exactly, an owner always keeps control of its KB whatever
a sharee added, and files can be deleted one by one by whoever may write them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from lore.api import create_app
from lore.catalog import KnowledgeBase
from lore.cli.main import app as cli
from lore.config import load_settings
from lore.engine import Lore
from lore.storage.layout import kb_key, reports_key, uploads_key
from tests.api.conftest import LiveServer, auth, build_and_wait

A, B = "acme", "bluefin"
CANARY = b"# Board minutes\n\nQXBOARDCANARYQ: the acme board approved the merger.\n"
runner = CliRunner()


@dataclass
class World:
    lore: Lore
    client: TestClient
    keys: dict[str, str]
    home: Path
    url: str

    def h(self, key: str) -> dict[str, str]:
        return auth(self.keys[key])

    def create(self, name: str, key: str = "a_admin") -> None:
        r = self.client.post("/api/kbs", json={"name": name}, headers=self.h(key))
        assert r.status_code == 201, r.text

    def upload(self, kb: str, name: str, body: bytes, key: str = "a_admin") -> str:
        r = self.client.post(f"/api/kbs/{kb}/files", files={"file": (name, body)}, headers=self.h(key))
        assert r.status_code == 201, r.text
        return str(r.json()["files"][0]["name"])

    def uploads(self, kb: str | KnowledgeBase) -> set[str]:
        record = self.lore.catalog.get_kb(kb) if isinstance(kb, str) else kb
        return {e.name for e in self.lore.storage.list(uploads_key(record))}

    def audits(self, kb: str, action: str) -> list[str]:
        return [e.target for e in self.lore.catalog.audit_log(kb=kb) if e.action == action]


@pytest.fixture(scope="module")
def world(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("lifecycle")
    lore = Lore(load_settings(home=home, catalog_url=module_db_url, api={"rate_limit_per_minute": 0}))
    keys = {
        "a_admin": lore.catalog.create_api_key(A, ["admin"])[1],
        "a_staff": lore.catalog.create_api_key(A, ["staff"])[1],
        "b_admin": lore.catalog.create_api_key(B, ["admin"])[1],
        "b_platform": lore.catalog.create_api_key(B, ["admin", "platform-admin"])[1],
    }
    with TestClient(create_app(lore, run_preflight=False)) as client:
        yield World(lore, client, keys, home, module_db_url)
    lore.close()


@pytest.fixture
def operator(world: World, monkeypatch: pytest.MonkeyPatch) -> World:
    """The local CLI works on the world's home and catalog."""
    monkeypatch.setenv("LORE_HOME", str(world.home))
    monkeypatch.setenv("LORE_CATALOG_URL", world.url)
    return world


def test_a_cli_deleted_kb_leaves_nothing_to_the_next_owner_of_its_name(operator: World) -> None:
    """A uploads board minutes to `clidel` and builds a version (index, quality report); the operator
    deletes it with the CLI; B creates `clidel`: it lists, downloads and searches nothing of A's."""
    w, c = operator, operator.client
    w.create("clidel")
    stored = w.upload("clidel", "acme-board-minutes.md", CANARY)
    kb = w.lore.catalog.get_kb("clidel")
    w.lore.build(
        "clidel",
        [w.lore.storage.path(f"{uploads_key(kb)}/{stored}")],
        activate=True,
        chunk_metadata=lambda _s: {"tenant_id": A},
    )
    assert w.lore.storage.list(reports_key(kb, 1)) and w.uploads(kb) == {stored}
    result = runner.invoke(cli, ["kb", "delete", "clidel", "--yes"])
    assert result.exit_code == 0, result.output
    assert w.uploads(kb) == set() and not w.lore.storage.path(kb_key(kb)).exists()
    assert w.audits("clidel", "delete") == [kb.id]  # one entry, by the operator as the owner tenant
    w.create("clidel", "b_admin")
    listed = c.get("/api/kbs/clidel/files", headers=w.h("b_admin"))
    assert listed.status_code == 200 and listed.json() == {"uploads": [], "indexed": []}
    r = c.get(f"/api/kbs/clidel/files/{stored}", headers=w.h("b_admin"))
    assert r.status_code == 404 and b"QXBOARD" not in r.content
    r = c.post("/api/search", json={"kb": "clidel", "query": "board merger minutes"}, headers=w.h("b_admin"))
    assert r.status_code == 200 and "QXBOARD" not in r.text
    assert c.get("/api/kbs/clidel", headers=w.h("b_admin")).json()["files"] == 0


def test_an_api_delete_removes_the_uploads_and_audits_once(world: World) -> None:
    w = world
    w.create("apidel")
    w.upload("apidel", "minutes.md", CANARY)
    record = w.lore.catalog.get_kb("apidel")
    assert w.client.delete("/api/kbs/apidel", headers=w.h("a_admin")).status_code == 204
    assert w.uploads(record) == set() and w.audits("apidel", "delete") == [record.id]
    w.create("apidel", "b_admin")
    assert w.client.get("/api/kbs/apidel/files", headers=w.h("b_admin")).json()["uploads"] == []


def test_an_upload_left_without_owner_is_nobodys(world: World) -> None:
    """A file in a KB's upload folder with no owner row (left from before) is never handed to the KB's
    current owner; and creating a KB purges what an earlier KB of its name left in storage."""
    w = world
    w.lore.storage.write_bytes("uploads/leftover/old.md", CANARY)  # before the KB exists (older layout)
    w.create("leftover", "b_admin")
    assert w.uploads("leftover") == set() and w.lore.storage.list("uploads/leftover") == []
    key = uploads_key(w.lore.catalog.get_kb("leftover"))
    w.lore.storage.write_bytes(f"{key}/stray.md", CANARY)  # appears after (e.g. a restore)
    listed = w.client.get("/api/kbs/leftover/files", headers=w.h("b_admin")).json()
    assert listed["uploads"] == []
    r = w.client.get("/api/kbs/leftover/files/stray.md", headers=w.h("b_admin"))
    assert r.status_code == 404 and b"QXBOARD" not in r.content
    r = w.client.post("/api/kbs/leftover/ingest", json={}, headers=w.h("b_admin"))
    assert r.status_code == 400 and "QXBOARD" not in r.text  # "every upload of B's": none


@pytest.mark.parametrize("variant", ["leakkb%20", "LEAKKB", "Leakkb", "leakkb%09"])
def test_a_name_matches_exactly_or_not_at_all(world: World, variant: str) -> None:
    """Trailing spaces and other cases of a name are unknown KBs (MariaDB's collation pads spaces):
    404, and nothing is deleted, shared or audited."""
    w = world
    if "leakkb" not in {k.name for k in w.lore.catalog.list_kbs()}:
        w.create("leakkb")
        w.upload("leakkb", "minutes.md", CANARY)
    for method, path, body in (
        ("DELETE", f"/api/kbs/{variant}", None),
        ("GET", f"/api/kbs/{variant}", None),
        ("POST", f"/api/kbs/{variant}/shares", {"tenant": B}),
        ("GET", f"/api/kbs/{variant}/files", None),
    ):
        r = w.client.request(method, path, json=body, headers=w.h("a_admin"))
        assert r.status_code == 404, (method, path, r.text)
    assert w.lore.catalog.get_kb("leakkb").name == "leakkb" and w.uploads("leakkb") == {"minutes.md"}
    assert w.audits("leakkb", "delete") == [] and w.audits("leakkb", "share") == []


def test_a_name_is_unique_whatever_its_case(world: World) -> None:
    w = world
    w.create("casekb")
    for other, key in (("CASEKB", "a_admin"), ("CaseKb", "b_admin")):
        r = w.client.post("/api/kbs", json={"name": other}, headers=w.h(key))
        assert r.status_code == 409 and r.json()["detail"] == (
            f"knowledge base name '{other}' is not available; choose another name"
        )
    assert {k.name for k in w.lore.catalog.list_kbs()} & {"CASEKB", "CaseKb"} == set()


def test_the_owner_unshares_a_sharee_and_keeps_control(world: World) -> None:
    """A shares `lockkb` with B; B's platform admin uploads and indexes a file. A's admin can still
    unshare (204), which removes B's upload, chunks and rows; then A builds and deletes as before."""
    w, c = world, world.client
    w.create("lockkb")
    w.upload("lockkb", "a.md", b"# A\n\nacme parking rules.\n")
    assert c.post("/api/kbs/lockkb/ingest", json={}, headers=w.h("a_admin")).status_code == 200
    assert c.post("/api/kbs/lockkb/shares", json={"tenant": B}, headers=w.h("a_admin")).status_code == 201
    b_name = w.upload("lockkb", "b.md", b"# B\n\nQXBLOCKQ bluefin travel.\n", "b_platform")
    assert c.post("/api/kbs/lockkb/ingest", json={}, headers=w.h("b_platform")).status_code == 200
    kb = w.lore.catalog.get_kb("lockkb")
    b_file = w.lore.catalog.get_file(kb.id, b_name)
    assert b_file is not None
    b_chunks = w.lore.catalog.file_chunk_ids(b_file.id)
    assert b_chunks and w.lore.store(kb).get(b_chunks)
    r = c.post("/api/kbs/lockkb/ingest", json={}, headers=w.h("a_admin"))
    assert r.status_code == 403  # B's content is in it: A's plain admin may not write...
    assert c.delete(f"/api/kbs/lockkb/shares/{B}", headers=w.h("b_admin")).status_code == 403  # not B's
    assert (
        c.delete(f"/api/kbs/lockkb/shares/{B}", headers=w.h("a_admin")).status_code == 204
    )  # ...but unshares
    assert w.uploads("lockkb") == {"a.md"} and w.lore.catalog.get_file(kb.id, b_name) is None
    assert w.lore.store(kb).get(b_chunks) == [] and w.lore.catalog.content_tenants(kb.id) == {A}
    assert w.audits("lockkb", "unshare") == [B]
    assert c.get("/api/kbs/lockkb", headers=w.h("b_platform")).status_code == 404
    assert c.post("/api/kbs/lockkb/ingest", json={}, headers=w.h("a_admin")).status_code == 200
    assert build_and_wait(c, "lockkb", {}, w.h("a_admin"))["status"] == "succeeded"
    assert c.delete(f"/api/kbs/lockkb/shares/{B}", headers=w.h("a_admin")).status_code == 404  # done
    # shared again, B adds a file: the owner deletes the whole KB without unsharing first
    assert c.post("/api/kbs/lockkb/shares", json={"tenant": B}, headers=w.h("a_admin")).status_code == 201
    w.upload("lockkb", "b2.md", b"# B\n\nQXBLOCKQ again.\n", "b_platform")
    assert c.delete("/api/kbs/lockkb", headers=w.h("b_platform")).status_code == 403  # a sharee may not
    assert c.delete("/api/kbs/lockkb", headers=w.h("a_admin")).status_code == 204
    assert w.uploads(kb) == set()


def test_files_are_deleted_one_by_one_by_whoever_may_write_them(world: World) -> None:
    w, c = world, world.client
    w.create("filekb")
    w.upload("filekb", "a.md", b"# A\n\nQXFILEQ acme parking rules.\n")
    w.upload("filekb", "u.md", b"# U\n\nnot indexed yet.\n")
    assert (
        c.post("/api/kbs/filekb/ingest", json={"files": ["a.md"]}, headers=w.h("a_admin")).status_code == 200
    )
    assert c.delete("/api/kbs/filekb/files/a.md", headers=w.h("a_staff")).status_code == 403
    assert c.delete("/api/kbs/filekb/files/a.md", headers=w.h("b_admin")).status_code == 404  # not B's KB
    r = c.delete("/api/kbs/filekb/files/a.md", headers=w.h("a_admin"))
    assert r.status_code == 200 and r.json() == {
        "kb": "filekb",
        "file": "a.md",
        "upload": True,
        "indexed": True,
        "note": None,
    }
    r = c.post("/api/search", json={"kb": "filekb", "query": "parking rules"}, headers=w.h("a_admin"))
    assert r.status_code == 200 and "QXFILEQ" not in r.text
    assert c.get("/api/kbs/filekb", headers=w.h("a_admin")).json()["files"] == 0
    assert c.delete("/api/kbs/filekb/files/a.md", headers=w.h("a_admin")).status_code == 404
    assert w.audits("filekb", "delete_file") == ["a.md"]
    # in a shared KB each tenant deletes its own files, never the other's
    assert c.post("/api/kbs/filekb/shares", json={"tenant": B}, headers=w.h("a_admin")).status_code == 201
    b_name = w.upload("filekb", "u.md", b"# B\n\nbluefin.\n", "b_platform")
    r = c.delete(f"/api/kbs/filekb/files/{b_name}", headers=w.h("a_admin"))
    assert r.status_code == 409 and w.uploads("filekb") == {"u.md", b_name}
    assert c.delete("/api/kbs/filekb/files/u.md", headers=w.h("b_admin")).status_code == 200  # B's own
    assert w.uploads("filekb") == {"u.md"}


def test_a_versioned_kb_loses_the_upload_and_says_the_next_build_drops_it(operator: World) -> None:
    w, c = operator, operator.client
    w.create("verkb")
    for name in ("keep.md", "gone.md"):
        w.upload("verkb", name, f"# {name}\n\nversioned text of {name}.\n".encode())
    folder = w.lore.storage.path(uploads_key(w.lore.catalog.get_kb("verkb")))
    files = [folder / "keep.md", folder / "gone.md"]  # named as uploads are
    w.lore.build("verkb", files, activate=True, chunk_metadata=lambda _s: {"tenant_id": A})
    r = c.delete("/api/kbs/verkb/files/gone.md", headers=w.h("a_admin"))
    assert r.status_code == 200 and r.json()["upload"] and not r.json()["indexed"]
    assert "next build" in r.json()["note"] and w.uploads("verkb") == {"keep.md"}
    r = c.delete("/api/kbs/verkb/files/gone.md", headers=w.h("a_admin"))  # indexed, no upload left
    assert r.status_code == 409 and "build a version" in r.json()["detail"]
    # the operator's CLI and the client (through `lore --server`) delete files too
    result = runner.invoke(cli, ["files", "delete", "--kb", "verkb", "keep.md", "--yes"])
    assert result.exit_code == 0 and "next build" in result.output, result.output
    w.create("remotekb")
    w.upload("remotekb", "r.md", b"# R\n\nremote.\n")
    with LiveServer(c.app) as live:  # type: ignore[arg-type]
        args = ["--server", live.url, "--key", w.keys["a_admin"], "files", "delete", "--kb", "remotekb"]
        result = runner.invoke(cli, [*args, "r.md", "--yes"])
        assert result.exit_code == 0 and "deleted r.md (upload)" in result.output, result.output
        result = runner.invoke(cli, [*args, "r.md", "--yes"])
        assert result.exit_code != 0 and "not found" in result.output
    assert w.uploads("remotekb") == set()
