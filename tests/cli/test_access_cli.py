"""`lore kb create --tenant`, `lore kb share/unshare` and `lore audit`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.catalog import Catalog
from lore.cli.main import app

runner = CliRunner()


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_owner_shares_and_audit(home: Path) -> None:
    result = runner.invoke(app, ["kb", "create", "hb", "--tenant", "acme"])
    assert result.exit_code == 0 and "owned by tenant 'acme'" in result.output
    assert runner.invoke(app, ["kb", "share", "hb", "bluefin"]).exit_code == 0
    with Catalog(f"sqlite:///{home / 'catalog.db'}") as cat:
        assert cat.kb_tenants(cat.get_kb("hb").id) == ("acme", frozenset({"bluefin"}))
    assert runner.invoke(app, ["kb", "unshare", "hb", "bluefin"]).exit_code == 0
    result = runner.invoke(app, ["kb", "unshare", "hb", "bluefin"])
    assert result.exit_code == 2 and "not shared" in result.output
    assert runner.invoke(app, ["keys", "create", "--tenant", "acme", "--roles", "admin"]).exit_code == 0
    assert runner.invoke(app, ["kb", "delete", "hb", "--yes"]).exit_code == 0
    result = runner.invoke(app, ["audit", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)
    assert [e["action"] for e in entries] == ["delete", "key_create", "unshare", "share"]
    assert all(e["tenant"] == "acme" and e["key_id"] is None for e in entries)
    assert json.loads(runner.invoke(app, ["audit", "--json", "--tenant", "bluefin"]).output) == []
