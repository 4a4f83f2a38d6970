"""Where a knowledge base's files live: everything under `kbs/<kb id>/` (uploads, quality reports and
calibration in storage; fetched web pages in `home`), so a new KB of a deleted one's name starts empty.

Older Lore kept them under the KB's name (`uploads/<name>`, `reports/<name>`, `<home>/web/<name>`);
`move_legacy_files` moves those of existing KBs to their id once (idempotent, safe from several processes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from lore.storage.base import Storage, check_key
from lore.storage.local import move_tree

log = logging.getLogger(__name__)
KBS = "kbs"  # never a legacy top folder: `uploads/<name>` and `reports/<name>` cannot collide with it
LEGACY_FOLDERS = ("uploads", "reports")  # `<folder>/<kb name>` before files were keyed by id
LEGACY_WEB = "web"  # `<home>/web/<kb name>` before the page cache was keyed by id


class HasId(Protocol):
    """A knowledge base record (only its id is read)."""

    @property
    def id(self) -> str: ...


def kb_key(kb: HasId) -> str:
    """The storage folder holding everything of a KB: `kbs/<id>`."""
    return check_key(f"{KBS}/{kb.id}")


def uploads_key(kb: HasId) -> str:
    """The storage folder of a KB's uploaded files."""
    return f"{kb_key(kb)}/uploads"


def removals_key(kb: HasId) -> str:
    """The pending removals of a versioned KB (hidden: never listed as an upload)."""
    return f"{uploads_key(kb)}/.removals.json"


def reports_key(kb: HasId, seq: int | None = None) -> str:
    """The storage folder of a KB's quality reports (`seq`: one version's, with its calibration)."""
    return f"{kb_key(kb)}/reports" + (f"/{seq}" if seq is not None else "")


def local_dir(home: Path, kb: HasId) -> Path:
    """The KB's folder of this machine's own files in `home` (not shared through storage)."""
    return home / kb_key(kb)


def web_cache_dir(home: Path, kb: HasId) -> Path:
    """Where a KB's fetched pages and their validators live (shared by CLI and API crawls)."""
    return local_dir(home, kb) / "web"


def legacy_keys(name: str) -> list[str]:
    """The storage folders a KB named `name` had before files were keyed by id."""
    return [check_key(f"{folder}/{name}") for folder in LEGACY_FOLDERS]


def legacy_web_dir(home: Path, name: str) -> Path:
    """The page cache a KB named `name` had before it was keyed by id."""
    return home / LEGACY_WEB / check_key(name)


def move_legacy_files(storage: Storage, home: Path, kbs: Mapping[str, str]) -> int:
    """Move the by-name folders of the existing KBs `kbs` (name -> id) to their id; the files moved.

    A folder of a name no KB has is left alone (a deleted KB's: never adopted; `create_kb` purges it).
    A file already at its new place is kept (written by this Lore): the old copy goes.
    """
    moved = 0
    for folder in LEGACY_FOLDERS:
        for name in storage.folders(folder):
            if name in kbs:
                moved += storage.move_prefix(f"{folder}/{name}", f"{KBS}/{kbs[name]}/{folder}")
    web = home / LEGACY_WEB
    for path in sorted(web.iterdir()) if web.is_dir() else []:
        if path.is_dir() and path.name in kbs:
            moved += move_tree(path, home / KBS / kbs[path.name] / "web")
    if moved:
        log.info("moved %d stored file(s) of knowledge bases from their name to their id", moved)
    return moved


def has_legacy_files(storage: Storage, home: Path) -> bool:
    """Whether any by-name folder is left (cheap: one listing per legacy folder)."""
    web = home / LEGACY_WEB
    return any(storage.folders(f) for f in LEGACY_FOLDERS) or (web.is_dir() and any(web.iterdir()))
