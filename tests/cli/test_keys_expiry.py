"""`lore keys create --expires` (a duration, a date or a date and time) and `lore keys list` with each key's
expiry and last use, against a real catalog; bad or past values are refused before any key is made."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from lore.catalog import Catalog
from lore.cli.access import key_expiry
from lore.cli.main import app

runner = CliRunner()
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("30d", NOW + timedelta(days=30)),
        ("12h", NOW + timedelta(hours=12)),
        ("2W", NOW + timedelta(weeks=2)),
        ("2026-12-31", datetime(2027, 1, 1, tzinfo=UTC)),  # valid through that day
        ("2026-06-01T09:30", datetime(2026, 6, 1, 9, 30, tzinfo=UTC)),
        ("2026-06-01T09:30+08:00", datetime(2026, 6, 1, 1, 30, tzinfo=UTC)),
    ],
)
def test_an_expiry_is_a_duration_a_date_or_a_time(value: str, expected: datetime) -> None:
    assert key_expiry(value, NOW) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("30 days", "give a duration"),
        ("2026-02-30", "give a duration"),
        ("2026-02-28", "has passed"),
        ("0d", "has passed"),
        ("3651d", "at most 3650 days"),
    ],
)
def test_a_bad_or_past_expiry_is_refused(value: str, why: str) -> None:
    with pytest.raises(typer.BadParameter, match=why):
        key_expiry(value, NOW)


def test_keys_are_made_with_an_expiry_and_listed_with_it_and_their_last_use(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = runner.invoke(
        app, ["keys", "create", "--tenant", "acme", "--name", "contractor", "--expires", "30d"]
    )
    assert made.exit_code == 0, made.output
    secret = made.output.strip().splitlines()[-1]
    forever = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--name", "service"])
    assert forever.exit_code == 0 and "expires never" in " ".join(forever.output.split())
    refused = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--expires", "yesterday"])
    assert refused.exit_code == 2 and "give a duration" in refused.output

    with Catalog(f"sqlite:///{home / 'catalog.db'}") as cat:
        keys = {k.name: k for k in cat.list_api_keys()}
        assert set(keys) == {"contractor", "service"}  # the refused one was never made
        expires = keys["contractor"].expires_at
        assert expires is not None
        assert 29.99 < (expires - keys["contractor"].created_at).total_seconds() / 86400 < 30.01
        assert keys["service"].expires_at is None
        assert f"expires {expires:%Y-%m-%d %H:%M};" in " ".join(made.output.split())  # rich may wrap it
        assert cat.use_api_key(secret) is not None  # the service records its use
        entry = next(
            e for e in cat.audit_log() if e.action == "key_create" and e.target == keys["contractor"].id
        )
        assert entry.detail["expires_at"] == expires.isoformat()

    listed = runner.invoke(app, ["keys", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.output)}
    assert rows["contractor"]["expires_at"] == expires.isoformat()
    assert rows["contractor"]["last_used_at"] is not None and rows["service"]["last_used_at"] is None
    assert rows["service"]["expires_at"] is None and "secret" not in rows["service"]

    # A console of fixed width: the module's own was sized when it was imported (80 columns without a tty).
    monkeypatch.setattr("lore.cli.service.console", Console(width=240))
    table = CliRunner().invoke(app, ["keys", "list"])
    assert table.exit_code == 0, table.output
    line = next(x for x in table.output.splitlines() if keys["contractor"].id in x)
    assert expires.strftime("%Y-%m-%d %H:%M") in line and "never" not in line
    assert next(x for x in table.output.splitlines() if keys["service"].id in x).count("never") == 1
