"""Importing state that older Lore kept in files on one disk into catalog rows, once per file."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.catalog.catalog import Catalog
    from lore.catalog.models import KnowledgeBase

T = TypeVar("T")
IMPORTED = ".imported"  # the suffix an imported file is renamed with (kept, never read again)


def import_once(path: Path, load: Callable[[Path], T], store: Callable[[T], int]) -> int:
    """Load the file at `path`, store what it holds (rows already in the catalog win) and rename it
    `<name>.imported`; how many rows were added (0: no file, or another process imported it first)."""
    if not path.is_file():
        return 0
    try:
        data = load(path)
    except FileNotFoundError:
        return 0  # renamed by another process meanwhile
    except (ValueError, TypeError) as exc:
        raise LoreError(f"{path}: cannot import it into the catalog ({exc}); fix or remove the file") from exc
    added = store(data)
    with contextlib.suppress(FileNotFoundError):
        path.replace(path.with_name(path.name + IMPORTED))
    return added


class KbRows:
    """One knowledge base's rows of one kind in the catalog; the old file(s) at `legacy` that held them on
    one disk are imported on first use (`load_legacy` reads one, `store_legacy` writes what it held)."""

    def __init__(self, catalog: Catalog, kb: KnowledgeBase, legacy: Path | None = None) -> None:
        self.catalog, self.kb, self.legacy = catalog, kb, legacy

    def legacy_files(self) -> list[Path]:
        """The old files to import: the one file at `legacy` (a kind kept in a folder overrides this)."""
        return [] if self.legacy is None else [self.legacy]

    def load_legacy(self, path: Path) -> Any:
        raise NotImplementedError

    def store_legacy(self, data: Any) -> int:
        raise NotImplementedError

    def import_legacy(self) -> int:
        """Import each old file still there (then renamed `*.imported`); how many rows were added."""
        return sum(import_once(path, self.load_legacy, self.store_legacy) for path in self.legacy_files())
