"""Two replicas with their own LORE_HOME but one catalog, store and storage (a shared directory, or an S3
bucket on a real S3-protocol server, `moto_server`) serve each other's files."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.storage.layout import reports_key, uploads_key
from tests.api.conftest import auth, build_and_wait
from tests.conftest import EXAMPLES
from tests.servers import MotoServer, moto_server


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


def _replica(tmp_path: Path, name: str, shared: bool | dict[str, str]) -> Lore:
    storage = shared if isinstance(shared, dict) else {"dir": str(tmp_path / "shared")} if shared else {}
    return Lore(
        load_settings(
            home=tmp_path / name,
            catalog_url=f"sqlite:///{tmp_path / 'catalog.db'}",
            store={"uri": str(tmp_path / "store")},
            api={"rate_limit_per_minute": 0},
            storage=storage,
        )
    )


@pytest.mark.parametrize("kind", ["dir", "s3"])
def test_upload_and_report_of_one_replica_are_served_by_the_other(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    bucket = f"hb-{uuid.uuid4().hex[:10]}"
    shared = request.getfixturevalue("moto").storage_settings(bucket) if kind == "s3" else True
    a, b = _replica(tmp_path, "a", shared), _replica(tmp_path, "b", shared)
    a.create_kb("hb")
    _, secret = a.catalog.create_api_key("default", ["admin"])
    body = (EXAMPLES / "employee_handbook.md").read_bytes()
    with (
        TestClient(create_app(a, run_preflight=False)) as ca,
        TestClient(create_app(b, run_preflight=False)) as cb,
    ):
        up = ca.post(
            "/api/kbs/hb/files", headers=auth(secret), files={"file": ("handbook.md", body, "text/markdown")}
        )
        assert up.status_code == 201, up.text
        listed = cb.get("/api/kbs/hb/files", headers=auth(secret)).json()
        assert [u["name"] for u in listed["uploads"]] == ["handbook.md"]
        assert cb.get("/api/kbs/hb/files/handbook.md", headers=auth(secret)).content == body
        built = build_and_wait(cb, "hb", {"activate": True}, auth(secret))  # B reads A's upload
        assert built["status"] == "succeeded", built
        seq = built["result"]["version"]["seq"]
        report = ca.get(f"/api/kbs/hb/versions/{seq}/report", headers=auth(secret))  # A reads B's report
        assert report.status_code == 200 and report.json()["files"]
        record = b.catalog.get_kb("hb")
        assert b.storage.read_bytes(f"{reports_key(record, seq)}/quality.json")  # in the shared storage
        assert not (tmp_path / "a" / "kbs").exists()  # nothing of the KB's is kept in A's home
        ca.delete("/api/kbs/hb", headers=auth(secret))
        assert cb.get("/api/kbs/hb/files/handbook.md", headers=auth(secret)).status_code == 404
    if kind == "s3":  # every file went through the bucket; no shared directory at all
        assert not (tmp_path / "shared").exists()
        assert b.storage.list(uploads_key(record)) == []
    # the delete took the KB's reports with it (issue 34: nothing of a deleted KB is left)
    assert b.storage.read_bytes(f"{reports_key(record, seq)}/quality.json") is None
    a.close()
    b.close()


def test_without_a_shared_storage_dir_the_other_replica_has_no_such_upload(tmp_path: Path) -> None:
    a, b = _replica(tmp_path, "a", False), _replica(tmp_path, "b", False)
    a.create_kb("hb")
    _, secret = a.catalog.create_api_key("default", ["admin"])
    with (
        TestClient(create_app(a, run_preflight=False)) as ca,
        TestClient(create_app(b, run_preflight=False)) as cb,
    ):
        assert (
            ca.post(
                "/api/kbs/hb/files",
                headers=auth(secret),
                files={"file": ("h.md", b"# H\n\nhello there\n", "text/markdown")},
            ).status_code
            == 201
        )
        assert cb.get("/api/kbs/hb/files/h.md", headers=auth(secret)).status_code == 404
    a.close()
    b.close()
