"""The loader protocol and the registry of loaders by file suffix, from the `lore.loaders` entry points
(the built-ins are declared in Lore's pyproject.toml, plug-ins in their own packages')."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol

from lore.errors import LoadError, LoadErrorKind
from lore.ingest.loaders.limits import FileLimits, check_file
from lore.registry import Registry
from lore.schema import LoadedDocument

ENTRY_POINT_GROUP = "lore.loaders"

log = logging.getLogger("lore.ingest")
# An absolute path inside a message (POSIX with two or more parts, or a Windows drive path).
_ABS_PATH = re.compile(r"(?<![\w.~])(?:/[^\s/'\"()<>]+){2,}/?|\b[A-Za-z]:\\[^\s'\"()<>]+")


class PictureReader(Protocol):
    """The text of a picture a page links to (`ref` as written in the page), or None."""

    def text(self, page: Path, ref: str, /) -> str | None: ...


@dataclass(frozen=True)
class LoadOptions:
    """What a loader may be told besides the path."""

    ocr: bool = True  # read text inside images (scanned pages, pictures in documents, image files)
    pictures: PictureReader | None = None  # pictures a Markdown/HTML page shows, read into the page
    max_page_pictures: int = 50  # pictures read into one page; the rest keep their alt text


class Loader(Protocol):
    """Reads one file into its documents (one, or many for record formats and e-mail attachments).

    A file it cannot read raises `LoadError(path, reason, kind)`; any other exception is reported
    as a corrupt file. A loader may carry a `version` string: when it changes, the files it read
    before are read again on the next build.
    """

    def __call__(self, path: Path, options: LoadOptions, /) -> list[LoadedDocument]: ...


LOADERS: Registry[Loader] = Registry("loader", ENTRY_POINT_GROUP)


def register_loader(suffix: str, loader: Loader) -> None:
    """Register (or replace) the loader for a suffix such as ".foo" in this process."""
    LOADERS.register(suffix.lower(), loader)


def supported_suffixes() -> list[str]:
    """Suffixes that have a loader (built-in, registered or from an installed plugin)."""
    return LOADERS.names()


def loader_for(path: Path) -> Loader:
    """The loader for `path`'s suffix, or an `unsupported` `LoadError` naming the file."""
    loader = LOADERS.find(path.suffix.lower())
    if loader is None:
        raise LoadError(
            str(path), f"unsupported file type {path.suffix or '(none)'!r}", LoadErrorKind.UNSUPPORTED
        )
    return loader


def reader_version(path: PurePath) -> str:
    """The `version` the loader for `path`'s suffix declares, or "" (none, or no loader)."""
    return str(getattr(LOADERS.find(path.suffix.lower()), "version", "") or "")


def load_file(
    path: Path,
    *,
    ocr: bool = True,
    limits: FileLimits | None = None,
    pictures: PictureReader | None = None,
) -> list[LoadedDocument]:
    """Load one file with its loader; any unexpected failure becomes a `corrupt` `LoadError`. `limits`
    (default: the default limits) are checked before parsing: ZIP-based formats' size and entries, PDF
    pages. A reason never carries a server path or an unexpected exception's text (they go to the log)."""
    loader = loader_for(path)
    limits = limits or FileLimits()
    try:
        check_file(path, limits)
        docs = loader(path, LoadOptions(ocr, pictures, limits.max_page_pictures))
    except LoadError as exc:
        raise LoadError(str(path), safe_reason(exc.reason, path), exc.kind) from exc
    except Exception as exc:  # a broken file must not stop the batch
        log.warning("%s: cannot be read", path, exc_info=True)
        kind = path.suffix.lower() or "this"
        raise LoadError(str(path), f"cannot be read: damaged or not a valid {kind} file") from exc
    if not any(s.text.strip() for d in docs for s in d.sections):
        raise LoadError(str(path), "no text found (empty file)", LoadErrorKind.EMPTY)
    return docs


def safe_reason(reason: str, path: Path) -> str:
    """`reason` with the file's own path shown as its name and any other absolute path as `<path>`."""
    for full in {str(path), str(path.absolute()), str(path.resolve())}:
        reason = reason.replace(full, path.name)
    return _ABS_PATH.sub("<path>", reason)
