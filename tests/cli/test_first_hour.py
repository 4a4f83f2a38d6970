"""The first hour with `lore`: where the home is, read-only commands that create nothing, a near KB name
offered, progress off a terminal, and an unreachable server named in words."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.cli.progress import PlainIngestProgress
from lore.ingest.pipeline import FileResult
from tests.conftest import EXAMPLES
from tests.servers import free_port

runner = CliRunner()


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_default_home_is_the_users_data_folder_not_the_current_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LORE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # platformdirs' Linux convention
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["info", "--json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["home"] == str(tmp_path / "data" / "lore") and facts["knowledge_bases"] == []
    assert "catalog.db" in facts["catalog"]
    assert not (tmp_path / "data").exists()  # info created nothing
    assert not (tmp_path / ".lore").exists()


def test_read_only_commands_create_nothing_and_say_how_to_start(home: Path) -> None:
    listed = runner.invoke(app, ["kb", "list"])
    assert listed.exit_code == 0
    assert f"no knowledge bases yet in {home}; create one with: lore kb create NAME" in listed.output
    as_json = runner.invoke(app, ["kb", "list", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == []
    for argv in (
        ["search", "x", "--kb", "handbook"],
        ["ask", "x", "--kb", "handbook"],
        ["versions", "--kb", "handbook"],
        ["kb", "delete", "handbook", "--yes"],
        ["files", "delete", "--kb", "handbook", "a.txt", "--yes"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2 and "no knowledge bases yet in" in result.output, (argv, result.output)
    info = runner.invoke(app, ["info"])
    assert info.exit_code == 0 and str(home) in info.output and "no knowledge bases yet" in info.output
    assert runner.invoke(app, ["search", "--help"]).exit_code == 0  # help still shows, without a catalog
    assert not home.exists()


def test_a_mistyped_kb_name_offers_the_near_one(home: Path) -> None:
    assert runner.invoke(app, ["kb", "create", "handbook"]).exit_code == 0
    result = runner.invoke(app, ["search", "refund", "--kb", "handbok"])
    assert result.exit_code == 2
    assert "knowledge base 'handbok' not found; did you mean 'handbook'?" in result.output
    asked = runner.invoke(app, ["ask", "refund?", "--kb", "Handbook"])
    assert asked.exit_code == 2 and "did you mean 'handbook'?" in asked.output
    far = runner.invoke(app, ["search", "refund", "--kb", "zzz"])
    assert far.exit_code == 2 and "create it with: lore kb create zzz" in far.output


def test_ingest_off_a_terminal_prints_progress_lines_and_no_web_line(home: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("faq.csv", "employee_handbook.md"):
        (docs / name).write_bytes((EXAMPLES / name).read_bytes())
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    result = runner.invoke(app, ["ingest", str(docs), "--kb", "hb"])
    assert result.exit_code == 0, result.output
    assert "ingest: 2/2 files" in result.stderr and "chunks" in result.stderr
    assert "web:" not in result.output  # no page was crawled


def test_plain_progress_says_files_pages_chunks_elapsed_and_time_left() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = PlainIngestProgress(4, every_s=10, out=out, clock=lambda: now[0])

    def at(second: float, *steps: tuple[str, str, int, float | None]) -> None:
        now[0] = second
        for step, name, n, extra in steps:  # extra: the file's pages, else the run's time left
            if step == "start":
                progress.file_started(name, n, pages=None if extra is None else int(extra))
            elif step == "embedded":
                progress.embedded(n, eta_s=extra)
            else:
                progress.file_done(FileResult(name, "ingested", chunks=n), eta_s=extra)

    with progress:
        at(
            5, ("start", "a.pdf", 1200, 30), ("embedded", "", 1200, None), ("done", "a.pdf", 1200, 95.0)
        )  # too soon for a line
        at(30, ("start", "big.pdf", 2200, 80), ("embedded", "", 1000, 90.0))  # a long file says where it is
        at(35, ("embedded", "", 2200, 20.0), ("done", "big.pdf", 2200, 20.0))
        at(80, ("start", "c.md", 10, None), ("done", "c.md", 10, 3600.0 + 5 * 60))
        at(81, ("start", "d.md", 5, None), ("done", "d.md", 5, None))  # the last file always gets its line
    assert out.getvalue().splitlines() == [
        "ingest: 1/4 files, 30 pages, 1,200 chunks, embedding big.pdf (80 pages) 1,000/2,200 chunks, "
        "30s elapsed, about 2 min left",
        "ingest: 3/4 files, 110 pages, 3,410 chunks, 1m20s elapsed, about 1 h 05 min left",
        "ingest: 4/4 files, 110 pages, 3,415 chunks, 1m21s elapsed",
    ]


def test_an_unreachable_server_is_named_without_transport_codes() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = runner.invoke(app, ["--server", url, "kb", "list"])
    assert result.exit_code == 2
    assert f"cannot reach the Lore server at {url}: connection refused" in result.output
    assert "HTTP 0" not in result.output and "Errno" not in result.output
