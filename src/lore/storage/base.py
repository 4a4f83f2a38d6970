"""The file storage every replica shares (uploads, originals, quality reports, scenario stamps): one
protocol, keys like `kbs/<kb id>/uploads/<name>` (`layout`), and a local path for each key that loaders
and reports use."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Entry:
    """One stored file directly under a prefix: its name (no folder) and size in bytes."""

    name: str
    size: int


def check_key(key: str) -> str:
    """`key` if it is a plain relative key (no empty, `.` or `..` part); ValueError otherwise."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in key:
        raise ValueError(f"storage key {key!r}: must be a relative path without '.', '..' or empty parts")
    return key


@runtime_checkable
class Storage(Protocol):
    """Shared files by key. `root` is the local folder mirroring the keys (the files themselves for a
    directory; a download cache for a bucket): `path(key)` is where a key's local copy lives."""

    root: Path

    def path(self, key: str) -> Path:
        """The local path of `key` (no I/O; the file may be absent or stale: see `fetch`)."""
        ...

    def fetch(self, key: str) -> Path | None:
        """An up-to-date local copy of `key`, or None when nothing is stored under it."""
        ...

    def put(self, key: str, src: Path) -> None:
        """Store the finished local file `src` under `key` (moved: `src` is gone afterwards)."""
        ...

    def publish(self, key: str) -> None:
        """Store the file written at `path(key)` (reports written in place); a directory: nothing to do."""
        ...

    def read_bytes(self, key: str) -> bytes | None:
        """The stored bytes, or None when nothing is stored under `key`."""
        ...

    def write_bytes(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there."""
        ...

    def list(self, prefix: str) -> list[Entry]:
        """Files directly under the folder `prefix` (names not starting with '.'), sorted by name."""
        ...

    def folders(self, prefix: str) -> builtins.list[str]:
        """The names of the folders directly under the folder `prefix` (not starting with '.'), sorted."""
        ...

    def move_prefix(self, src: str, dest: str) -> int:
        """Move every file under the folder `src` to the same place under `dest` (one already there is
        kept; the old copy goes); the files moved. Safe when several processes move the same folder."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Delete every file under the folder `prefix` (absent: nothing happens)."""
        ...

    def delete(self, key: str) -> bool:
        """Delete the one file stored under `key`; False when there was none."""
        ...

    def key_of(self, path: Path) -> str | None:
        """The key whose local copy is `path`, or None for a path outside `root`."""
        ...

    def check(self) -> None:
        """Raise if the storage cannot be reached (for readiness)."""
        ...
