"""A PostgreSQL catalog that goes away mid-run (restart, failover): requests answer 503 with Retry-After
and a message naming no server, never a 500; once the database is back, requests work again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth
from tests.conftest import _SERVERS, fresh_database, migrated, server_absent


@pytest.fixture()
def pg_url(tmp_path: Path) -> Iterator[str]:
    if reason := server_absent("postgresql"):
        pytest.skip(reason)
    with fresh_database("postgresql", tmp_path) as url:
        yield migrated(url)


def _admin() -> object:
    base, admin_db, _ = _SERVERS["postgresql"]
    return create_engine(base + admin_db, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def _take_away(name: str, to: str) -> None:
    """End every session on database `name` and rename it: the catalog's server is gone for Lore."""
    admin = _admin()
    with admin.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(
            text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
        )
        conn.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{to}"'))
    admin.dispose()  # type: ignore[attr-defined]


def test_catalog_outage_answers_503_with_retry_after(pg_url: str, tmp_path: Path) -> None:
    name = pg_url.rsplit("/", 1)[1]
    lore = Lore(
        load_settings(
            home=tmp_path / "home",
            catalog_url=pg_url,
            api={"rate_limit_per_minute": 0},
            worker={"in_process": False},  # no background polling: only the requests below touch it
        )
    )
    lore.create_kb("hb")
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    away = f"{name}_away"
    try:
        with TestClient(create_app(lore, run_preflight=False), headers=auth(secret)) as client:
            assert client.get("/api/kbs").status_code == 200
            _take_away(name, away)
            try:
                for method, path, body in (
                    ("GET", "/api/kbs", None),
                    ("GET", "/api/kbs/hb", None),
                    ("POST", "/api/kbs", {"name": "new"}),
                    ("GET", "/api/kbs/hb/versions", None),
                ):
                    r = client.request(method, path, json=body)
                    assert r.status_code == 503, (path, r.status_code, r.text)
                    assert int(r.headers["retry-after"]) > 0
                    assert "catalog" in r.json()["detail"]
                    for leak in ("127.0.0.1", "5432", "postgres", name, "Error"):
                        assert leak not in r.text, r.text
            finally:
                _take_away(away, name)
            assert client.get("/api/kbs").status_code == 200  # back: the pool reconnects
    finally:
        lore.close()
