"""API keys that expire and record their last use: an expired key is a 401 that says so, a key's last use
is written at most once a minute, and both show in the tenant's key list."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth


@pytest.fixture(name="lore")
def lore_fixture(tmp_path: Path) -> Iterator[Lore]:
    lore = Lore(
        load_settings(home=tmp_path / "home", worker={"in_process": False}, api={"rate_limit_per_minute": 0})
    )
    yield lore
    lore.close()


def test_an_expired_key_is_refused_with_401(lore: Lore) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    _, expired = lore.catalog.create_api_key("default", ["admin"], expires_at=past)
    _, live = lore.catalog.create_api_key("default", ["admin"], expires_at=past + timedelta(days=1))
    with TestClient(create_app(lore)) as client:
        r = client.get("/api/me", headers=auth(expired))
        assert r.status_code == 401 and "expired" in r.json()["detail"]
        assert r.headers["www-authenticate"] == "Bearer"
        assert client.get("/api/me", headers=auth(live)).status_code == 200
        r = client.get("/api/me", headers=auth("lore_nope"))
        assert r.status_code == 401 and "expired" not in r.json()["detail"]
    assert lore.catalog.authenticate(expired) is None and lore.catalog.authenticate(live) is not None


def test_keys_are_created_with_an_expiry_and_list_it_with_their_last_use(lore: Lore) -> None:
    _, admin = lore.catalog.create_api_key("default", ["admin", "platform-admin"])
    with TestClient(create_app(lore), headers=auth(admin)) as client:
        before = datetime.now(UTC)
        r = client.post("/api/keys", json={"roles": ["employee"], "expires_in_days": 30})
        assert r.status_code == 201, r.text
        made = r.json()
        expires = datetime.fromisoformat(made["expires_at"])
        assert before + timedelta(days=30) <= expires <= datetime.now(UTC) + timedelta(days=30)
        assert made["last_used_at"] is None
        for bad in (0, -1, 3651, "soon"):
            r = client.post("/api/keys", json={"roles": [], "expires_in_days": bad})
            assert r.status_code == 422, bad
        client.get("/api/me", headers=auth(made["secret"]))
        keys = {k["id"]: k for k in client.get("/api/keys").json()}
        assert keys[made["id"]]["last_used_at"] is not None and keys[made["id"]]["expires_at"]
        never = client.post("/api/keys", json={"roles": []}).json()
        assert never["expires_at"] is None


def test_last_use_is_written_at_most_once_a_minute(lore: Lore) -> None:
    key, secret = lore.catalog.create_api_key("default", [])
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def last_used() -> datetime | None:
        return next(k.last_used_at for k in lore.catalog.list_api_keys() if k.id == key.id)

    assert last_used() is None
    assert lore.catalog.use_api_key(secret, now=t0) is not None and last_used() == t0
    lore.catalog.use_api_key(secret, now=t0 + timedelta(seconds=59))
    assert last_used() == t0  # within the minute: no write
    lore.catalog.use_api_key(secret, now=t0 + timedelta(seconds=61))
    assert last_used() == t0 + timedelta(seconds=61)
    lore.catalog.revoke_api_key(key.id)
    assert lore.catalog.use_api_key(secret, now=t0 + timedelta(hours=1)) is None
    assert last_used() == t0 + timedelta(seconds=61)  # a revoked key's use is not recorded
