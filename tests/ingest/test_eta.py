"""The time left of an ingest or build from its work so far (`lore.ingest.eta`), and how the CLI says it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.cli.texts import pages_text, time_left
from lore.ingest.eta import MIN_CHUNKS, EtaClock, eta_seconds, file_sizes, page_count
from lore.ingest.files import SourceFile
from lore.schema import LoadedDocument, Section


def test_no_estimate_before_one_file_or_enough_chunks_nor_once_nothing_is_left() -> None:
    early = dict(elapsed_s=10.0, parsed_chunks=100, parsed_bytes=1000, unparsed_bytes=0)
    assert eta_seconds(embedded=MIN_CHUNKS - 1, files_done=0, **early) is None
    assert eta_seconds(embedded=0, files_done=3, **early) is None  # three skipped files: no rate yet
    assert eta_seconds(embedded=MIN_CHUNKS, files_done=0, **early) == pytest.approx((100 - 32) / 3.2)
    assert eta_seconds(embedded=10, files_done=1, **early) == pytest.approx(90 / 1.0)
    assert eta_seconds(embedded=100, files_done=1, **early) is None  # all embedded, no file left


def test_files_not_reached_count_by_their_bytes_at_the_chunks_per_byte_so_far() -> None:
    # 200 chunks from 1000 bytes reached, 150 embedded in 30 s (5 chunks/s); 3000 bytes not reached yet
    # are ~600 chunks: (50 + 600) / 5 = 130 s.
    eta = eta_seconds(
        elapsed_s=30.0, embedded=150, parsed_chunks=200, parsed_bytes=1000, unparsed_bytes=3000, files_done=1
    )
    assert eta == pytest.approx(130.0)


def test_the_clock_follows_a_run_file_by_file() -> None:
    now = [0.0]
    eta = EtaClock([1000, 1000, 2000], clock=lambda: now[0])
    eta.reached(1000, 40)
    now[0] = 4.0
    assert eta.embedded(16) is None  # 16 chunks, no file done: too early to say
    now[0] = 10.0
    # 40 chunks in 10 s; left: 2000 + 1000 bytes at 40 chunks per 1000 bytes = 120 chunks -> 30 s
    assert eta.done() == 30.0
    eta.reached(1000, 0)  # an unchanged file, skipped: its bytes bring no chunks
    assert eta.done() == 10.0  # 2000 bytes left at 40 chunks per 2000 bytes: 40 chunks at 4/s
    eta.reached(2000, 50)
    now[0] = 20.0
    assert eta.embedded(30) == 6.0  # 70 chunks in 20 s; 20 left at 3.5/s: 5.7 s, rounded
    assert eta.done() is None  # the last file is done: nothing left


def test_pages_are_the_distinct_pages_slides_or_sheets_of_a_file(tmp_path: Path) -> None:
    pdf = LoadedDocument("a.pdf", [Section("x", page=1), Section("y", page=1), Section("z", page=2)])
    deck = LoadedDocument("b.pptx", [Section("x", slide=1), Section("y", slide=3)])
    book = LoadedDocument("c.xlsx", [Section("x", sheet="Q1", row=1), Section("y", sheet="Q1", row=2)])
    assert page_count([pdf]) == 2 and page_count([deck]) == 2 and page_count([book]) == 1
    assert page_count([LoadedDocument("d.md", [Section("text", heading_path=["A"])])]) is None
    (tmp_path / "a.md").write_bytes(b"12345")
    files = [SourceFile(tmp_path / "a.md", "a.md"), SourceFile(tmp_path / "gone.md", "gone.md")]
    assert file_sizes(files) == [5, 0]


def test_the_cli_says_pages_and_time_left() -> None:
    assert pages_text(1) == "1 page" and pages_text(12) == "12 pages"
    assert time_left(0.4) == "about 1 s left" and time_left(42) == "about 42 s left"
    assert (
        time_left(130) == "about 2 min left"
        and time_left(150) == "about 3 min left"
        and time_left(3900) == "about 1 h 05 min left"
    )
