"""Knowledge bases from before migration 0005 get their owners and shares from their content (0007 + the
backfill), and the access rules hold for them afterwards: a catalog at 0004 with real data is upgraded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from lore.api import create_app
from lore.catalog.migrate import alembic_config, head_revision
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth
from tests.conftest import migrated

A, B, C = "acme", "bluefin", "cyan"
SECRET = {A: "QXUPGACMEQ", B: "QXUPGBLUEFINQ"}


def _doc(folder: Path, name: str, tenant: str) -> Path:
    path = folder / name
    path.write_text(
        f"# Parking\n\nThe parking rule of {tenant} is code {SECRET[tenant]}.\n", encoding="utf-8"
    )
    return path


def _migrate(url: str, revision: str, down: bool = False) -> None:
    from alembic import command

    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            (command.downgrade if down else command.upgrade)(alembic_config(connection=conn), revision)
    finally:
        engine.dispose()


def _owners(url: str) -> dict[str, str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(text("SELECT name, owner_tenant FROM knowledge_bases")).all())
    finally:
        engine.dispose()


@pytest.fixture
def old_home(db_url: str, tmp_path: Path) -> tuple[Path, str]:
    """A home whose catalog is at revision 0004 holding: `mixed` (acme's file first, then bluefin's), `solo`
    (bluefin's only), `empty`, and `pending` (an upload of bluefin's recorded only in `.owners.json`)."""
    home = tmp_path / "home"
    lore = Lore(load_settings(home=home, catalog_url=migrated(db_url)))
    for name in ("mixed", "solo", "empty", "pending"):
        lore.create_kb(name)
    for kb, name, tenant in (("mixed", "a.md", A), ("mixed", "b.md", B), ("solo", "s.md", B)):
        src = home / "uploads" / kb  # originals are uploads
        src.mkdir(parents=True, exist_ok=True)
        report = lore.ingest(
            kb, [_doc(src, name, tenant)], chunk_metadata=lambda _s, t=tenant: {"tenant_id": t}
        )
        assert report.count("ingested") == 1
    lore.close()
    _migrate(db_url, "0004", down=True)  # as it was before 0005: no owners, shares nor file owners
    folder = home / "uploads" / "pending"
    folder.mkdir(parents=True)
    _doc(folder, "p.md", B)
    (folder / ".owners.json").write_text(json.dumps({"p.md": B, "gone.md": A}), encoding="utf-8")
    return home, db_url


def test_upgrade_from_0004_backfills_owners_and_access_holds(old_home: tuple[Path, str]) -> None:
    home, url = old_home
    migrated(url)
    assert set(_owners(url).values()) == {""}  # 0007: ownership was never recorded; nobody's until backfilled
    lore = Lore(load_settings(home=home, catalog_url=url, api={"rate_limit_per_minute": 0}))
    cat = lore.catalog
    keys = {
        "a_admin": (A, ["admin"]),
        "a_employee": (A, ["employee"]),
        "b_employee": (B, ["employee"]),
        "b_admin": (B, ["admin"]),
        "c_platform": (C, ["admin", "platform-admin"]),
    }
    secrets = {k: cat.create_api_key(t, roles)[1] for k, (t, roles) in keys.items()}
    with TestClient(create_app(lore, run_preflight=True)) as client:  # the preflight runs the backfill
        got = {kb.name: (kb.owner_tenant, cat.kb_tenants(kb.id)[1]) for kb in cat.list_kbs()}
        assert got == {
            "mixed": (A, frozenset({B})),
            "solo": (B, frozenset()),
            "empty": (None, frozenset()),
            "pending": (B, frozenset()),
        }
        assert cat.file_owners(cat.get_kb("mixed").id) == {"a.md": A, "b.md": B}
        assert cat.file_owners(cat.get_kb("pending").id) == {"p.md": B}  # the vanished upload is dropped
        assert {e.kb for e in cat.audit_log() if e.action == "owner"} == {"mixed", "solo", "pending"}

        def listed(key: str) -> set[str]:
            return {kb["name"] for kb in client.get("/api/kbs", headers=auth(secrets[key])).json()}

        assert listed("a_admin") == {"mixed"}
        assert listed("b_employee") == {"mixed", "solo", "pending"}
        assert listed("c_platform") == set()
        for key, mine, theirs in (("a_employee", A, B), ("b_employee", B, A)):
            r = client.post(
                "/api/search", headers=auth(secrets[key]), json={"kb": "mixed", "query": "parking rule code"}
            )
            assert r.status_code == 200 and SECRET[mine] in r.text and SECRET[theirs] not in r.text
        # acme's admin cannot rebuild what holds bluefin's documents (only unshare or delete it, as owner);
        # acme cannot open b.md
        r = client.post("/api/kbs/mixed/builds", json={}, headers=auth(secrets["a_admin"]))
        assert r.status_code == 403
        r = client.get("/api/kbs/mixed/files/b.md", headers=auth(secrets["a_admin"]))
        assert r.status_code == 404 and SECRET[B] not in r.text
        r = client.get("/api/kbs/mixed/files/b.md", headers=auth(secrets["b_employee"]))
        assert r.status_code == 200 and SECRET[B] in r.text and SECRET[A] not in r.text
        assert client.get("/api/kbs/pending/files/p.md", headers=auth(secrets["b_admin"])).status_code == 200
        assert client.get("/api/kbs/pending/files/p.md", headers=auth(secrets["a_admin"])).status_code == 404
        # a KB without owner is exactly an unknown one for every key, a platform admin's included
        for secret in secrets.values():
            for method, path in (
                ("get", "/api/kbs/{}"),
                ("delete", "/api/kbs/{}"),
                ("get", "/api/kbs/{}/files"),
            ):
                r = client.request(method.upper(), path.format("empty"), headers=auth(secret))
                unknown = client.request(method.upper(), path.format("nosuch"), headers=auth(secret))
                assert r.status_code == unknown.status_code == 404
                assert r.json()["detail"] == unknown.json()["detail"].replace("nosuch", "empty")
        r = client.post(
            "/api/kbs/empty/files",
            headers=auth(secrets["c_platform"]),
            files={"file": ("x.md", b"# X\n\ntake over\n", "text/markdown")},
        )
        assert r.status_code == 404
        # the operator gives it an owner; then it is that tenant's alone
        assert cat.set_kb_owner(cat.get_kb("empty").id, A) is None
        assert listed("a_admin") == {"mixed", "empty"} and "empty" not in listed("c_platform")
    lore.close()
    assert _owners(url) == {"mixed": A, "solo": B, "empty": A, "pending": B}


def test_kbs_made_after_0005_keep_their_owner(db_url: str, tmp_path: Path) -> None:
    """0007 leaves alone what 0005 recorded: a KB with shares, file owners or made through the API."""
    url = migrated(db_url)
    lore = Lore(load_settings(home=tmp_path / "home", catalog_url=url))
    lore.create_kb("owned", owner_tenant=A)
    shared = lore.create_kb("shared")
    lore.catalog.share_kb(shared.id, B)
    filed = lore.create_kb("filed")
    lore.catalog.claim_files(filed.id, ["f.md"], "default")
    lore.create_kb("api")
    lore.catalog.audit("create", tenant="default", key_id="k1", kb="api", target="api")
    lore.create_kb("cli")
    lore.close()
    _migrate(url, "0006", down=True)
    _migrate(url, "head")
    assert _owners(url) == {"owned": A, "shared": "default", "filed": "default", "api": "default", "cli": ""}


def test_lore_db_upgrade_backfills_and_lore_kb_owner_names_one(
    old_home: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from lore.cli.main import app

    home, url = old_home
    monkeypatch.setenv("LORE_HOME", str(home))
    monkeypatch.setenv("LORE_CATALOG_URL", url)
    runner = CliRunner()
    out = runner.invoke(app, ["db", "upgrade"])
    assert out.exit_code == 0, out.output
    printed = " ".join(out.output.split())  # the console wraps long lines
    assert f"migrated from 0004 to {head_revision()}" in printed
    assert "knowledge base 'mixed': owner acme from its 2 file(s), shared with bluefin" in printed
    assert "knowledge base 'empty' has no owner (it has no content)" in printed
    out = runner.invoke(app, ["kb", "share", "empty", C])
    assert out.exit_code == 2 and "has no owner" in out.output  # sharing nobody's KB would hand it over
    out = runner.invoke(app, ["kb", "owner", "empty", C])
    assert out.exit_code == 0 and _owners(url)["empty"] == C
    out = runner.invoke(app, ["kb", "owner", "mixed", B])
    assert out.exit_code == 0 and "acme keeps a share" in " ".join(out.output.split())
    lore = Lore(load_settings(home=home, catalog_url=url))
    assert lore.catalog.kb_tenants(lore.catalog.get_kb("mixed").id) == (B, frozenset({A}))
    assert [e.target for e in lore.catalog.audit_log(kb="mixed") if e.action == "owner"] == [B, A]
    lore.close()
