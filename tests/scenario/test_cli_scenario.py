"""`lore scenario list/check/build` and `lore ask --scenario/--tenant/--roles/--datasets/--source`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from tests.scenario.conftest import copy_scenarios

runner = CliRunner()


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    scenarios = copy_scenarios(tmp_path / "scenarios")
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LORE_SCENARIO__SCENARIOS_DIR", str(scenarios))
    return scenarios


def ask(*args: str) -> tuple[int, dict | str]:
    result = runner.invoke(app, ["ask", *args, "--json"])
    if result.exit_code:
        return result.exit_code, result.output
    return 0, json.loads(result.output)


def test_build_and_ask_through_the_cli(env: Path) -> None:
    listed = runner.invoke(app, ["scenario", "list", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output)[0]["id"] == "hr"
    checked = runner.invoke(app, ["scenario", "check", "hr"])
    assert checked.exit_code == 0 and "9 FAQ rows" in checked.output and "faq.csv:13" in checked.output
    built = runner.invoke(app, ["scenario", "build", "hr", "--activate"])
    assert built.exit_code == 0, built.output
    assert "version 1 ACTIVE" in built.output and "faq.csv:11" in built.output

    code, end = ask("你好", "--scenario", "hr")
    assert code == 0 and end["route"] == "greeting"
    code, end = ask("如何申请年假", "--scenario", "hr", "--tenant", "bluefin", "--roles", "employee")
    assert code == 0 and end["route"] == "faq_exact" and end["scope"]["roles"] == ["employee"]
    code, end = ask("调薪什么时候生效", "--scenario", "hr", "--roles", "manager", "--datasets", "hr-pay")
    assert code == 0 and "4 月 1 日" in end["answer"] and end["scope"]["datasets"] == ["hr-pay"]
    code, end = ask("住宿标准", "--scenario", "hr", "--source", "expense")
    assert code == 0 and end["source"]["how"] == "given"
    code, end = ask("调薪什么时候生效", "--kb", "hr", "--tenant", "bluefin")  # a scope without a scenario:
    assert code == 0 and end["refused"]  # no roles held, so the managers' pay documents stay out of reach
    code, end = ask("调薪什么时候生效", "--kb", "hr", "--tenant", "bluefin", "--roles", "manager")
    assert code == 0 and "4 月 1 日" in end["answer"]

    for args, message in (
        (["--tenant", "evil"], "not a tenant"),
        (["--roles", "admin"], "not roles"),
        (["--datasets", "payroll"], "not datasets"),
    ):
        code, out = ask("年假有几天", "--scenario", "hr", *args)
        assert code == 2 and message in out
    code, out = ask("年假有几天", "--scenario", "nope")
    assert code == 2 and "unknown scenario 'nope'" in out
    code, out = ask("年假有几天")
    assert code == 2 and "--kb: required unless --scenario" in out
    code, out = ask("年假有几天", "--kb", "hr", "--roles", "hr")
    assert code == 2 and "give --tenant" in out


def test_build_refuses_an_undeclared_source_folder(env: Path) -> None:
    (env / "hr" / "data" / "payroll").mkdir()
    (env / "hr" / "data" / "payroll" / "x.md").write_text("# x\n\ny\n", encoding="utf-8")
    result = runner.invoke(app, ["scenario", "build", "hr"])
    assert result.exit_code == 2 and "unknown source 'payroll'" in result.output


def test_metadata_change_rebuilds_reused_files(env: Path, tmp_path: Path) -> None:
    from lore.config import load_settings
    from lore.engine import Lore
    from lore.retrieve.search import SearchOptions
    from lore.scenario.build import build_scenario
    from lore.scenario.config import Scenarios

    lore = Lore(load_settings())
    first = build_scenario(lore, Scenarios(env).get("hr"), activate=True)
    assert not first.metadata_changed
    again = build_scenario(lore, Scenarios(env).get("hr"), activate=True)
    assert not again.metadata_changed and again.result.version.counts["files_reused"] == 6
    toml = env / "hr" / "scenario.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('visibility = "internal"', 'visibility = "public"', 1),
        encoding="utf-8",
    )
    changed = build_scenario(lore, Scenarios(env).get("hr"), activate=True)
    assert changed.metadata_changed and changed.result.version.counts["files_reused"] == 0
    hits = lore.search("hr", "年假", SearchOptions(top_k=20))
    assert hits and all(h.chunk.visibility == "public" for h in hits)
    lore.close()
