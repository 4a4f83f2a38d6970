"""Rich progress bars for ingestion."""

from __future__ import annotations

from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lore.ingest.pipeline import FileResult
from lore.ingest.pipeline import Progress as IngestProgress


class RichIngestProgress(IngestProgress):
    """Two bars: files done, and chunks embedded in the current file."""

    def __init__(self, console: Console, total_files: int) -> None:
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
