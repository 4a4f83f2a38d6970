"""Pictures a page shows, read into the page: a Markdown `![alt](ref)` or an HTML `<img>` whose file is in
the same ingest (same KB, same owner and access) is replaced by its text (OCR, or an SVG's words), so the
words of a picture are searched and cited with the page that shows them.

A link is followed only to a file of the batch: never outside it (`../../etc/…`), never to another
owner's file of a shared KB, never over the network.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from lore.errors import LoadError
from lore.ingest.files import SourceFile
from lore.ingest.loaders import load_file
from lore.ingest.loaders.base import LOADERS
from lore.ingest.loaders.limits import FileLimits
from lore.schema import LoadedDocument

# The loaders that read a picture, named so that asking does not import them (and PyMuPDF behind them).
_PICTURE_LOADERS = {"lore.ingest.loaders.image:load_image", "lore.ingest.loaders.svg:load_svg"}


def is_picture(path: Path) -> bool:
    """Whether `path` is read as a picture (by the image or SVG loader, whatever suffix registers them)."""
    loader = LOADERS.find(path.suffix.lower())
    return f"{getattr(loader, '__module__', '')}:{getattr(loader, '__qualname__', '')}" in _PICTURE_LOADERS


class BatchPictures:
    """The files of one ingest, loaded through here: a picture is read (OCR'd) once, whether pages show it,
    it is ingested on its own, or both."""

    def __init__(
        self,
        files: Iterable[SourceFile],
        access: Callable[[SourceFile], Any] = lambda _f: None,
        *,
        ocr: bool = True,
        limits: FileLimits | None = None,
    ) -> None:
        self._pages = {f.path.resolve(): f for f in files}
        self._pictures = {key: f for key, f in self._pages.items() if is_picture(f.path)}
        self._access, self.ocr, self.limits = access, ocr, limits or FileLimits()
        self._read: dict[Path, list[LoadedDocument] | LoadError] = {}
        self._lock = threading.Lock()

    def load(self, path: Path) -> list[LoadedDocument]:
        """`load_file` for a file of this ingest, its pages' pictures read from here; LoadError as there."""
        key = path.resolve()
        if key not in self._pictures:
            return load_file(path, ocr=self.ocr, limits=self.limits, pictures=self)
        with self._lock:
            read = self._read.get(key)
        if read is None:
            try:
                read = load_file(path, ocr=self.ocr, limits=self.limits)
            except LoadError as exc:
                read = exc
            with self._lock:
                self._read[key] = read
        if isinstance(read, LoadError):
            raise LoadError(read.path, read.reason, read.kind)
        return read

    def text(self, page: Path, ref: str) -> str | None:
        """The text of the picture `ref` links to from `page`, or None (not in this batch, another
        owner's, unreadable, or no words in it)."""
        if not self._pictures:
            return None
        target = self._find(page, ref)
        if target is None:
            return None
        owner = self._pages.get(page.resolve())
        if owner is None or self._access(owner) != self._access(self._pictures[target]):
            return None
        try:
            docs = self.load(target)
        except LoadError:
            return None
        return "\n".join(s.text for d in docs for s in d.sections if s.text.strip()) or None

    def _find(self, page: Path, ref: str) -> Path | None:
        parts = urlsplit(ref.strip())
        if parts.scheme or parts.netloc or not parts.path:
            return None  # http(s):, data:, //host/…: not a file of this batch
        link = PurePosixPath(unquote(parts.path))
        if link.is_absolute():  # site-root relative: the page's folder or one of its parents is the root
            bases = [page.parent, *page.parent.parents]
            rel = PurePosixPath(*link.parts[1:])
        else:
            bases, rel = [page.parent], link
        for base in bases:
            candidate = (base / rel).resolve()
            if candidate in self._pictures:
                return candidate
        return None
