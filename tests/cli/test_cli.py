"""The `lore` command line, run in-process on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from tests.conftest import EXAMPLES

runner = CliRunner()


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_create_ingest_search_json_list_delete(home: Path, tmp_path: Path) -> None:
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.csv").write_bytes((EXAMPLES / "faq.csv").read_bytes())
    (docs / "bad.docx").write_bytes(b"not a zip")
    result = runner.invoke(app, ["ingest", str(docs), "--kb", "hb"])
    assert result.exit_code == 1  # a failed file makes the exit code non-zero...
    assert "docs/bad.docx" in result.output and "failed" in result.output
    assert "1 ingested" in result.output  # ...but the rest of the batch went in

    result = runner.invoke(app, ["search", "如何重置 VPN 密码", "--kb", "hb", "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    first = payload["hits"][0]
    assert first["file"] == "docs/faq.csv" and first["sheet"] == "faq" and first["row"] >= 2
    assert "VPN" in first["text"] and {"score", "chunk_id", "heading_path", "page"} <= set(first)

    result = runner.invoke(app, ["ask", "如何重置 VPN 密码？", "--kb", "hb", "--json"])
    assert result.exit_code == 0, result.output
    end = json.loads(result.output)
    assert not end["refused"] and end["citations"][0]["file"] == "docs/faq.csv" and "[1]" in end["answer"]
    streamed = runner.invoke(app, ["ask", "Who won the 1998 World Cup?", "--kb", "hb"])
    assert (
        streamed.exit_code == 0 and "does not cover" in streamed.output and "route=refused" in streamed.output
    )

    listed = json.loads(runner.invoke(app, ["kb", "list", "--json"]).output)
    assert listed[0]["name"] == "hb" and listed[0]["chunks"] > 0
    assert runner.invoke(app, ["kb", "delete", "hb", "--yes"]).exit_code == 0


def test_errors_are_short_and_named(home: Path) -> None:
    assert runner.invoke(app, ["kb", "create", "other"]).exit_code == 0  # a catalog, without "missing"
    result = runner.invoke(app, ["search", "x", "--kb", "missing"])
    assert result.exit_code == 2 and "knowledge base 'missing' not found" in result.output
    assert runner.invoke(app, ["kb", "create", "bad name!"]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--kb", "missing", "--mode", "fuzzy"]).exit_code == 2


def test_demo_runs_searches_answers_deep_mode_and_the_sample_scenario(home: Path) -> None:
    from tests.conftest import REPO

    result = runner.invoke(
        app, ["demo", "--source", str(EXAMPLES), "--scenarios", str(REPO / "examples" / "scenarios")]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "route=refused" in out and "route=deep mode=deep" in out  # the off-topic question and deep mode
    assert "route=greeting" in out and "route=faq_exact" in out  # the scenario's routing and FAQ path
    assert "30 days" in out


def test_files_are_discovered_once(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI discovers the files and hands them to the engine, which does not walk the folder again."""
    import importlib

    from lore.ingest import files

    walks: list[list[Path]] = []

    def counting(inputs: list[Path]) -> list[files.SourceFile]:
        if inputs:
            walks.append(list(inputs))
        return files.discover(inputs)

    for name in ("lore.cli.backend_local", "lore.engine.builds"):
        monkeypatch.setattr(importlib.import_module(name), "discover", counting)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.csv").write_bytes((EXAMPLES / "faq.csv").read_bytes())
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    result = runner.invoke(app, ["ingest", str(docs), "--kb", "hb"])
    assert result.exit_code == 0 and "1 ingested" in result.output, result.output
    assert walks == [[docs]]
    assert runner.invoke(app, ["kb", "create", "vb"]).exit_code == 0
    result = runner.invoke(app, ["build", "--kb", "vb", "--source", str(docs)])
    assert result.exit_code == 0, result.output
    assert walks == [[docs], [docs]]
