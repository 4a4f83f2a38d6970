"""Deep mode and query rewriting through `Lore.ask` and `lore ask` (engine and CLI wiring)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.engine import Lore
from lore.errors import LoreError
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.scenario.request import scenario_ask
from tests.agent.conftest import finish, statuses
from tests.scenario.conftest import copy_scenarios, scenario_lore


def test_deep_mode_through_the_engine_answers_each_part(lore: Lore) -> None:
    events = list(lore.ask("hb", "对比LF-200和LF-500的保修期", mode="deep"))
    end = finish(events)
    assert end["mode"] == "deep" and end["kind"] == "comparison" and len(end["sub_questions"]) == 2
    assert statuses(events, "plan") and statuses(events, "verdict")
    cited = " ".join(c["text"] for c in end["citations"])
    assert "LF-200" in cited and "LF-500" in cited
    # A second ask of the same sub-questions is served by the engine's semantic cache.
    again = list(lore.ask("hb", "对比LF-200和LF-500的保修期", mode="deep"))
    assert any(s.get("cached") for s in statuses(again, "retrieve"))


def test_a_deep_comparison_of_table_rows_is_a_table_with_a_citation_per_cell(lore: Lore) -> None:
    # The price list's header says "Payload (kg)"; the question says 载重, and the product sheet's prose
    # about the LF-200 ranks first for one part: the table still reads the rows.
    end = finish(list(lore.ask("hb", "对比LF-200和LF-500的载重", mode="deep")))
    lines = end["answer"].splitlines()
    assert lines[:2] == ["| 项目 | 载重 |", "|---|---|"]
    assert lines[2].startswith("| LF-200 Picker | 15 kg[") and lines[3].startswith("| LF-500 Mover | 500 kg[")
    cited = {c["n"]: c["text"] for c in end["citations"]}
    assert all("price_list.xlsx" in c["file"] for c in end["citations"]) and len(cited) == 2
    assert "LF-200 Picker" in cited[1] and "LF-500 Mover" in cited[2]


def test_bad_mode_and_rewrite_are_errors_and_rewrite_on_works_offline(lore: Lore) -> None:
    with pytest.raises(LoreError, match="mode: 'fast' or 'deep'"):
        lore.ask("hb", "年假有几天", mode="turbo")
    with pytest.raises(LoreError, match="rewrite: 'off', 'on' or 'hyde'"):
        lore.ask("hb", "年假有几天", rewrite="sometimes")
    events = list(lore.ask("hb", "What is the refund window?", rewrite="hyde"))
    end = finish(events)
    assert not end["refused"] and "30 days" in end["answer"]
    # HyDE needs an LLM: skipped with a note; the rule-based keyword variant is still searched.
    assert end["rewrite"]["mode"] == "hyde" and any("LLM" in n or "llm" in n for n in end["rewrite"]["notes"])
    assert [v["kind"] for v in end["rewrite"]["variants"]] == ["original", "keywords"]
    assert statuses(events, "rewrite")[0]["variants"] == end["rewrite"]["variants"]


def test_deep_mode_in_a_scenario_keeps_routing_and_faq(tmp_path: Path) -> None:
    scenarios = copy_scenarios(tmp_path / "scenarios")
    lore = scenario_lore(tmp_path / "home", scenarios)
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    hello = finish(list(scenario_ask(lore, None, "你好", scenario="hr", mode="deep")))
    assert hello["mode"] == "fast" and hello["route"] == "greeting"
    faq = finish(list(scenario_ask(lore, None, "如何申请年假？", scenario="hr", mode="deep")))
    assert faq["route"] == "faq_exact" and "我的假期" in faq["answer"]
    # Scenario questions with query rewriting, and a multi-part scenario question in deep mode.
    for rewrite in ("on", "hyde"):
        end = finish(
            list(scenario_ask(lore, None, "一线城市出差住宿每晚最多多少钱？", scenario="hr", rewrite=rewrite))
        )
        assert (
            "600" in end["answer"] and end["rewrite"]["mode"] == rewrite
        )  # not served the other mode's search
    both = finish(
        list(
            scenario_ask(
                lore, None, "一线城市出差住宿每晚最多多少钱？试用期多长？", scenario="hr", mode="deep"
            )
        )
    )
    assert both["mode"] == "deep" and len(both["sub_questions"]) == 2 and "600" in both["answer"]
    lore.close()


def test_cli_deep_mode_prints_the_plan_and_rounds(hb_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_HOME", str(hb_home))
    runner = CliRunner()
    out = runner.invoke(app, ["ask", "LF-200和LF-500的载重分别是多少？", "--kb", "hb", "--mode", "deep"])
    assert out.exit_code == 0, out.output
    assert "plan" in out.output and "round 1 retrieve" in out.output and "verdict" in out.output
    as_json = runner.invoke(
        app, ["ask", "What is the refund window?", "--kb", "hb", "--rewrite", "on", "--json"]
    )
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["refused"] is False
    bad = runner.invoke(app, ["ask", "x", "--kb", "hb", "--mode", "slow"])
    assert bad.exit_code == 2 and "mode" in bad.output


def test_deep_mode_keeps_state_only_for_recent_sessions(hb_home: Path) -> None:
    from lore.config import load_settings

    lore = Lore(load_settings(home=hb_home, agent={"max_sessions": 2}))
    for _ in range(3):  # no session: nothing is kept
        finish(list(lore.ask("hb", "LF-200和LF-500的载重分别是多少？", mode="deep")))
    assert len(lore.deep_sessions.storage) == 0
    for sid in ("s1", "s2", "s3"):
        finish(list(lore.ask("hb", "LF-200和LF-500的载重分别是多少？", mode="deep", session_id=sid)))
    assert set(lore.deep_sessions.storage) == {"s2", "s3"}  # the oldest session was let go
    lore.close()
