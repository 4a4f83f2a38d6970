"""A build over the API starts from the KB's files: the console's first build of a CLI-ingested KB keeps
them (issue 34, finding 4); files go only when named, and a gated build fails on a removal not asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.ingest.build import Removal
from tests.api.conftest import auth, build_and_wait

HANDBOOK = {
    f"policy{i}.md": f"# Policy {i}\n\nRule {i}: employees in office {i} get {10 + i} days of annual leave "
    f"each year, booked through the staff portal at least {i + 2} days ahead.\n"
    for i in range(5)
}
INGESTED = {f"handbook/{name}" for name in HANDBOOK}  # names as a folder ingest records them
UPLOADS = {
    "bond.md": "# Bond prospectus\n\nThe bond pays a coupon of 3.2 percent, twice a year, until 2031.\n",
    "fund.md": "# Fund notes\n\nThe fund invests in listed infrastructure companies across Asia.\n",
}


@pytest.fixture
def served(tmp_path: Path):
    """A KB ingested as the operator's CLI does (no versions yet), and an admin client of the service."""
    folder = tmp_path / "handbook"
    folder.mkdir()
    for name, text in HANDBOOK.items():
        (folder / name).write_text(text, encoding="utf-8")
    lore = Lore(load_settings(home=tmp_path / "home", api={"rate_limit_per_minute": 0}))
    lore.create_kb("hb")
    assert lore.ingest("hb", [folder]).count("ingested") == 5
    _, admin = lore.catalog.create_api_key("default", ["admin"])
    try:
        with TestClient(create_app(lore), headers=auth(admin)) as client:
            yield lore, client, folder
    finally:
        lore.close()


def _upload(client: TestClient, files: dict[str, str]) -> None:
    for name, text in files.items():
        r = client.post("/api/kbs/hb/files", files={"file": (name, text.encode())})
        assert r.status_code == 201, r.text


def _version_files(lore: Lore, seq: int) -> set[str]:
    kb = lore.catalog.get_kb("hb")
    return set(lore.catalog.version_manifest(kb.id, seq))


def test_the_first_build_from_uploads_keeps_the_cli_ingested_files(served) -> None:
    lore, client, _ = served
    _upload(client, UPLOADS)
    job = build_and_wait(client, "hb", {"activate": True, "quality_gate": True})
    result = job["result"]
    assert result["removed"] == [] and result["gate_reasons"] == []
    assert _version_files(lore, 1) == INGESTED | set(UPLOADS)
    r = client.post("/api/search", json={"kb": "hb", "query": "annual leave office 3", "top_k": 3})
    assert r.status_code == 200, r.text
    assert r.json()["hits"][0]["file"] == "handbook/policy3.md"


def test_a_build_removes_the_files_it_names_and_lists_them(served) -> None:
    lore, client, _ = served
    _upload(client, UPLOADS)
    assert build_and_wait(client, "hb", {"activate": True})["result"]["removed"] == []
    job = build_and_wait(
        client, "hb", {"activate": True, "remove": ["handbook/policy0.md"], "quality_gate": True}
    )
    assert job["result"]["removed"] == ["handbook/policy0.md"] and job["result"]["gate_reasons"] == []
    assert _version_files(lore, 2) == (INGESTED | set(UPLOADS)) - {"handbook/policy0.md"}
    r = client.post("/api/kbs/hb/builds", json={"remove": ["nothere.md"]})
    assert r.status_code == 400 and "nothere.md" in r.json()["detail"]


def test_an_exact_build_that_drops_files_fails_the_gate_unless_asked(served) -> None:
    lore, client, _ = served
    _upload(client, UPLOADS)
    body = {"activate": True, "quality_gate": True, "mode": "exact"}
    job = build_and_wait(client, "hb", body)
    version, reasons = job["result"]["version"], job["result"]["gate_reasons"]
    assert version["status"] == "failed" or lore.catalog.active_version(lore.catalog.get_kb("hb").id) is None
    assert len(reasons) == 1 and "5 file(s) would be removed without being asked" in reasons[0]
    assert all(name in reasons[0] for name in INGESTED)
    job = build_and_wait(client, "hb", {**body, "allow_removal": True})
    assert job["result"]["gate_reasons"] == [] and sorted(job["result"]["removed"]) == sorted(INGESTED)


def test_a_cli_build_that_drops_files_fails_its_gate_without_remove_missing(served) -> None:
    lore, _, folder = served
    (folder / "policy4.md").unlink()
    result = lore.build("hb", [folder], quality_gate=True, removal=Removal(allowed=False))
    assert result.removed == ["handbook/policy4.md"] and result.version.gate_passed is False
    assert "handbook/policy4.md" in result.gate_reasons[0]
    # the failed version removed nothing: asked now, the file goes
    result = lore.build("hb", [folder], quality_gate=True, removal=Removal(allowed=True))
    assert result.version.gate_passed is True and result.removed == ["handbook/policy4.md"]


def test_an_upload_deleted_from_a_versioned_kb_leaves_at_its_next_build(served) -> None:
    lore, client, _ = served
    _upload(client, UPLOADS)
    build_and_wait(client, "hb", {"activate": True})
    r = client.delete("/api/kbs/hb/files/bond.md")
    assert r.status_code == 200 and "next build" in r.json()["note"]
    assert _version_files(lore, 1) >= {"bond.md"}  # the active version keeps it until then
    job = build_and_wait(client, "hb", {"activate": True, "quality_gate": True})
    assert job["result"]["removed"] == ["bond.md"] and job["result"]["gate_reasons"] == []
    assert _version_files(lore, 2) == INGESTED | {"fund.md"}
    _upload(client, {"bond.md": UPLOADS["bond.md"]})  # uploaded again: the next build holds it again
    build_and_wait(client, "hb", {"activate": True})
    assert _version_files(lore, 3) == INGESTED | set(UPLOADS)
