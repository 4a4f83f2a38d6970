"""Shared file storage: a directory (default) or an S3-compatible bucket (`[storage] url = "s3://..."`)."""

from __future__ import annotations

from pathlib import Path

from lore.config import Settings
from lore.storage.base import Entry, Storage, check_key
from lore.storage.local import DirStorage

__all__ = ["DirStorage", "Entry", "Storage", "check_key", "open_storage", "publish_folder"]


def open_storage(settings: Settings) -> Storage:
    """The configured storage: a bucket when `storage.url` is set (cached under `home`), else the directory
    `storage.dir` (default: `home`)."""
    if settings.storage.url:
        from lore.storage.s3 import S3Storage

        return S3Storage(settings.storage, settings.home / "storage-cache")
    return DirStorage(settings.files_dir)


def publish_folder(storage: Storage, folder: Path) -> None:
    """Store every file written in place under `folder` (a local folder below `storage.root`)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        key = storage.key_of(path)
        if path.is_file() and key is not None:
            storage.publish(key)
