"""Rich progress bars for ingestion, and the stop flag Ctrl-C and SIGTERM set during one."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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

    previous: dict[int, object] = {}
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
    """Two bars: files done, and chunks embedded in the current file; `stop` ends the run early."""

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

    def file_started(self, name: str, chunks: int) -> None:
        self.bars.reset(self.chunks, total=chunks, visible=True, description=f"embedding {name[-40:]}")

    def embedded(self, n: int) -> None:
        self.bars.update(self.chunks, completed=n)

    def file_done(self, result: FileResult) -> None:
        self.bars.advance(self.files)

    def stop_requested(self) -> bool:
        return self.stop is not None and self.stop.is_set()
