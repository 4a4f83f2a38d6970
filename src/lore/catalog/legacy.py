"""Importing state that older Lore kept in files on one disk into catalog rows, once per file."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from lore.errors import LoreError

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
