"""Chunk edits, OCR page reviews and saved eval sets are catalog rows on SQLite, PostgreSQL and MariaDB:
two Lore instances with their own LORE_HOME on one catalog see each other's, and the JSON files older
Lore kept under its storage dir are imported once."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import asdict
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from lore.catalog import alembic_config
from lore.config import Settings
from lore.engine import Lore
from lore.ingest.edits import ChunkEdit, digest
from lore.schema import Chunk
from tests.catalog.rows import KB, LORE
from tests.chunks import make_chunk
from tests.conftest import migrated

LONG = "报销/" + "长" * 3000 + ".pdf"  # 12 KB in utf8mb4: far past MariaDB's 3,072-byte key limit


def _lore(url: str, home: Path) -> Lore:
    return Lore(Settings(home=home, catalog_url=url))


def _chunk(file: str, index: int, text: str = "Old text.") -> Chunk:
    return make_chunk(
        chunk_id=f"c{index}",
        text=text,
        parent_id="p",
        parent_text="",
        document_id="d",
        file_path=file,
        chunk_index=index,
        embedding_model="e5",
    )


def _edit(
    file: str, index: int, *, new: str | None = None, off: bool = False, by: str = "cli@acme"
) -> ChunkEdit:
    original = _chunk(file, index)
    return ChunkEdit(file, index, digest(original.text), asdict(original), new, off, by)


@pytest.fixture
def pair(db_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Two Lore instances (replicas) with their own LORE_HOME on one migrated catalog, with KB `docs`."""
    url = migrated(db_url)
    a, b = _lore(url, tmp_path / "home-a"), _lore(url, tmp_path / "home-b")
    a.catalog.create_kb("docs", **KB)  # type: ignore[arg-type]
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_replicas_see_each_others_chunk_edits(pair) -> None:  # type: ignore[no-untyped-def]
    a, b = pair
    a.chunk_edits("docs").put(_edit(LONG, 0, new="Fixed text."))
    a.chunk_edits("docs").put(_edit("a.md", 3, off=True))
    seen = b.chunk_edits("docs")
    assert [(e.file, e.chunk_index, e.text, e.off, e.applied_in) for e in seen.all()] == [
        ("a.md", 3, None, True, None),
        (LONG, 0, "Fixed text.", False, None),
    ]
    assert seen.pending(LONG) and seen.for_file(LONG)[0].chunk().text == "Old text."
    assert seen.for_file(LONG)[0].at.endswith("+00:00")
    b.chunk_edits("docs").mark_applied(LONG, 4)  # B's build applied it: A sees it applied in version 4
    assert [e.applied_in for e in a.chunk_edits("docs").for_file(LONG)] == [4]
    assert not a.chunk_edits("docs").pending(LONG) and a.chunk_edits("docs").pending("a.md")
    # Replacing an edit at the same position keeps one row; an applied revert is dropped.
    b.chunk_edits("docs").put(_edit("a.md", 3))
    assert [(e.off, e.revert) for e in a.chunk_edits("docs").for_file("a.md")] == [(False, True)]
    a.chunk_edits("docs").mark_applied("a.md", None)
    assert b.chunk_edits("docs").for_file("a.md") == []
    assert not (a.settings.home / "chunk_edits").exists() and not (b.settings.home / "chunk_edits").exists()
    # Rows belong to their KB: another KB sees none, and deleting the KB deletes them.
    a.catalog.create_kb("other", **KB)  # type: ignore[arg-type]
    assert b.chunk_edits("other").all() == []
    a.catalog.delete_kb("docs")
    with a.catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM chunk_edits")).scalar_one() == 0


