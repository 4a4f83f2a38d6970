"""The default storage: a directory (on one machine, or a shared mount such as NFS or a volume)."""

from __future__ import annotations

import builtins
import os
import shutil
import tempfile
from pathlib import Path

from lore.storage.base import Entry, check_key


class DirStorage:
    """Keys are files under `root`; writes are atomic renames, so readers never see half a file."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / check_key(key)

    def fetch(self, key: str) -> Path | None:
        path = self.path(key)
        return path if path.is_file() else None

    def put(self, key: str, src: Path) -> None:
        dest = self.path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dest)

    def publish(self, key: str) -> None:
        self.path(key)  # already in place

    def read_bytes(self, key: str) -> bytes | None:
        path = self.fetch(key)
        return path.read_bytes() if path else None

    def write_bytes(self, key: str, data: bytes) -> None:
        dest = self.path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=".tmp-", delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, dest)

    def list(self, prefix: str) -> list[Entry]:
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return [
            Entry(p.name, p.stat().st_size)
            for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".")
        ]

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.path(prefix), ignore_errors=True)

    def folders(self, prefix: str) -> builtins.list[str]:
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return [p.name for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")]

    def move_prefix(self, src: str, dest: str) -> int:
        return move_tree(self.path(src), self.path(dest))

    def delete(self, key: str) -> bool:
        path = self.path(key)
        if not path.is_file():
            return False
        path.unlink(missing_ok=True)
        return True

    def key_of(self, path: Path) -> str | None:
        return _relative_key(self.root, path)

    def check(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not os.access(self.root, os.W_OK):
            raise PermissionError(f"storage directory {self.root} is not writable")


def move_tree(src: Path, dest: Path) -> int:
    """Move every file under `src` to the same place under `dest` (one already there is kept), then remove
    `src`; the files moved. Safe when another process moves the same folder at the same time."""
    if not src.is_dir():
        return 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, dest)  # `dest` absent (or empty): the whole folder in one atomic step
        return sum(1 for p in dest.rglob("*") if p.is_file())
    except FileNotFoundError:  # another process moved it first
        return 0
    except OSError:  # `dest` holds files already: file by file
        pass
    moved = 0
    for path in sorted(src.rglob("*")):
        target = dest / path.relative_to(src)
        if not path.is_file() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(path, target)
            moved += 1
        except FileNotFoundError:
            pass
    shutil.rmtree(src, ignore_errors=True)
    return moved


def _relative_key(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
