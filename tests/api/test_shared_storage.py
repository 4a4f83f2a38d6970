"""Two replicas with their own LORE_HOME but one catalog, store and storage dir serve each other's files."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth, build_and_wait
from tests.conftest import EXAMPLES


def _replica(tmp_path: Path, name: str, shared: bool) -> Lore:
    return Lore(
        load_settings(
            home=tmp_path / name,
            catalog_url=f"sqlite:///{tmp_path / 'catalog.db'}",
            store={"uri": str(tmp_path / "store")},
            api={"rate_limit_per_minute": 0},
            storage={"dir": str(tmp_path / "shared")} if shared else {},
        )
    )


def test_upload_and_report_of_one_replica_are_served_by_the_other(tmp_path: Path) -> None:
    a, b = _replica(tmp_path, "a", True), _replica(tmp_path, "b", True)
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
    assert not (tmp_path / "a" / "uploads").exists() and (tmp_path / "shared" / "uploads" / "hb").is_dir()
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