def test_replicas_see_each_others_ocr_reviews_and_eval_sets(pair) -> None:  # type: ignore[no-untyped-def]
    a, b = pair
    mark = a.ocr_reviews("docs").mark(LONG, 2, "s1", "key:k1@acme")
    assert mark is not None and mark.by == "key:k1@acme" and mark.at.endswith("+00:00")
    a.ocr_reviews("docs").mark(LONG, 5, "s1", "key:k1@acme")
    assert sorted(b.ocr_reviews("docs").reviewed(LONG, "s1")) == [2, 5]
    assert b.ocr_reviews("docs").reviewed(LONG, "s2") == {}  # a new upload is unreviewed again
    assert b.ocr_reviews("docs").mark(LONG, 2, "s1", "key:k2@acme", reviewed=False) is None
    assert [(r.page, r.by) for r in a.ocr_reviews("docs").all()] == [(5, "key:k1@acme")]

    smoke = '{"question": "How long is leave?", "files": ["leave.md"]}\n\n{"question": "x", "files": ["y"]}\n'
    saved = a.eval_sets("docs").save("smoke", smoke, "key:k1@acme")
    assert (saved.name, saved.questions, saved.saved_by) == ("smoke", 2, "key:k1@acme")
    assert [(s.name, s.questions) for s in b.eval_sets("docs").list()] == [("smoke", 2)]
    assert b.eval_sets("docs").body("smoke") == smoke and b.eval_sets("docs").body("nope") is None
    big = "".join(
        json.dumps({"question": f"q{i} " + "长" * 200, "files": ["a.md"]}) + "\n" for i in range(200)
    )
    b.eval_sets("docs").save("smoke", big, "key:k2@acme")  # 240 KB: past MySQL's 64 KB TEXT
    assert a.eval_sets("docs").body("smoke") == big
    assert [(s.name, s.questions, s.saved_by) for s in a.eval_sets("docs").list()] == [
        ("smoke", 200, "key:k2@acme")
    ]
    assert saved.created_at == a.eval_sets("docs").list()[0].created_at  # replaced, not re-created


def test_concurrent_edits_from_two_replicas_are_all_kept(pair) -> None:  # type: ignore[no-untyped-def]
    """A read-modify-write of one JSON file lost edits made at once; each edit is now its own row."""
    a, b = pair
    errors: list[BaseException] = []

    def edit(lore: Lore, start: int) -> None:
        try:
            for i in range(start, start + 12):
                lore.chunk_edits("docs").put(_edit("a.md", i, off=True))
                lore.ocr_reviews("docs").mark("scan.pdf", i, "s", "cli@acme")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=edit, args=(lore, start)) for lore, start in ((a, 0), (b, 12))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.chunk_index for e in a.chunk_edits("docs").all()] == list(range(24))
    assert sorted(b.ocr_reviews("docs").reviewed("scan.pdf", "s")) == list(range(24))


def _write_legacy(home: Path, kb: str) -> None:
    """The files an older Lore kept under its storage dir for `kb`."""
    (home / "chunk_edits").mkdir(parents=True, exist_ok=True)
    edits = [
        {
            **asdict(_edit("a.md", 0, new="Edited long ago.")),
            "at": "2026-11-01T10:00:00+00:00",
            "applied_in": 2,
        },
        {**asdict(_edit("a.md", 1, off=True)), "at": "2026-11-01T10:00:01+00:00"},
    ]
    (home / "chunk_edits" / f"{kb}.json").write_text(json.dumps(edits), encoding="utf-8")
    (home / "ocr_reviews").mkdir(exist_ok=True)
    reviews = [
        {"file": "scan.pdf", "page": 1, "sha256": "s", "by": "cli@acme", "at": "2026-11-02T09:00:00+00:00"}
    ]
    (home / "ocr_reviews" / f"{kb}.json").write_text(json.dumps(reviews), encoding="utf-8")
    (home / "eval_sets" / kb).mkdir(parents=True)
    (home / "eval_sets" / kb / "smoke.jsonl").write_text(
        '{"question": "q", "files": ["a.md"]}\n', encoding="utf-8"
    )


