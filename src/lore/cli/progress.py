"""Rich progress bars for ingestion, and the stop flag Ctrl-C and SIGTERM set during one."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Self, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from lore.cli.texts import pages_text, time_left
from lore.ingest.pipeline import FileResult
from lore.ingest.pipeline import Progress as IngestProgress


class StopFlag(threading.Event):
    """Set by the first SIGINT/SIGTERM; `code` is the exit code that signal asks for (130, 143)."""

    code = 0


@contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """While inside, SIGINT and SIGTERM set the flag (the work stops at its next check); a second one
    exits at once. A signal the caller ignores (a background job's SIGINT) stays ignored."""
    flag = StopFlag()

    def handle(signum: int, frame: FrameType | None) -> None:
        if flag.is_set():
            os.write(2, b"\nstopped at once; the file in progress is redone next time\n")
            os._exit(128 + signum)
        flag.code = 128 + signum
        flag.set()
        os.write(2, b"\nstopping: finished files are kept (signal again to quit at once)\n")

    previous: dict[signal.Signals, object] = {}
    if threading.current_thread() is threading.main_thread():  # only there can handlers be set
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handle)
    try:
        yield flag
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)  # type: ignore[arg-type]


class RichIngestProgress(IngestProgress):
    """Two bars: files done (with the run's time left), and chunks embedded in the current file (with its
    pages); `stop` ends the run early."""

    def __init__(self, console: Console, total_files: int, stop: threading.Event | None = None) -> None:
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.files = self.bars.add_task("files", total=total_files)
        self.chunks = self.bars.add_task("chunks", total=0, visible=False)
        self.stop = stop

    def __enter__(self) -> Self:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def file_started(self, name: str, chunks: int, pages: int | None = None) -> None:
        of = f" ({pages_text(pages)})" if pages else ""
        self.bars.reset(self.chunks, total=chunks, visible=True, description=f"embedding {name[-40:]}{of}")

    def embedded(self, n: int, eta_s: float | None = None) -> None:
        self.bars.update(self.chunks, completed=n)
        self._eta(eta_s)

    def file_done(self, result: FileResult, eta_s: float | None = None) -> None:
        self.bars.advance(self.files)
        self._eta(eta_s)

    def _eta(self, eta_s: float | None) -> None:
        self.bars.update(self.files, description=f"files, {time_left(eta_s)}" if eta_s else "files")

    def stop_requested(self) -> bool:
        return self.stop is not None and self.stop.is_set()


def ingest_progress(
    console: Console, total_files: int, stop: threading.Event | None = None
) -> RichIngestProgress | PlainIngestProgress:
    """Rich bars on a terminal; off one (a log, CI), a plain line on stderr every so often."""
    if console.is_terminal:
        return RichIngestProgress(console, total_files, stop)
    return PlainIngestProgress(total_files, stop)


class PlainIngestProgress(IngestProgress):
    """ "ingest: 12/200 files, 30 pages, 3,400 chunks, 1m20s elapsed, about 4 min left" at most every
    `every_s` seconds (and when the last file is done), so a long run off a terminal is not silent."""

    def __init__(
        self,
        total_files: int,
        stop: threading.Event | None = None,
        every_s: float = 10.0,
        out: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.stop, self.every_s = total_files, stop, every_s
        self.out = out
        self.clock = clock
        self.done = self.chunks = self.pages = 0
        self.current, self.embedding, self.current_chunks = "", 0, 0
        self.current_pages: int | None = None
        self.eta_s: float | None = None
        self.started = self.last = self.clock()

    def __enter__(self) -> Self:
        self.started = self.last = self.clock()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def file_started(self, name: str, chunks: int, pages: int | None = None) -> None:
        self.current, self.current_chunks, self.current_pages, self.embedding = name, chunks, pages, 0

    def embedded(self, n: int, eta_s: float | None = None) -> None:
        self.embedding, self.eta_s = n, eta_s
        if self.clock() - self.last >= self.every_s:  # one big file: say where its embedding is
            of = f" ({pages_text(self.current_pages)})" if self.current_pages else ""
            self._line(
                f", embedding {self.current[-40:]}{of} {self.embedding:,}/{self.current_chunks:,} chunks"
            )

    def file_done(self, result: FileResult, eta_s: float | None = None) -> None:
        self.done += 1
        self.chunks += result.chunks
        self.eta_s = eta_s
        if result.name == self.current and result.status == "ingested":
            self.pages += self.current_pages or 0
        if self.done == self.total or self.clock() - self.last >= self.every_s:
            self._line()

    def stop_requested(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def _line(self, detail: str = "") -> None:
        now = self.clock()
        self.last, elapsed = now, now - self.started
        left = f", {time_left(self.eta_s)}" if self.eta_s and self.done < self.total else ""
        pages = f", {pages_text(self.pages)}" if self.pages else ""
        out = self.out or sys.stderr
        print(
            f"ingest: {self.done}/{self.total} files{pages}, {self.chunks:,} chunks{detail}, "
            f"{duration(elapsed)} elapsed{left}",
            file=out,
            flush=True,
        )


def duration(seconds: float) -> str:
    """45s, 1m20s, 2h03m."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
