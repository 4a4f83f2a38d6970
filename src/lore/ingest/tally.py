"""What an ingest or a build reports over its files (chunks, counts by status), shared by the pipeline's
report and the CLI's outcome; standard library only, so a client-only `lore` may import it."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar


class TalliedFile(Protocol):
    """One file's outcome as far as a tally reads it."""

    @property
    def status(self) -> str: ...

    @property
    def chunks(self) -> int: ...


F = TypeVar("F", bound=TalliedFile)


class FileTally(Generic[F]):
    """Totals over `files` (a dataclass field of the subclass)."""

    files: list[F]

    @property
    def chunks(self) -> int:
        """The chunks of all files."""
        return sum(f.chunks for f in self.files)

    def count(self, status: str) -> int:
        """How many files ended with `status`."""
        return sum(1 for f in self.files if f.status == status)