def _legacy_left(home: Path, kb: str) -> list[str]:
    names = [f"chunk_edits/{kb}.json", f"ocr_reviews/{kb}.json", f"eval_sets/{kb}/smoke.jsonl"]
    return [n for n in names if (home / n).exists()]


def test_old_json_files_are_imported_once(pair) -> None:  # type: ignore[no-untyped-def]
    a, b = pair
    home = a.settings.home
    _write_legacy(home, "docs")
    b.chunk_edits("docs").put(_edit("a.md", 1, new="Newer, made on replica B."))  # a row already there wins
    assert a.import_file_state() == {"chunk edits": 1, "OCR page reviews": 1, "eval sets": 1}
    assert _legacy_left(home, "docs") == []
    assert (home / "chunk_edits" / "docs.json.imported").is_file()
    assert (home / "eval_sets" / "docs" / "smoke.jsonl.imported").is_file()
    edits = b.chunk_edits("docs").all()
    assert [(e.chunk_index, e.text, e.applied_in, e.at) for e in edits] == [
        (0, "Edited long ago.", 2, "2026-11-01T10:00:00+00:00"),
        (1, "Newer, made on replica B.", None, edits[1].at),
    ]
    assert [(r.page, r.at) for r in b.ocr_reviews("docs").all()] == [(1, "2026-11-02T09:00:00+00:00")]
    assert [(s.name, s.questions) for s in b.eval_sets("docs").list()] == [("smoke", 1)]
    assert a.import_file_state() == {"chunk edits": 0, "OCR page reviews": 0, "eval sets": 0}
    # Without `lore db upgrade`, the first use imports a KB's files (here on the other replica's disk).
    b.catalog.create_kb("later", **KB)  # type: ignore[arg-type]
    _write_legacy(b.settings.home, "later")
    assert [e.chunk_index for e in b.chunk_edits("later").for_file("a.md")] == [0, 1]
    assert sorted(b.ocr_reviews("later").reviewed("scan.pdf", "s")) == [1]
    assert b.eval_sets("later").body("smoke") == '{"question": "q", "files": ["a.md"]}\n'
    assert _legacy_left(b.settings.home, "later") == []
    assert [e.chunk_index for e in a.chunk_edits("later").all()] == [0, 1]


def test_db_upgrade_imports_the_old_files(db_kind: str, db_url: str, tmp_path: Path) -> None:
    """`lore db upgrade` from a 0007 catalog: the new tables appear and the old files become rows."""
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(connection=conn), "0007")
            conn.execute(
                text(
                    "INSERT INTO knowledge_bases (id, name, description, embedding_provider, embedding_model,"
                    " embedding_dim, chunk_schema, store_backend, created_at, updated_at, cache_epoch,"
                    " owner_tenant) VALUES ('kb1', 'docs', '', 'local', 'e5', 8, 'v1', 'embedded',"
                    " '2026-11-30 12:00:00', '2026-11-30 12:00:00', 0, 'acme')"
                )
            )
        assert "chunk_edits" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()
    home = tmp_path / "home"
    _write_legacy(home, "docs")
    env = {**os.environ, "LORE_CATALOG_URL": db_url, "LORE_HOME": str(home)}
    run = subprocess.run([*LORE, "db", "upgrade"], env=env, capture_output=True, text=True, check=False)
    out = " ".join(run.stdout.split())
    assert run.returncode == 0, run.stdout + run.stderr
    assert "migrated from 0007" in out and "2 chunk edits, 1 OCR page reviews, 1 eval sets" in out, out
    assert _legacy_left(home, "docs") == []
    lore = _lore(db_url, tmp_path / "elsewhere")  # another replica's home: no files, same rows
    try:
        assert [e.chunk_index for e in lore.chunk_edits("docs").all()] == [0, 1]
        assert lore.eval_sets("docs").body("smoke") is not None
    finally:
        lore.close()
    again = subprocess.run([*LORE, "db", "upgrade"], env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "imported" not in again.stdout, again.stdout
