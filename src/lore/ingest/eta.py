"""The time left of an ingest or build from its real work so far: one number, sent in its progress events,
so the console and the CLI say the same thing."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from lore.ingest.files import SourceFile
from lore.schema import LoadedDocument

MIN_CHUNKS = 32  # before one file is done, no estimate until this many chunks are embedded


def eta_seconds(
    *,
    elapsed_s: float,
    embedded: int,
    parsed_chunks: int,
    parsed_bytes: int,
    unparsed_bytes: int,
    files_done: int,
) -> float | None:
    """Seconds left at the rate so far (chunks embedded per second of the run), applied to the chunks of
    the files reached not yet embedded plus the files not reached, counted as chunks by their bytes at the
    chunks per byte of the files reached; None before 1 file is done or `MIN_CHUNKS` are embedded, and
    when nothing is left."""
    if embedded <= 0 or elapsed_s <= 0 or (files_done < 1 and embedded < MIN_CHUNKS):
        return None
    per_byte = parsed_chunks / parsed_bytes if parsed_bytes > 0 else 0.0
    left = max(0, parsed_chunks - embedded) + unparsed_bytes * per_byte
    return left / (embedded / elapsed_s) if left > 0 else None


class EtaClock:
    """Follows one run (the bytes and chunks of the files reached, the chunks embedded) for `eta_seconds`."""

    def __init__(self, sizes: Sequence[int], clock: Callable[[], float] = time.monotonic) -> None:
        self.clock, self.started = clock, clock()
        self.unparsed_bytes, self.parsed_bytes = sum(sizes), 0
        self.parsed_chunks = self.embedded_chunks = self.before = self.files_done = 0

    def reached(self, size: int, chunks: int) -> None:
        """The run reached a file of `size` bytes with `chunks` to embed (0: skipped or failed)."""
        self.unparsed_bytes = max(0, self.unparsed_bytes - size)
        self.parsed_bytes += size
        self.before, self.parsed_chunks = self.parsed_chunks, self.parsed_chunks + chunks

    def embedded(self, n: int) -> float | None:
        """`n` chunks of the current file are embedded; returns the ETA."""
        self.embedded_chunks = self.before + n
        return self.eta_s()

    def done(self) -> float | None:
        """The current file is done (all its chunks embedded); returns the ETA."""
        self.files_done += 1
        self.embedded_chunks = self.parsed_chunks
        return self.eta_s()

    def eta_s(self) -> float | None:
        """Seconds left, rounded to a whole second, or None while too little is done to say."""
        eta = eta_seconds(
            elapsed_s=self.clock() - self.started,
            embedded=self.embedded_chunks,
            parsed_chunks=self.parsed_chunks,
            parsed_bytes=self.parsed_bytes,
            unparsed_bytes=self.unparsed_bytes,
            files_done=self.files_done,
        )
        return None if eta is None else float(round(eta))


def page_count(documents: Sequence[LoadedDocument]) -> int | None:
    """The distinct pages, slides and sheets of a loaded file; None for a file without any."""
    pages = {
        (i, "page", s.page)
        if s.page is not None
        else (i, "slide", s.slide)
        if s.slide is not None
        else (i, "sheet", s.sheet)
        for i, doc in enumerate(documents)
        for s in doc.sections
        if s.page is not None or s.slide is not None or s.sheet is not None
    }
    return len(pages) or None


def file_sizes(files: Sequence[SourceFile]) -> list[int]:
    """The bytes of each file (0 for one gone meanwhile: the run reports it)."""
    sizes = []
    for f in files:
        try:
            sizes.append(f.path.stat().st_size)
        except OSError:
            sizes.append(0)
    return sizes
