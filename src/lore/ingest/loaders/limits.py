"""Size limits checked before a file is parsed: ZIP-based formats' decompressed size, and PDF pages.

A 342 KB DOCX can inflate to 300 MB of XML; parsing it would take the process's memory with it. The
archive's directory states every entry's sizes, so the check costs no decompression.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import LoadError, LoadErrorKind

if TYPE_CHECKING:
    from lore.config import IngestSettings


@dataclass(frozen=True)
class FileLimits:
    """What a file may hold before it is parsed (defaults: `[ingest]` settings' defaults)."""

    max_unzipped_bytes: int = 200_000_000
    max_zip_entries: int = 10_000
    max_zip_ratio: float = 200.0
    max_pdf_pages: int = 2000
    max_page_pictures: int = 50

    @classmethod
    def from_settings(cls, ingest: IngestSettings) -> FileLimits:
        return cls(
            int(ingest.max_unzipped_mb * 1e6),
            ingest.max_zip_entries,
            ingest.max_zip_ratio,
            ingest.max_pdf_pages,
            ingest.max_page_pictures,
        )


def check_file(path: Path, limits: FileLimits) -> None:
    """A `LoadError` with the reason if `path` is a ZIP archive or a PDF over `limits`."""
    if path.suffix.lower() == ".pdf":
        _check_pdf(path, limits)
    elif zipfile.is_zipfile(path):
        _check_zip(path, limits)


def _check_zip(path: Path, limits: FileLimits) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise LoadError(str(path), f"not a valid ZIP-based document ({exc})") from exc
    if len(entries) > limits.max_zip_entries:
        raise LoadError(
            str(path),
            f"archive has {len(entries)} entries, limit {limits.max_zip_entries}",
            LoadErrorKind.TOO_LARGE,
        )
    unzipped = sum(e.file_size for e in entries)
    if unzipped > limits.max_unzipped_bytes:
        raise LoadError(
            str(path),
            f"decompresses to {unzipped / 1e6:.1f} MB, limit {limits.max_unzipped_bytes / 1e6:g} MB",
            LoadErrorKind.TOO_LARGE,
        )
    packed = max(1, sum(e.compress_size for e in entries))
    if unzipped > 1_000_000 and unzipped / packed > limits.max_zip_ratio:
        raise LoadError(
            str(path),
            f"decompresses {unzipped / packed:.0f} times its size (to "
            f"{unzipped / 1e6:.1f} MB), limit {limits.max_zip_ratio:g} times",
            LoadErrorKind.TOO_LARGE,
        )


def _check_pdf(path: Path, limits: FileLimits) -> None:
    import pymupdf

    try:
        with pymupdf.open(path, filetype="pdf") as doc:  # type: ignore[no-untyped-call]
            pages = doc.page_count
    except (pymupdf.FileDataError, RuntimeError, ValueError):
        return  # the PDF loader reports a broken file with its own reason
    if pages > limits.max_pdf_pages:
        raise LoadError(
            str(path), f"PDF has {pages} pages, limit {limits.max_pdf_pages}", LoadErrorKind.TOO_LARGE
        )
