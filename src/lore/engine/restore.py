"""`lore restore`: a backup (see `lore.engine.backup`) into an empty home and catalog of any backend."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, DateTime, Engine, func, inspect, select, text
from sqlalchemy.exc import SQLAlchemyError

from lore.catalog import head_revision, mask_url
from lore.catalog.catalog import open_engine
from lore.catalog.migrate import current_revision, upgrade
from lore.catalog.models import Base
from lore.config import Settings
from lore.engine.backup import (
    EMBEDDED,
    FORMAT,
    MANIFEST,
    BackupProgress,
    QuietProgress,
    home_parts,
    is_tar,
    store_file,
)
from lore.errors import LoreError
from lore.storage import open_storage

_BATCH = 1000


def restore(settings: Settings, src: Path, progress: BackupProgress | None = None) -> dict[str, Any]:
    """Restore the backup at `src` into the (empty) home and catalog `settings` name; its manifest."""
    progress = progress or QuietProgress()
    with _opened(src) as root:
        manifest = _manifest(root)
        _check_home(settings)
        engine = open_engine(settings.resolved_catalog_url, settings.catalog)
        try:
            _check_catalog(engine, settings)
            upgrade(engine)
            _load_catalog(engine, root / "catalog", progress)
        except SQLAlchemyError as exc:
            raise LoreError(
                f"cannot restore into catalog {mask_url(settings.resolved_catalog_url)}: "
                f"{type(getattr(exc, 'orig', None) or exc).__name__}"
            ) from exc
        finally:
            engine.dispose()
        _restore_stores(settings, manifest, root / "store", progress)
        _restore_files(settings, root / "files", progress)
    return manifest


@contextmanager
def _opened(src: Path) -> Iterator[Path]:
    """The backup's folder: `src` itself, or a .tar unpacked into a temporary folder."""
    if not src.exists():
        raise LoreError(f"{src}: no such backup")
    if src.is_dir():
        yield src
        return
    if not is_tar(src):
        raise LoreError(f"{src}: not a backup (a directory or a .tar/.tar.gz file made by lore backup)")
    with tempfile.TemporaryDirectory(prefix="lore-restore-") as tmp:
        try:
            with tarfile.open(src) as tar:
                tar.extractall(tmp, filter="data")  # no links or paths outside the folder
        except (tarfile.TarError, OSError) as exc:
            raise LoreError(f"{src}: cannot unpack ({type(exc).__name__})") from exc
        found = [p.parent for p in Path(tmp).glob(f"*/{MANIFEST}")]
        yield found[0] if found else Path(tmp)


def _manifest(root: Path) -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LoreError("not a Lore backup: its manifest.json is missing or unreadable") from exc
    if manifest.get("format") != FORMAT:
        raise LoreError(f"backup format {manifest.get('format')!r}: this Lore reads format {FORMAT}")
    if manifest.get("schema_revision") != head_revision():
        raise LoreError(
            f"the backup's catalog is at schema revision {manifest.get('schema_revision')} (Lore "
            f"{manifest.get('lore_version')}); this Lore is at {head_revision()}: restore it with the "
            "Lore that made it, then upgrade"
        )
    return manifest


# --- the target must be empty -----------------------------------------------------------------------


def _check_home(settings: Settings) -> None:
    """Refuse a home that already holds stores or stored files."""
    folder = store_file(settings, "x").parent
    if folder.is_dir() and any(folder.glob("*.sqlite")):
        raise LoreError(f"{folder}: already holds knowledge-base stores; restore needs an empty home")
    if settings.storage.url:
        return
    root = settings.files_dir
    skip = {p.resolve() for p in [*home_parts(settings), folder]}
    db = _sqlite_path(settings.resolved_catalog_url)
    for path in root.iterdir() if root.is_dir() else []:
        if path.resolve() in skip or path.name.startswith(".") or (db and path.name.startswith(db.name)):
            continue
        raise LoreError(f"{root}: not empty ({path.name}); restore needs an empty home")


def _sqlite_path(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None


def _check_catalog(engine: Engine, settings: Settings) -> None:
    """Refuse a catalog that holds any row (an empty one, migrated or not, is fine)."""
    if current_revision(engine) is None:
        return
    with engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
        for table in Base.metadata.sorted_tables:
            if table.name in present and conn.execute(select(func.count()).select_from(table)).scalar():
                raise LoreError(
                    f"catalog {mask_url(settings.resolved_catalog_url)} is not empty ({table.name} has "
                    "rows); restore needs an empty catalog"
                )


# --- catalog ----------------------------------------------------------------------------------------


def _load_catalog(engine: Engine, folder: Path, progress: BackupProgress) -> None:
    """Insert every table's rows, parents first, in one transaction."""
    tables = Base.metadata.sorted_tables
    progress.step("catalog", len(tables))
    with engine.begin() as conn:
        for table in tables:
            path = folder / f"{table.name}.jsonl"
            if path.is_file():
                stamps = {c.name for c in table.columns if isinstance(c.type, DateTime) or _is_stamp(c.type)}
                batch: list[dict[str, Any]] = []
                with path.open(encoding="utf-8") as fh:
                    for line in fh:
                        batch.append(_decode(json.loads(line), stamps))
                        if len(batch) >= _BATCH:
                            conn.execute(table.insert(), batch)
                            batch = []
                if batch:
                    conn.execute(table.insert(), batch)
            progress.advance()
        if engine.dialect.name == "postgresql":
            _advance_sequences(conn)


def _is_stamp(type_: Any) -> bool:
    return isinstance(getattr(type_, "impl_instance", None), DateTime)


def _decode(row: dict[str, Any], stamps: set[str]) -> dict[str, Any]:
    for name in stamps:
        if isinstance(row.get(name), str):
            row[name] = datetime.fromisoformat(row[name])
    return row


def _advance_sequences(conn: Connection) -> None:
    """PostgreSQL: serial keys continue after the restored rows (explicit ids do not move a sequence)."""
    for table in Base.metadata.sorted_tables:
        for col in table.primary_key.columns:
            if col.autoincrement is True:
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', '{col.name}'), "
                        f"COALESCE(MAX({col.name}), 1), MAX({col.name}) IS NOT NULL) FROM {table.name}"
                    )
                )


# --- stores and files -------------------------------------------------------------------------------


def _restore_stores(
    settings: Settings, manifest: dict[str, Any], folder: Path, progress: BackupProgress
) -> None:
    progress.step("stores", len(manifest["kbs"]))
    for kb in manifest["kbs"]:
        src = folder / f"{kb['id']}.sqlite"
        if kb["store_backend"] == EMBEDDED and src.is_file():
            dst = store_file(settings, kb["id"])
            dst.parent.mkdir(parents=True, exist_ok=True)
            source, target = sqlite3.connect(src), sqlite3.connect(dst)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
        progress.advance()


def _restore_files(settings: Settings, folder: Path, progress: BackupProgress) -> None:
    found = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
    progress.step("files", len(found))
    storage = open_storage(settings)
    for path in found:
        key = path.relative_to(folder).as_posix()
        local = storage.path(key)
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(f".restore-{os.getpid()}-{local.name}")
        shutil.copy2(path, tmp)
        storage.put(key, tmp)
        progress.advance()
