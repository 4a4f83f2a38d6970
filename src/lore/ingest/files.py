"""Finding the files to ingest and fingerprinting them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from lore.errors import LoreError


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest: where it is on disk and the stable name it is catalogued under."""

    path: Path
    name: str  # relative to the parent of the folder given (or the bare file name)


def discover(inputs: list[Path]) -> list[SourceFile]:
    """Expand files and folders (recursively, hidden entries skipped) in a stable order."""
    found: dict[str, SourceFile] = {}
    for item in inputs:
        if not item.exists():
            raise LoreError(f"{item}: no such file or folder")
        if item.is_file():
            found.setdefault(item.name, SourceFile(item, item.name))
            continue
        base = item.resolve().parent
        for path in sorted(item.resolve().rglob("*")):
            rel = path.relative_to(base)
            if path.is_file() and not any(part.startswith(".") for part in rel.parts):
                found.setdefault(rel.as_posix(), SourceFile(path, rel.as_posix()))
    return list(found.values())


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def links_outside(inputs: list[Path], roots: list[Path]) -> list[SourceFile]:
    """Files `discover` would read whose real path (symlinks followed) lies outside every one of `roots`."""
    real_roots = [root.expanduser().resolve() for root in roots]
    return [
        f for f in discover(inputs) if not any(f.path.resolve().is_relative_to(root) for root in real_roots)
    ]
