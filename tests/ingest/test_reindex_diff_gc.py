"""Re-indexing on chunk-schema and model changes, version diffs with an eval set, the no-worse gate, gc."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.errors import EmbeddingMismatchError
from lore.retrieve.search import SearchOptions
from lore.text.units import stable_id
from tests.chunks import make_chunk
from tests.embed.test_openai import FakeServer, server  # noqa: F401 - the fixture is used by name

DOCS = {
    "leave.md": "# Leave\n\nAnnual leave is 12 days per year; request it in the HR portal two weeks ahead.\n",
    "vpn.md": "# VPN\n\nReset the VPN password on the self-service portal, then restart the client.\n",
    "parking.md": "# Parking\n\nParking permits cost 20 euros per month and are issued by facilities.\n",
}


def write_docs(folder: Path, names: list[str]) -> Path:
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.md"):
        old.unlink()
    for name in names:
        (folder / name).write_text(DOCS[name], encoding="utf-8")
    return folder


def test_a_new_chunk_schema_reindexes_unchanged_files_and_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    docs = write_docs(tmp_path / "docs", list(DOCS))
    lore = Lore(load_settings(home=home))
    lore.create_kb("kb")
    v1 = lore.build("kb", [docs], activate=True).version
    again = lore.build("kb", [docs])  # same schema: everything reused
    assert again.version.counts["files_reused"] == 3 and again.version.counts["chunks_embedded"] == 0
    lore.close()

    lore = Lore(load_settings(home=home, chunk={"child_size": 120, "child_overlap": 10, "parent_size": 600}))
    result = lore.build("kb", [docs])
    v3 = result.version
    assert v3.chunk_schema != v1.chunk_schema
    assert v3.counts["files_changed"] == 3 and v3.counts["files_reused"] == 0
    assert {r["file"] for r in result.quality["reindexed"]} == {f"docs/{n}" for n in DOCS}
    assert all("chunk schema" in r["why"] for r in result.quality["reindexed"])
    d = lore.diff("kb", 1, 3)
    assert d["files"]["added"] == [] and d["files"]["removed"] == []
    assert {c["file"] for c in d["files"]["changed"]} == {f"docs/{n}" for n in DOCS}
    assert all(c["why"] == ["chunk schema"] for c in d["files"]["changed"])
    # Version 1 still reads its own chunks; version 3 reads the new ones.
    old = lore.search("kb", "annual leave", SearchOptions(top_k=3), version=1)
    new = lore.search("kb", "annual leave", SearchOptions(top_k=3), version=3)
    assert old[0].chunk.chunk_schema == v1.chunk_schema and new[0].chunk.chunk_schema == v3.chunk_schema
    lore.close()


def test_a_pdf_read_by_an_older_reader_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lore.ingest.loaders import pdf

    docs = write_docs(tmp_path / "docs", ["leave.md"])
    sheet = pymupdf.open()
    for n in (1, 2):
        page = sheet.new_page()
        page.insert_text((72, 120), "The LF-200 carries 200 kg." if n == 1 else "It runs for eight hours.")
        page.insert_text((72, 760), f"LF-200 product sheet - page {n} of 2")
    sheet.save(docs / "sheet.pdf")
    lore = Lore(load_settings(home=tmp_path / "home"))
    lore.create_kb("kb")
    with monkeypatch.context() as older:  # the reader before "pdf2": no version, footers kept
        older.delattr(pdf.load_pdf, "version")
        older.setattr(pdf, "_drop_page_furniture", lambda sections: None)
        lore.build("kb", [docs], activate=True)
    assert any("page 1 of 2" in h.chunk.text for h in lore.search("kb", "LF-200 product sheet"))
    result = lore.build("kb", [docs], activate=True)
    assert result.version.counts["files_changed"] == 1 and result.version.counts["files_reused"] == 1
    assert [(r["file"], r["why"]) for r in result.quality["reindexed"]] == [
        ("docs/sheet.pdf", "re-read: its reader changed (first version -> pdf2)")
    ]
    assert lore.diff("kb", 1, 2)["files"]["changed"][0]["why"] == ["reader"]
    hits = lore.search("kb", "LF-200 product sheet")
    assert hits and not any("of 2" in h.chunk.text for h in hits)
    assert lore.build("kb", [docs]).version.counts["files_reused"] == 2  # read once per reader version
    lore.close()


def test_a_new_embedding_model_reembeds_everything_and_old_versions_say_which_model(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811 - pytest fixture
) -> None:
    home = tmp_path / "home"
    docs = write_docs(tmp_path / "docs", list(DOCS))

    def lore_with(model: str) -> Lore:
        return Lore(
            load_settings(home=home, embed={"provider": "openai", "model": model, "base_url": server.url})
        )

    lore = lore_with("embed-v1")
    lore.create_kb("kb")
    assert lore.build("kb", [docs], activate=True).version.embedding_model.endswith("embed-v1")
    lore.close()

    lore = lore_with("embed-v2")
    with pytest.raises(EmbeddingMismatchError, match="version 1 .* embedded with .*embed-v1"):
        lore.search("kb", "annual leave")  # the active version was embedded with the other model
    result = lore.build("kb", [docs], activate=True)
    assert result.version.counts["files_changed"] == 3 and result.version.counts["chunks_embedded"] >= 3
    assert all("embedding model" in r["why"] for r in result.quality["reindexed"])
    assert lore.search("kb", "parking permits")  # the active version now matches the configured model
    with pytest.raises(EmbeddingMismatchError):
        lore.search("kb", "parking permits", version=1)
    assert all(c["why"] == ["embedding model"] for c in lore.diff("kb", 1, 2)["files"]["changed"])
    lore.close()


def test_diff_compares_recall_on_an_eval_set_and_the_gate_refuses_a_worse_version(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    evals = tmp_path / "eval.jsonl"
    evals.write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"question": "How many days of annual leave do I get?", "files": ["docs/leave.md"]},
                {"question": "How much does a parking permit cost?", "files": ["docs/parking.md"]},
                {"question": "How do I reset my VPN password?", "files": ["docs/vpn.md"]},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    settings = load_settings(
        home=tmp_path / "home", gate={"eval_set": evals, "eval_k": 1, "no_worse_than_active": True}
    )
    lore = Lore(settings)
    lore.create_kb("kb")
    lore.build("kb", [write_docs(docs, ["leave.md", "vpn.md"])], activate=True)
    v2 = lore.build("kb", [write_docs(docs, list(DOCS))], quality_gate=True, activate=True)
    assert v2.quality["comparison"]["candidate"]["recall"] == pytest.approx(1.0)
    assert v2.quality["comparison"]["base"]["recall"] == pytest.approx(2 / 3)
    d = lore.diff("kb", 1, 2)
    assert d["files"]["added"] == ["docs/parking.md"]
    assert d["retrieval"]["gained"] == ["How much does a parking permit cost?"]

    v3 = lore.build("kb", [write_docs(docs, ["leave.md", "parking.md"])], quality_gate=True, activate=True)
    assert v3.version.status.value == "failed"
    assert any("Recall@1" in r for r in v3.gate_reasons)
    kb_id = lore.catalog.get_kb("kb").id
    assert lore.catalog.active_version(kb_id).seq == 2  # the worse version never went live
    # The catalog keeps the gate's outcome; the whole report (comparison, files...) stays in quality.json.
    assert lore.catalog.get_version(kb_id, 3).gate_report == {"passed": False, "reasons": v3.gate_reasons}
    assert "| Recall@1 | 1.000 | 0.667 |" in (lore.reports_dir("kb") / "3" / "quality.md").read_text(
        encoding="utf-8"
    )
    lore.close()


def test_gc_deletes_what_no_readable_version_sees_and_keeps_history(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    lore = Lore(load_settings(home=tmp_path / "home"))
    kb = lore.create_kb("kb")
    lore.build("kb", [write_docs(docs, ["leave.md", "vpn.md"])], activate=True)
    lore.build("kb", [write_docs(docs, ["leave.md"])], activate=True)  # vpn.md expires at 2
    store = lore.store(kb)
    total = store.count()
    # A build that died after writing chunks it never recorded in the catalog.
    dead = lore.catalog.create_version(
        kb.id, embedding_model=kb.embedding_model, chunk_schema=kb.chunk_schema
    )
    orphan = make_chunk(
        chunk_id=stable_id("orphan"),
        text="half-written",
        parent_text="half-written",
        kb_id=kb.id,
        file_path="docs/x.md",
        chunk_schema=kb.chunk_schema,
        embedding_model=kb.embedding_model,
        valid_from_seq=dead.seq,
    )
    vec = np.ones((1, kb.embedding_dim), dtype=np.float32) / np.sqrt(kb.embedding_dim)
    store.upsert([orphan], vec, [["half"]])

    result = lore.gc("kb")
    assert result.recovered_builds == [dead.seq] and result.deleted_chunks == 1
    assert store.count() == total and store.get([orphan.chunk_id]) == []
    # vpn.md is still readable in version 1 (retired), so its chunks stay.
    assert any("VPN" in h.chunk.text for h in lore.search("kb", "reset VPN password", version=1))
    lore.catalog.rollback(kb.id, actor="test")
    assert lore.gc("kb").deleted_chunks == 0
    lore.close()


def test_faults_during_a_build_fail_it_clearly_and_keep_the_active_version(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sqlite3

    import lore.ingest.pictures as loading_module  # the pipeline loads every file through here
    from lore.errors import LoreError

    docs = tmp_path / "docs"
    lore = Lore(load_settings(home=tmp_path / "home"))
    kb = lore.create_kb("kb")
    lore.build("kb", [write_docs(docs, ["leave.md", "vpn.md"])], activate=True)

    # A source folder that is empty (an unmounted share) never becomes a version without files.
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LoreError, match="no files found"):
        lore.build("kb", [empty], activate=True)
    with pytest.raises(LoreError, match="no such file or folder"):
        lore.build("kb", [tmp_path / "gone"], activate=True)

    # A file rewritten while it is being read fails by name; the rest of the build goes on.
    real_load = loading_module.load_file

    def load_and_touch(path: Path, **kw: object) -> object:
        out = real_load(path, **kw)
        if path.name == "vpn.md":
            path.write_text(DOCS["vpn.md"] + "\nEdited meanwhile.\n", encoding="utf-8")
        return out

    (docs / "vpn.md").write_text(DOCS["vpn.md"] + "\nNew line.\n", encoding="utf-8")
    monkeypatch.setattr(loading_module, "load_file", load_and_touch)
    result = lore.build("kb", [docs])
    problem = next(f for f in result.report.files if f.name == "docs/vpn.md")
    assert problem.status == "failed" and "changed while it was being read" in problem.error
    monkeypatch.setattr(loading_module, "load_file", real_load)

    # Disk full while writing chunks: the build fails with the reason, the version is FAILED.
    store = lore.store(kb)

    def full(*args: object, **kw: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    (docs / "leave.md").write_text(DOCS["leave.md"] + "\nChanged.\n", encoding="utf-8")
    monkeypatch.setattr(store, "upsert", full)
    with pytest.raises(LoreError, match="disk is full.*active version is unchanged"):
        lore.build("kb", [docs], activate=True)
    failed = lore.catalog.list_versions(kb.id)[-1]
    assert failed.status.value == "failed" and "disk is full" in failed.gate_report["error"]
    assert lore.catalog.active_version(kb.id).seq == 1
    assert lore.catalog.build_lock_holder(kb.id) is None
    monkeypatch.undo()
    assert any("12 days" in h.chunk.text for h in lore.search("kb", "annual leave days"))
    lore.close()
