"""The loader protocol, the registry of loaders by file suffix, and shared helpers."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from lore.errors import LoadError
from lore.ingest.loaders.limits import FileLimits, check_file
from lore.schema import LoadedDocument

Loader = Callable[..., list[LoadedDocument]]
"""A loader reads one file (`loader(path)`, PDF also takes `ocr=`) and returns its documents
(one, or many for record formats).

It raises `LoadError(path, reason)` for a file it cannot read: corrupt, encrypted, empty,
image-only with no OCR text.
"""

_LOADERS: dict[str, Loader] = {}


def register_loader(*suffixes: str) -> Callable[[Loader], Loader]:
    """Decorator: register `fn` for the given lower-case suffixes (with the dot)."""

    def wrap(fn: Loader) -> Loader:
        for suffix in suffixes:
            _LOADERS[suffix.lower()] = fn
        return fn

    return wrap


def supported_suffixes() -> list[str]:
    """Suffixes that have a loader."""
    _import_builtin()
    return sorted(_LOADERS)


def loader_for(path: Path) -> Loader:
    """The loader registered for `path`'s suffix, or a `LoadError` naming the file."""
    _import_builtin()
    loader = _LOADERS.get(path.suffix.lower())
    if loader is None:
        raise LoadError(str(path), f"unsupported file type {path.suffix or '(none)'!r}")
    return loader


def load_file(path: Path, *, ocr: bool = True, limits: FileLimits | None = None) -> list[LoadedDocument]:
    """Load one file with its registered loader; any unexpected failure becomes a `LoadError`.

    `ocr` reaches the loaders that take it (PDF); the others ignore it. `limits` (default: the default
    limits) are checked before parsing: ZIP-based formats' decompressed size and entries, PDF pages.
    """
    loader = loader_for(path)
    check_file(path, limits or FileLimits())
    options = {"ocr": ocr} if "ocr" in inspect.signature(loader).parameters else {}
    try:
        docs = loader(path, **options)
    except LoadError:
        raise
    except Exception as exc:  # a broken file must not stop the batch
        raise LoadError(str(path), f"cannot be read ({type(exc).__name__}: {exc})") from exc
    if not any(s.text.strip() for d in docs for s in d.sections):
        raise LoadError(str(path), "no text found (empty file)")
    return docs


def _import_builtin() -> None:
    # Importing the modules runs their @register_loader decorators.
    from lore.ingest.loaders import builtin  # noqa: F401
