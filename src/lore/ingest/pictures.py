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
from lore.ingest.loaders.limits import FileLimits

PICTURE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg"})


class BatchPictures:
    """The picture files of one ingest, looked up from the pages that link them; each read once."""

    def __init__(
        self,
        files: Iterable[SourceFile],
        access: Callable[[SourceFile], Any] = lambda _f: None,
        *,
        ocr: bool = True,
        limits: FileLimits | None = None,
    ) -> None:
        self._pages: dict[Path, SourceFile] = {}
        self._pictures: dict[Path, SourceFile] = {}
        for f in files:
            key = f.path.resolve()
            self._pages[key] = f
            if f.path.suffix.lower() in PICTURE_SUFFIXES:
                self._pictures[key] = f
        self._access, self.ocr, self.limits = access, ocr, limits or FileLimits()
        self._texts: dict[Path, str] = {}
        self._lock = threading.Lock()

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
        with self._lock:
            if target in self._texts:
                return self._texts[target] or None
        try:
            docs = load_file(target, ocr=self.ocr, limits=self.limits)
            text = "\n".join(s.text for d in docs for s in d.sections if s.text.strip())
        except LoadError:
            text = ""
        with self._lock:
            self._texts[target] = text
        return text or None

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
