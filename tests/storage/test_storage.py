"""Both storages behind one protocol: a directory, and an S3 bucket on a real S3-protocol server
(`moto_server`, started here) through real boto3 calls."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.errors import ConfigError, MissingDependencyError, UnavailableError
from lore.storage import DirStorage, Entry, Storage, open_storage
from lore.storage.s3 import S3Storage, parse_url
from tests.servers import MotoServer, moto_server


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


def _s3(moto: MotoServer, home: Path, bucket: str) -> Storage:
    return open_storage(load_settings(home=home, storage=moto.storage_settings(bucket)))


@pytest.fixture(params=["dir", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "dir":
        return open_storage(load_settings(home=tmp_path / "home", storage={"dir": str(tmp_path / "shared")}))
    return _s3(request.getfixturevalue("moto"), tmp_path / "home", f"b-{uuid.uuid4().hex[:10]}")


def test_put_read_list_fetch_delete(storage: Storage, tmp_path: Path) -> None:
    assert isinstance(storage, Storage)
    src = tmp_path / "upload.tmp"
    src.write_bytes(b"# Handbook\n")
    storage.put("uploads/hb/handbook.md", src)
    assert not src.exists()  # moved in
    storage.write_bytes("uploads/hb/b.txt", b"bee")
    storage.write_bytes("uploads/hb/.hidden", b"x")
    storage.write_bytes("uploads/hb/sub/deeper.txt", b"not a direct child")
    storage.write_bytes("uploads/other/c.txt", b"c")
    assert storage.list("uploads/hb") == [Entry("b.txt", 3), Entry("handbook.md", 11)]
    assert storage.read_bytes("uploads/hb/b.txt") == b"bee"
    assert storage.read_bytes("uploads/hb/nothing.txt") is None
    local = storage.fetch("uploads/hb/handbook.md")
    assert local is not None and local.read_bytes() == b"# Handbook\n"
    assert storage.key_of(local) == "uploads/hb/handbook.md"
    assert storage.key_of(tmp_path / "elsewhere.md") is None
    assert storage.fetch("uploads/hb/nothing.txt") is None
    storage.write_bytes("uploads/hb/b.txt", b"replaced")  # overwrite
    assert storage.read_bytes("uploads/hb/b.txt") == b"replaced"
    assert storage.delete("uploads/hb/b.txt") and not storage.delete("uploads/hb/b.txt")  # one file
    assert (
        storage.list("uploads/hb") == [Entry("handbook.md", 11)] and storage.fetch("uploads/hb/b.txt") is None
    )
    storage.delete_prefix("uploads/hb")
    assert storage.list("uploads/hb") == [] and storage.fetch("uploads/hb/handbook.md") is None
    assert storage.list("uploads/other") == [Entry("c.txt", 1)]
    storage.check()


def test_reports_written_in_place_are_published(storage: Storage) -> None:
    path = storage.path("reports/hb/1/quality.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"ok": true}', encoding="utf-8")
    storage.publish("reports/hb/1/quality.json")
    assert storage.read_bytes("reports/hb/1/quality.json") == b'{"ok": true}'


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a", "a\\b"])
def test_bad_keys_are_refused(storage: Storage, key: str) -> None:
    with pytest.raises(ValueError):
        storage.path(key)


def test_two_processes_share_the_bucket_and_see_changes(moto: MotoServer, tmp_path: Path) -> None:
    bucket = f"b-{uuid.uuid4().hex[:10]}"
    a = _s3(moto, tmp_path / "a", bucket)
    b = open_storage(load_settings(home=tmp_path / "b", storage={**moto.storage_settings_for(bucket)}))
    a.write_bytes("uploads/hb/h.md", b"first")
    seen = b.fetch("uploads/hb/h.md")
    assert seen is not None and seen.read_bytes() == b"first" and seen.is_relative_to(tmp_path / "b")
    a.write_bytes("uploads/hb/h.md", b"fresh")  # same size, same second: the ETag tells them apart
    assert (b.fetch("uploads/hb/h.md") or Path()).read_bytes() == b"fresh"  # stale copy refreshed
    a.delete_prefix("uploads/hb")
    assert b.fetch("uploads/hb/h.md") is None and not seen.exists()


def test_url_and_missing_bucket_and_unreachable_server(moto: MotoServer, tmp_path: Path) -> None:
    assert parse_url("s3://bucket/a/b/") == ("bucket", "a/b") and parse_url("s3://bucket") == ("bucket", "")
    for bad in ("s3://", "s3:///x", "http://bucket/x"):
        with pytest.raises(ConfigError):
            parse_url(bad)
    with pytest.raises(ConfigError, match="storage.url"):
        load_settings(home=tmp_path, storage={"url": "minio://bucket"})
    settings = {**moto.storage_settings_for("never-created")}
    missing = open_storage(load_settings(home=tmp_path, storage=settings))
    with pytest.raises(UnavailableError, match="does not exist"):
        missing.check()
    down = open_storage(
        load_settings(
            home=tmp_path, storage={**settings, "endpoint_url": "http://127.0.0.1:9", "timeout_s": 1}
        )
    )
    with pytest.raises(UnavailableError, match="unreachable"):
        down.read_bytes("x")


def test_the_directory_is_the_default_and_boto3_is_only_needed_for_a_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(open_storage(load_settings(home=tmp_path)), DirStorage)
    monkeypatch.setitem(__import__("sys").modules, "boto3", None)
    with pytest.raises(MissingDependencyError, match=r"lore-kb\[s3\]"):
        S3Storage(load_settings(home=tmp_path, storage={"url": "s3://x"}).storage, tmp_path)


def test_an_unreachable_bucket_is_503_for_uploads_and_not_ready(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from lore.api import create_app
    from lore.engine import Lore

    storage = {
        "url": "s3://gone/x",
        "endpoint_url": "http://127.0.0.1:9",
        "timeout_s": 1,
        "region": "us-east-1",
    }
    made = Lore(load_settings(home=tmp_path))  # made while storage is up (a new KB purges leftovers there)
    made.create_kb("hb")
    made.close()
    lore = Lore(
        load_settings(home=tmp_path, storage={**storage, "access_key_id": "a", "secret_access_key": "b"})
    )
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with TestClient(create_app(lore, run_preflight=False), raise_server_exceptions=False) as c:
        r = c.post(
            "/api/kbs/hb/files",
            headers={"Authorization": f"Bearer {secret}"},
            files={"file": ("h.md", b"# H\n", "text/markdown")},
        )
        assert r.status_code == 503, r.text
        assert (
            c.get("/api/kbs/hb/files/h.md", headers={"Authorization": f"Bearer {secret}"}).status_code == 503
        )
        ready = c.get("/api/ready")
        assert ready.status_code == 503 and ready.json()["checks"]["storage"].startswith("unreachable")
    assert not list((tmp_path / "storage-cache").rglob("h.md"))  # the temp file is gone too
    lore.close()
