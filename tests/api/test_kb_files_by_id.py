"""Everything a KB owns in storage is keyed by its id (issue 34): a new KB of a deleted one's name sees
nothing of it, and a home written with the older by-name layout opens with its files moved to the id (once,
also when two processes do it at once), in a directory or an S3 bucket (`moto_server`)."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.catalog import KnowledgeBase
from lore.config import load_settings
from lore.engine import Lore
from lore.engine.backup import backup
from lore.engine.restore import restore
from lore.ingest.web import cache_dir
from lore.storage import Storage
from lore.storage.layout import move_legacy_files
from tests.api.conftest import auth, build_and_wait, free_port
from tests.servers import MotoServer, moto_server

A, B = "acme", "bluefin"
CANARY = b"# Board minutes\n\nQXBOARDCANARYQ: the acme board approved the merger.\n"
NOTE = b"# Parking\n\nVisitors park on level two of the north garage.\n"


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


def _lore(home: Path, storage: dict[str, str] | None = None, catalog: Path | None = None) -> Lore:
    db = catalog or home / "catalog.db"
    return Lore(
        load_settings(
            home=home,
            catalog_url=f"sqlite:///{db}",
            api={"rate_limit_per_minute": 0},
            storage=storage or {},
        )
    )


def _storage(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    if kind == "dir":
        return {"dir": str(tmp_path / "shared")}
    return request.getfixturevalue("moto").storage_settings(f"old-{uuid.uuid4().hex[:10]}")


def test_a_deleted_kbs_files_never_reach_the_next_owner_of_its_name(tmp_path: Path) -> None:
    """A uploads board minutes to `x` and builds a version; A deletes `x`; B creates `x`: B lists, downloads
    and reads nothing of A's, even a file of A's that outlived the delete (stored under A's KB id)."""
    lore = _lore(tmp_path / "home")
    a_key, b_key = (auth(lore.catalog.create_api_key(t, ["admin"])[1]) for t in (A, B))
    with TestClient(create_app(lore, run_preflight=False)) as c:
        assert c.post("/api/kbs", json={"name": "x"}, headers=a_key).status_code == 201
        up = c.post("/api/kbs/x/files", files={"file": ("minutes.md", CANARY)}, headers=a_key)
        assert up.status_code == 201, up.text
        assert build_and_wait(c, "x", {"activate": True}, a_key)["status"] == "succeeded"
        old = lore.catalog.get_kb("x")
        assert lore.storage.list(f"kbs/{old.id}/reports/1")  # the version's quality report, by id
        assert c.delete("/api/kbs/x", headers=a_key).status_code == 204
        assert not lore.storage.path(f"kbs/{old.id}").exists()  # the delete took everything by id
        lore.storage.write_bytes(f"kbs/{old.id}/uploads/minutes.md", CANARY)  # e.g. a replica's late write
        assert c.post("/api/kbs", json={"name": "x"}, headers=b_key).status_code == 201
        new = lore.catalog.get_kb("x")
        assert new.id != old.id
        listed = c.get("/api/kbs/x/files", headers=b_key)
        assert listed.status_code == 200 and listed.json() == {"uploads": [], "indexed": []}
        r = c.get("/api/kbs/x/files/minutes.md", headers=b_key)
        assert r.status_code == 404 and b"QXBOARD" not in r.content
        r = c.get("/api/kbs/x/versions/1/report", headers=b_key)
        assert r.status_code == 404 and "QXBOARD" not in r.text
        r = c.post("/api/kbs/x/ingest", json={}, headers=b_key)
        assert r.status_code == 400 and "QXBOARD" not in r.text  # no upload of B's to ingest
    lore.close()


def test_files_are_kept_under_the_kb_id_and_go_with_it(tmp_path: Path) -> None:
    """Uploads, pending removals, reports with calibration and the web page cache live under the id; the
    name appears in no stored path; deleting the KB removes all of it, and any by-name folder of it too."""
    home = tmp_path / "home"
    lore = _lore(home)
    kb = lore.create_kb("hb")
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with TestClient(create_app(lore, run_preflight=False)) as c:
        for name in ("note.md", "gone.md"):
            r = c.post("/api/kbs/hb/files", files={"file": (name, NOTE)}, headers=auth(secret))
            assert r.status_code == 201, r.text
        assert build_and_wait(c, "hb", {"activate": True}, auth(secret))["status"] == "succeeded"
        assert c.delete("/api/kbs/hb/files/gone.md", headers=auth(secret)).status_code == 200
        report = c.get("/api/kbs/hb/versions/1/report", headers=auth(secret))
        assert report.status_code == 200 and report.json()["files"]
    assert [e.name for e in lore.storage.list(f"kbs/{kb.id}/uploads")] == ["note.md"]
    assert lore.storage.read_bytes(f"kbs/{kb.id}/uploads/.removals.json") == b'["gone.md"]'
    assert {e.name for e in lore.storage.list(f"kbs/{kb.id}/reports/1")} >= {"quality.json", "quality.md"}
    assert lore.reports_dir("hb") == lore.storage.path(f"kbs/{kb.id}/reports")
    assert cache_dir(home, kb) == home / "kbs" / kb.id / "web"
    stored = [p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()]
    assert not [p for p in stored if "hb" in p.split("/")]  # the name keys nothing
    cache_dir(home, kb).mkdir(parents=True)
    (cache_dir(home, kb) / "pages.json").write_text("{}", encoding="utf-8")
    lore.storage.write_bytes("uploads/hb/legacy.md", NOTE)  # written by an older replica meanwhile
    lore.delete_kb("hb")
    assert not (home / "kbs" / kb.id).exists() and lore.storage.folders("uploads") == []
    lore.close()


def _old_layout(lore: Lore, kb: KnowledgeBase) -> None:
    """Put a built KB's stored files where older Lore kept them: under its name."""
    s, home = lore.storage, lore.settings.home
    for key in [f"kbs/{kb.id}/uploads/{e.name}" for e in s.list(f"kbs/{kb.id}/uploads")] + [
        f"kbs/{kb.id}/reports/1/{e.name}" for e in s.list(f"kbs/{kb.id}/reports/1")
    ]:
        data = s.read_bytes(key)
        assert data is not None
        old = key.replace(f"kbs/{kb.id}/uploads", "uploads/hb").replace(f"kbs/{kb.id}/reports", "reports/hb")
        s.write_bytes(old, data)
    s.delete_prefix(f"kbs/{kb.id}")
    s.write_bytes("uploads/hb/.owners.json", json.dumps({"note.md": "default"}).encode())
    (home / "web" / "hb").mkdir(parents=True)
    (home / "web" / "hb" / "pages.json").write_text('{"pages": {}}', encoding="utf-8")
    s.write_bytes("uploads/gone/secret.md", CANARY)  # a KB deleted long ago left this
    s.write_bytes("reports/gone/1/quality.json", b'{"files": ["QXBOARD"]}')


def _moved(s: Storage, kb: KnowledgeBase) -> set[str]:
    return {e.name for e in s.list(f"kbs/{kb.id}/uploads")} | {
        f"reports/{e.name}" for e in s.list(f"kbs/{kb.id}/reports/1")
    }


@pytest.mark.parametrize("kind", ["dir", "s3"])
def test_an_old_home_opens_with_its_files_found_by_id(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    storage = _storage(kind, tmp_path, request)
    home = tmp_path / "home"
    first = _lore(home, storage)
    kb = first.create_kb("hb")
    _, secret = first.catalog.create_api_key("default", ["admin"])
    first.storage.write_bytes(f"kbs/{kb.id}/uploads/note.md", NOTE)
    first.build("hb", [first.storage.fetch(f"kbs/{kb.id}/uploads/note.md") or Path()], activate=True)
    _old_layout(first, kb)
    first.close()

    lore = _lore(home, storage)  # a process of this Lore opens the old home
    with TestClient(create_app(lore, run_preflight=False)) as c:
        listed = c.get("/api/kbs/hb/files", headers=auth(secret)).json()
        assert [u["name"] for u in listed["uploads"]] == ["note.md"]
        assert c.get("/api/kbs/hb/files/note.md", headers=auth(secret)).content == NOTE
        report = c.get("/api/kbs/hb/versions/1/report", headers=auth(secret))
        assert report.status_code == 200 and report.json()["files"]
    s = lore.storage
    assert _moved(s, kb) >= {"note.md", "reports/quality.json", "reports/quality.md"}
    assert s.read_bytes(f"kbs/{kb.id}/uploads/.owners.json")  # hidden files move too
    assert (home / "kbs" / kb.id / "web" / "pages.json").is_file() and not (home / "web" / "hb").exists()
    assert s.folders("uploads") == ["gone"] and s.folders("reports") == ["gone"]  # a deleted KB's: left
    before = _moved(s, kb)
    assert move_legacy_files(s, home, {"hb": kb.id}) == 0  # idempotent: nothing left to move
    again = _lore(home, storage)
    assert again.catalog.list_kbs() and _moved(again.storage, kb) == before
    # a new KB named like the deleted one adopts nothing of it; its by-name leftovers are purged
    gone = again.create_kb("gone", owner_tenant=B)
    assert again.storage.list(f"kbs/{gone.id}/uploads") == [] and again.storage.folders("uploads") == []
    assert again.storage.read_bytes("reports/gone/1/quality.json") is None
    again.close()
    lore.close()


@pytest.mark.parametrize("kind", ["dir", "s3"])
def test_two_processes_moving_at_once_move_each_file_once(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """Two processes open the old home at the same moment: each file ends up at its id once, with its
    bytes, the old folder is gone, and a file already at the new place (newer) is kept."""
    storage = _storage(kind, tmp_path, request)
    one = _lore(tmp_path / "one", storage, tmp_path / "catalog.db")
    two = _lore(tmp_path / "two", storage, tmp_path / "catalog.db")
    kb = one.create_kb("hb")
    names = [f"doc-{i:02d}.md" for i in range(40)]
    for name in names:
        one.storage.write_bytes(f"uploads/hb/{name}", f"# {name}\n\nold bytes of {name}\n".encode())
        one.storage.write_bytes(f"reports/hb/1/{name}.json", b"{}")
    one.storage.write_bytes(f"kbs/{kb.id}/uploads/doc-00.md", b"# newer\n")  # written by this Lore
    gate = threading.Barrier(2)
    moved: list[int] = []
    errors: list[BaseException] = []

    def run(lore: Lore) -> None:
        try:
            gate.wait(timeout=60)
            moved.append(move_legacy_files(lore.storage, lore.settings.home, {"hb": kb.id}))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(lore,)) for lore in (one, two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(moved) == 2, errors
    s = two.storage
    assert [e.name for e in s.list(f"kbs/{kb.id}/uploads")] == names
    assert s.read_bytes(f"kbs/{kb.id}/uploads/doc-00.md") == b"# newer\n"
    assert s.read_bytes(f"kbs/{kb.id}/uploads/doc-07.md") == b"# doc-07.md\n\nold bytes of doc-07.md\n"
    assert len(s.list(f"kbs/{kb.id}/reports/1")) == len(names)
    assert s.folders("uploads") == [] and s.folders("reports") == []
    if kind == "dir":  # a rename happens once: the two counts add up to the files moved
        assert sum(moved) == 2 * len(names) - 1
    assert move_legacy_files(s, two.settings.home, {"hb": kb.id}) == 0
    one.close()
    two.close()


def test_a_backup_of_an_old_home_restores_with_its_files_by_id(tmp_path: Path) -> None:
    """`lore backup` copies stored files as they are; a backup of a by-name home restored into a new home
    opens with its files moved to the id."""
    old = _lore(tmp_path / "old")
    kb = old.create_kb("hb")
    old.storage.write_bytes("uploads/hb/note.md", NOTE)  # the older layout, written behind Lore's back
    manifest = backup(old.catalog, old.settings, tmp_path / "bk.tar")
    assert manifest["files"]["count"] >= 1
    old.close()
    home = tmp_path / "restored"
    restore(load_settings(home=home, catalog_url=f"sqlite:///{home / 'catalog.db'}"), tmp_path / "bk.tar")
    lore = _lore(home)
    assert lore.catalog.get_kb("hb").id == kb.id
    assert lore.storage.read_bytes(f"kbs/{kb.id}/uploads/note.md") == NOTE
    assert lore.storage.folders("uploads") == []
    lore.close()


def test_an_unreachable_bucket_never_stops_the_catalog_opening(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The move is retried on the next start; until then the catalog opens and says why files wait."""
    down = {
        "url": "s3://nowhere/lore",
        "endpoint_url": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "region": "us-east-1",
        "access_key_id": "test",
        "secret_access_key": "test",
        "timeout_s": "2",
    }
    lore = _lore(tmp_path / "home", down)
    with caplog.at_level(logging.WARNING, logger="lore.engine.wiring"):
        assert lore.catalog.list_kbs() == []
    assert "not moved to their id yet" in caplog.text and "unreachable" in caplog.text
    lore.close()


def test_a_build_queued_before_the_move_finds_its_uploads_by_id(tmp_path: Path) -> None:
    """A build job queued by an older Lore names its inputs `storage:uploads/<name>/...`; after the move the
    worker finds them under the KB's id."""
    from lore.api.jobs import _input_path

    lore = _lore(tmp_path / "home")
    kb = lore.create_kb("hb", owner_tenant=A)
    lore.storage.write_bytes(f"kbs/{kb.id}/uploads/note.md", NOTE)
    path = _input_path(lore, "hb", "storage:uploads/hb/note.md")
    assert path.read_bytes() == NOTE
    missing = _input_path(lore, "hb", "storage:uploads/hb/gone.md")
    assert not missing.exists()  # deleted since: the build reports "no such file"
    lore.close()
