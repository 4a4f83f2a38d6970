"""`lore ask` runs the application layer's ask: it keeps a session and a trace as the API does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.engine import Lore
from tests.conftest import EXAMPLES

runner = CliRunner()


@pytest.fixture()
def kb(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.csv").write_bytes((EXAMPLES / "faq.csv").read_bytes())
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(docs), "--kb", "hb"]).exit_code == 0
    return "hb"


def test_a_cli_question_opens_a_session_and_saves_its_trace(kb: str) -> None:
    first = runner.invoke(app, ["ask", "如何重置 VPN 密码？", "--kb", kb, "--json"])
    assert first.exit_code == 0, first.output
    end = json.loads(first.output)
    session, trace_id = end["session_id"], end["trace_id"]
    assert session and trace_id

    follow = runner.invoke(app, ["ask", "那要多久？", "--kb", kb, "--session", session, "--json"])
    assert follow.exit_code == 0, follow.output
    assert json.loads(follow.output)["session_id"] == session

    lore = Lore()
    try:
        turns = lore.catalog.messages(session, limit=10)
        assert [m.role for m in turns] == ["user", "assistant", "user", "assistant"]
        asked = [m for m in turns if m.role == "user"]
        assert asked[0].content == "如何重置 VPN 密码？"
        assert asked[1].query != asked[1].content  # the follow-up was made standalone from the session
        assert "VPN" in asked[1].query
        trace = lore.catalog.get_trace(trace_id, "default")  # the KB owner's, as the CLI made it
        assert trace.transport == "cli" and trace.session_id == session and trace.status == "ok"
    finally:
        lore.close()


def test_a_session_of_another_kb_is_refused(kb: str) -> None:
    end = json.loads(runner.invoke(app, ["ask", "如何重置 VPN 密码？", "--kb", kb, "--json"]).output)
    assert runner.invoke(app, ["kb", "create", "other"]).exit_code == 0
    result = runner.invoke(app, ["ask", "x", "--kb", "other", "--session", end["session_id"]])
    assert result.exit_code == 2 and "belongs to knowledge base 'hb'" in result.output
