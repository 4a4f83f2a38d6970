"""Versioned builds end to end: staged builds, incremental reuse, activation, rollback, time travel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import LoreError
from lore.retrieve.search import SearchOptions
from lore.schema import SearchFilter
from tests.conftest import migrated


def texts(lore: Lore, query: str, version: int | None = None) -> list[str]:
    return [h.chunk.text for h in lore.search("kb", query, SearchOptions(top_k=10), version)]


def test_build_activate_change_rollback_and_time_travel(tmp_path: Path, db_url: str) -> None:
    lore = Lore(load_settings(home=tmp_path / "home", catalog_url=migrated(db_url)))
    lore.create_kb("kb")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nAnnual leave is 5 days per year.\n", encoding="utf-8")
    (docs / "vpn.md").write_text(
        "# VPN\n\nReset the VPN password on the self-service portal.\n", encoding="utf-8"
    )
    (docs / "old.md").write_text("# Parking\n\nParking permits cost 20 euros per month.\n", encoding="utf-8")

    v1 = lore.build("kb", [docs], description="first", activate=True).version
    assert (v1.seq, v1.status.value, v1.counts["files_added"]) == (1, "active", 3)

    (docs / "leave.md").write_text("# Leave\n\nAnnual leave is 12 days per year.\n", encoding="utf-8")
    (docs / "new.md").write_text("# Bikes\n\nBike storage is in the basement.\n", encoding="utf-8")
    (docs / "old.md").unlink()
    result = lore.build("kb", [docs], description="second")
    v2 = result.version
    assert v2.status.value == "staged" and v2.base_seq == 1
    assert v2.counts == {
        "files_added": 1,
        "files_changed": 1,
        "files_removed": 1,
        "files_reused": 1,
        "chunks_embedded": 2,
        "chunks_reused": 1,
    }
    assert result.removed == ["docs/old.md"]

    # Queries read the active version until the staged one is activated.
    assert any("5 days" in t for t in texts(lore, "annual leave days"))
    assert not any("12 days" in t for t in texts(lore, "annual leave days"))
    assert any("Parking permits" in t for t in texts(lore, "parking permit cost"))
    # Time travel / preview: the staged version by number.
    assert any("12 days" in t for t in texts(lore, "annual leave days", version=2))
    assert not any("Parking" in t for t in texts(lore, "parking permit cost", version=2))

    kb_id = lore.catalog.get_kb("kb").id
    epoch = lore.catalog.cache_epoch(kb_id)
    lore.catalog.activate(kb_id, 2, actor="test")
    assert lore.catalog.cache_epoch(kb_id) == epoch + 1
    assert any("12 days" in t for t in texts(lore, "annual leave days"))
    assert not any("Parking" in t for t in texts(lore, "parking permit cost"))

    lore.catalog.rollback(kb_id, actor="test")
    assert any("5 days" in t for t in texts(lore, "annual leave days"))
    assert any("Parking permits" in t for t in texts(lore, "parking permit cost"))

    # A versioned KB does not take direct ingests that would change what people see.
    with pytest.raises(LoreError, match="lore build"):
        lore.ingest("kb", [docs])
    lore.close()


@pytest.fixture()
def cli_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[CliRunner, Path]:
    """A CLI runner on a fresh LORE_HOME with KB "hb" created and docs/a.md written."""
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe refund window is 30 days.\n", encoding="utf-8")
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    return runner, docs


def test_cli_build_versions_activate_rollback(cli_kb: tuple[CliRunner, Path]) -> None:
    runner, docs = cli_kb
    out = runner.invoke(app, ["build", "--kb", "hb", "--source", str(docs), "--activate", "-m", "v1"])
    assert out.exit_code == 0 and "version 1 ACTIVE" in out.output
    (docs / "a.md").write_text("# A\n\nThe refund window is 45 days.\n", encoding="utf-8")
    assert runner.invoke(app, ["build", "--kb", "hb", "--source", str(docs)]).exit_code == 0
    rows = json.loads(runner.invoke(app, ["versions", "--kb", "hb", "--json"]).output)
    assert [(r["seq"], r["status"], r["active"]) for r in rows] == [(1, "ACTIVE", True), (2, "STAGED", False)]
    assert {
        "files_added",
        "files_changed",
        "files_removed",
        "files_reused",
        "chunks_embedded",
        "chunks_reused",
        "gate_passed",
    } <= set(rows[0])
    hit = json.loads(runner.invoke(app, ["search", "refund window", "--kb", "hb", "--json"]).output)["hits"][
        0
    ]
    assert "30 days" in hit["text"]
    v2 = json.loads(
        runner.invoke(app, ["search", "refund window", "--kb", "hb", "--json", "--version", "2"]).output
    )
    assert "45 days" in v2["hits"][0]["text"]
    assert runner.invoke(app, ["activate", "--kb", "hb", "2"]).exit_code == 0
    assert runner.invoke(app, ["rollback", "--kb", "hb"]).exit_code == 0
    assert runner.invoke(app, ["search", "x", "--kb", "hb", "--version", "9"]).exit_code == 2


def test_quality_gate_fails_a_bad_build_and_keeps_the_active_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("LORE_HOME", str(home))
    runner = CliRunner()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe refund window is 30 days.\n", encoding="utf-8")
    (docs / "gbk.txt").write_bytes("报销须在三十天内提交发票原件和审批单。".encode("gbk"))
    assert runner.invoke(app, ["kb", "create", "hb"]).exit_code == 0
    ok = runner.invoke(app, ["build", "--kb", "hb", "--source", str(docs), "--quality-gate", "--activate"])
    assert ok.exit_code == 0, ok.output
    reports = Lore(load_settings(home=home)).reports_dir("hb")  # `kbs/<id>/reports`, as the CLI wrote
    report = json.loads((reports / "1" / "quality.json").read_text(encoding="utf-8"))
    assert report["gate"] == {"passed": True, "reasons": []}
    assert report["files"]["loaded"] == 2 and report["encoding_repairs"][0]["file"] == "docs/gbk.txt"

    (docs / "a.md").write_text("# A\n\nThe refund window is 45 days.\n", encoding="utf-8")
    for i in range(3):
        (docs / f"broken{i}.pdf").write_bytes(b"%PDF-1.7 not really")
    bad = runner.invoke(app, ["build", "--kb", "hb", "--source", str(docs), "--quality-gate", "--activate"])
    assert bad.exit_code == 1 and "quality gate" in bad.output and "3 of 4 files failed" in bad.output
    rows = json.loads(runner.invoke(app, ["versions", "--kb", "hb", "--json"]).output)
    assert [(r["seq"], r["status"], r["gate_passed"]) for r in rows] == [
        (1, "ACTIVE", True),
        (2, "FAILED", False),
    ]
    hit = json.loads(runner.invoke(app, ["search", "refund window", "--kb", "hb", "--json"]).output)["hits"][
        0
    ]
    assert "30 days" in hit["text"]  # the active version still serves
    md = runner.invoke(app, ["report", "--kb", "hb", "2"])
    assert md.exit_code == 0 and "FAILED" in md.output and "broken0.pdf" in md.output
    assert runner.invoke(app, ["activate", "--kb", "hb", "2"]).exit_code == 2  # a failed gate cannot go live


def test_a_build_killed_midway_changes_nothing_people_see_and_the_next_build_is_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("kb")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe refund window is 30 days.\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nParking permits cost 20 euros.\n", encoding="utf-8")
    lore.build("kb", [docs], activate=True)
    (docs / "a.md").write_text("# A\n\nThe refund window is 45 days.\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nParking permits cost 25 euros.\n", encoding="utf-8")

    # Die after b.md's chunks reach the store but before the catalog records them (the worst moment).
    real = lore.catalog.set_file_chunks
    calls = {"n": 0}

    def dying(file_id: str, rows: list) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed")
        real(file_id, rows)

    monkeypatch.setattr(lore.catalog, "set_file_chunks", dying)
    with pytest.raises(KeyboardInterrupt):
        lore.build("kb", [docs])
    monkeypatch.setattr(lore.catalog, "set_file_chunks", real)
    assert any("30 days" in t for t in texts(lore, "refund window"))  # the active version still serves
    assert any("20 euros" in t for t in texts(lore, "parking permits cost"))

    v3 = lore.build("kb", [docs], activate=True).version
    kb_id = lore.catalog.get_kb("kb").id
    assert lore.catalog.get_version(kb_id, 2).status.value == "failed"
    parking = [t for t in texts(lore, "parking permits cost") if "Parking" in t]
    assert parking == ["Parking permits cost 25 euros."]
    # Counted in the store itself (search de-duplicates texts): no leftover rows from the killed build.
    kb = lore.catalog.get_kb("kb")
    doc_b = lore.search("kb", "parking permits cost", SearchOptions(top_k=1))[0].chunk.document_id
    assert lore.store(kb).count(SearchFilter(document_ids=[doc_b], version_seq=3)) == 1
    assert lore.store(kb).count(SearchFilter(document_ids=[doc_b], version_seq=1)) == 1
    assert any("45 days" in t for t in texts(lore, "refund window")) and v3.seq == 3
    lore.close()


def test_cli_flags_from_the_release_workflow(cli_kb: tuple[CliRunner, Path]) -> None:
    runner, docs = cli_kb
    first = [
        "build",
        "--kb",
        "hb",
        "--source",
        str(docs),
        "--new-version",
        "--quality-gate",
        "--activate",
        "-m",
        "weekly refresh",
    ]
    assert runner.invoke(app, first).exit_code == 0
    staged = [
        "build",
        "--kb",
        "hb",
        "--source",
        str(docs),
        "--new-version",
    ]  # v2, not activated: latest != active
    assert runner.invoke(app, staged).exit_code == 0
    again = runner.invoke(
        app, ["build", "--kb", "hb", "--source", str(docs), "--new-version", "--incremental-from", "active"]
    )
    assert again.exit_code == 0 and "files_reused=1" in again.output.replace("\n", "")
    forced = runner.invoke(app, ["build", "--kb", "hb", "--source", str(docs), "--force"])
    assert forced.exit_code == 0 and "files_changed=1" in forced.output.replace("\n", "")
    rows = json.loads(runner.invoke(app, ["versions", "--kb", "hb", "--json"]).output)
    assert [r["seq"] for r in rows] == [1, 2, 3, 4] and rows[0]["description"] == "weekly refresh"
    assert [r["base_seq"] for r in rows[1:3]] == [1, 1]  # v3 grew from the active v1, not from the latest v2
    answer = json.loads(
        runner.invoke(
            app, ["ask", "What is the refund window?", "--kb", "hb", "--json", "--version", "3"]
        ).output
    )
    assert "30 days" in answer["answer"]
    assert (
        runner.invoke(
            app, ["build", "--kb", "hb", "--source", str(docs), "--incremental-from", "x"]
        ).exit_code
        == 2
    )


def test_kill_9_during_a_build(tmp_path: Path) -> None:
    """A real `lore build` process killed with SIGKILL mid-way: the active version keeps serving
    the same answers, and the next build finishes cleanly with one row per chunk."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    home = tmp_path / "home"
    lore = Lore(load_settings(home=home))
    lore.create_kb("kb")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"policy{i:02d}.md").write_text(
            f"# Policy {i}\n\nRule {i}: the limit is {i} units.\n", encoding="utf-8"
        )
    lore.build("kb", [docs], activate=True)
    before = [h.chunk.text for h in lore.search("kb", "Rule 7 limit units", SearchOptions(top_k=3))]
    lore.close()
    for i in range(40):
        (docs / f"policy{i:02d}.md").write_text(
            f"# Policy {i}\n\nRule {i}: the limit is now {i * 10} units, revised.\n", encoding="utf-8"
        )

    env = {**os.environ, "LORE_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore.cli.main", "build", "--kb", "kb", "--source", str(docs)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store_file = next((home / "store" / "embedded").glob("*.sqlite"))
    deadline = time.monotonic() + 120
    written = 0
    while time.monotonic() < deadline and proc.poll() is None:
        with sqlite3.connect(store_file) as db:
            written = db.execute("SELECT count(*) FROM chunks WHERE valid_from_seq = 2").fetchone()[0]
        if written >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert written >= 3

    lore = Lore(load_settings(home=home))
    assert [h.chunk.text for h in lore.search("kb", "Rule 7 limit units", SearchOptions(top_k=3))] == before
    v3 = lore.build("kb", [docs], activate=True).version
    kb = lore.catalog.get_kb("kb")
    assert lore.catalog.get_version(kb.id, 2).status.value == "failed"
    assert lore.store(kb).count(SearchFilter(version_seq=v3.seq)) == 40  # one chunk per file, no leftovers
    assert any("now 70 units" in h.chunk.text for h in lore.search("kb", "Rule 7 limit units"))
    lore.close()


def test_two_builds_of_one_kb_do_not_run_at_once(tmp_path: Path, db_url: str) -> None:
    from lore.catalog import Catalog
    from lore.ingest.build import build_lock

    lore = Lore(load_settings(home=tmp_path / "home", catalog_url=migrated(db_url)))
    kb = lore.create_kb("kb")
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    other = Catalog(lore.settings.resolved_catalog_url)  # another builder sharing the catalog
    with build_lock(other, kb), pytest.raises(LoreError, match="another build .* is running"):
        lore.build("kb", [tmp_path / "a.md"])
    assert lore.catalog.list_versions(kb.id) == []  # the refused build left nothing behind
    assert lore.build("kb", [tmp_path / "a.md"]).version.seq == 1
    assert lore.catalog.build_lock_holder(kb.id) is None  # released after the build
    other.close()
    lore.close()


def test_build_lock_of_a_dead_process_is_taken_over_and_a_remote_one_is_not(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from lore.catalog.models import BuildLockRow

    lore = Lore(load_settings(home=tmp_path / "home"))
    kb = lore.create_kb("kb")
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    with lore.catalog.transaction() as s:  # a build on this host that was killed
        s.execute(
            insert(BuildLockRow).values(
                kb_id=kb.id, host=socket.gethostname(), pid=int(dead.stdout), acquired_at=datetime.now(UTC)
            )
        )
    assert lore.build("kb", [tmp_path / "a.md"]).version.seq == 1
    with lore.catalog.transaction() as s:  # a build on another machine: only `lore unlock` clears it
        s.execute(
            insert(BuildLockRow).values(
                kb_id=kb.id, host="builder-2.example", pid=4242, acquired_at=datetime.now(UTC)
            )
        )
    with pytest.raises(LoreError, match="builder-2.example.*lore unlock --kb kb"):
        lore.build("kb", [tmp_path / "a.md"])
    assert lore.catalog.release_build_lock(kb.id)
    assert lore.build("kb", [tmp_path / "a.md"]).version.seq == 2  # the refused build made no version


def test_build_lock_whose_pid_was_reused_after_a_restart_is_taken_over(tmp_path: Path) -> None:
    import os
    import socket
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import insert

    from lore.catalog.models import BuildLockRow

    lore = Lore(load_settings(home=tmp_path / "home"))
    kb = lore.create_kb("kb")
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    # A lock taken a day ago by "this pid": the process now holding the pid started later, so the
    # lock's owner is gone (a container restart hands out the same pids again).
    with lore.catalog.transaction() as s:
        s.execute(
            insert(BuildLockRow).values(
                kb_id=kb.id,
                host=socket.gethostname(),
                pid=os.getpid(),
                acquired_at=datetime.now(UTC) - timedelta(days=1),
            )
        )
    assert lore.build("kb", [tmp_path / "a.md"]).version.seq == 1
    lore.close()
