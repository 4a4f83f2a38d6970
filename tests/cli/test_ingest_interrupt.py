"""`lore ingest` stopped by Ctrl-C or SIGTERM: it exits promptly, keeps every finished file (catalog rows
and searchable chunks, nothing of the file in progress), and a re-run ingests only the rest."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lore.catalog.versions import VersionStatus
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import LoreError
from lore.ingest.pipeline import FileResult, Progress
from lore.retrieve.search import SearchOptions
from tests.servers import BIN

FILES = 40
_WORDS = "policy leave travel expense laptop badge parking holiday salary training invoice vendor".split()


def _write_docs(folder: Path, files: int, paragraphs: int) -> None:
    """Files of distinct text (the embedding cache never answers for another file), each with a marker."""
    folder.mkdir()
    for i in range(files):
        rnd = random.Random(i)
        body = [
            " ".join(f"{rnd.choice(_WORDS)}{rnd.randrange(1000)}" for _ in range(55)) + f" doc{i}p{p}."
            for p in range(paragraphs)
        ]
        (folder / f"doc{i:02d}.txt").write_text(f"Document {i} marker zq{i:02d}zq\n\n" + "\n\n".join(body))


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    return env | {"LORE_HOME": str(home), "LORE_CONFIG": str(home.parent / "none.toml")}


def _start(home: Path, docs: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN / "lore"), "ingest", str(docs), "--kb", "kb"],
        env=_env(home),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        # A shell's background job inherits SIGINT ignored, and an ignored SIGINT stays ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_until(proc: subprocess.Popen[bytes], log: Path, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 600
    while not ready():
        assert proc.poll() is None, f"ingest ended before the signal:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals, log: Path) -> str:
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"{sig.name}: ingest still running 20 s later:\n{log.read_text()[-3000:]}")
    out = log.read_text()
    assert code == 128 + sig, out[-3000:]  # 130 for Ctrl-C, 143 for SIGTERM
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_stopped_ingest_keeps_finished_files_and_a_rerun_does_the_rest(
    tmp_path: Path, sig: signal.Signals
) -> None:
    home, docs, log = tmp_path / "home", tmp_path / "docs", tmp_path / "ingest.log"
    _write_docs(docs, FILES, paragraphs=2)
    lore = Lore(load_settings(home=home))
    kb_id = lore.create_kb("kb").id
    proc = _start(home, docs, log)
    _wait_until(proc, log, lambda: len(lore.catalog.list_files(kb_id, "ingested")) >= 1)
    out = _stop(proc, sig, log)

    kept = lore.catalog.list_files(kb_id, "ingested")
    assert 1 <= len(kept) < FILES, out[-3000:]
    assert "interrupted" in out and "To resume, run the same `lore ingest` again" in out
    assert f"{len(kept)} files are in the knowledge base" in out
    # Every kept file is whole: its chunks are searchable, and the store holds no chunk of any other file.
    assert all(f.chunk_count > 0 for f in kept)
    assert lore.store(lore.catalog.get_kb("kb")).count() == lore.catalog.count_chunks(kb_id)
    assert lore.catalog.count_chunks(kb_id) == sum(f.chunk_count for f in kept)
    for f in kept:
        marker = f"zq{f.path[-6:-4]}zq"
        hits = lore.search("kb", marker, SearchOptions(mode="bm25", top_k=1, rerank=False))
        assert hits and hits[0].chunk.file_path == f.path, marker
    lore.close()

    rerun = subprocess.run(
        [str(BIN / "lore"), "ingest", str(docs), "--kb", "kb"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    summary = f"{FILES} files: {FILES - len(kept)} ingested, {len(kept)} skipped"
    assert summary in rerun.stdout, rerun.stdout[-3000:]
    lore = Lore(load_settings(home=home))
    assert len(lore.catalog.list_files(kb_id, "ingested")) == FILES
    assert lore.store(lore.catalog.get_kb("kb")).count() == lore.catalog.count_chunks(kb_id)
    lore.close()


def test_a_big_file_stopped_midway_is_not_half_ingested(tmp_path: Path) -> None:
    """One long file is all or nothing: stopped after some of its batches, none of it is visible."""
    home, docs, log = tmp_path / "home", tmp_path / "docs", tmp_path / "ingest.log"
    _write_docs(docs, 1, paragraphs=120)
    lore = Lore(load_settings(home=home))
    kb = lore.create_kb("kb")
    batch = lore.embedder(kb).batch_size
    proc = _start(home, docs, log)
    _wait_until(proc, log, lambda: lore.cache.count() >= batch)  # its first batch is embedded
    out = _stop(proc, signal.SIGTERM, log)

    assert "0 files are in the knowledge base" in out and "'docs/doc00.txt' was in progress" in out
    assert lore.catalog.list_files(kb.id, "ingested") == []
    assert lore.catalog.count_chunks(kb.id) == 0 and lore.store(kb).count() == 0
    lore.close()


class _StopAfterFirstFile(Progress):
    """Asks to stop once one file is done (what the CLI's signal handler does, at a known point)."""

    def __init__(self) -> None:
        self.done = 0

    def file_done(self, result: FileResult, eta_s: float | None = None) -> None:
        self.done += 1

    def stop_requested(self) -> bool:
        return self.done >= 1


def test_the_engine_stops_between_files_and_a_versioned_build_fails_rather_than_miss_files(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    _write_docs(docs, 3, paragraphs=1)
    lore = Lore(load_settings(home=tmp_path / "home"))
    kb_id = lore.create_kb("kb").id
    report = lore.ingest("kb", [docs], _StopAfterFirstFile())
    assert report.stopped and [f.name for f in report.files] == ["docs/doc00.txt"]
    assert report.unfinished == ["docs/doc01.txt", "docs/doc02.txt"]
    assert [f.path for f in lore.catalog.list_files(kb_id, "ingested")] == ["docs/doc00.txt"]

    lore.create_kb("vkb")
    with pytest.raises(LoreError, match="stopped before 'docs/doc01.txt'"):
        lore.build("vkb", [docs], progress=_StopAfterFirstFile(), activate=True)
    versions = lore.catalog.list_versions(lore.catalog.get_kb("vkb").id)
    assert [v.status for v in versions] == [VersionStatus.FAILED]
    lore.close()
