"""`lore backup`: one consistent archive of the catalog, each KB's store and the stored files, taken while
the service runs.

Archive layout (a directory, or the same in a .tar/.tar.gz): `manifest.json`; `catalog/<table>.jsonl`
(one JSON object a row, so it restores into any catalog backend); `store/<kb id>.sqlite` (embedded
stores); `files/<key>` (the storage directory). The catalog is read in one snapshot first, then each
store is copied under SQLite's own snapshot; what a writer added in between is cut back to the catalog.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, create_engine, inspect, select
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

import lore
from lore.catalog.catalog import Catalog
from lore.catalog.models import Base
from lore.config import Settings
from lore.errors import LoreError

FORMAT = 1
MANIFEST = "manifest.json"
EMBEDDED = "embedded"
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")
# A build lock names a process of the backed-up host: a restored home starts without any.
_NOT_BACKED_UP = {"kb_build_locks"}


class BackupProgress(Protocol):
    """Where long work reports itself: a named step with its total, then advances."""

    def step(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class QuietProgress:
    """Reports nothing."""

    def step(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class _Snapshot:
    """What the store step needs to know of the catalog snapshot."""

    kbs: list[dict[str, Any]] = field(default_factory=list)
    max_seq: dict[str, int] = field(default_factory=dict)  # versioned KBs: their newest version
    chunk_file: dict[str, dict[str, str]] = field(default_factory=dict)  # kb id -> chunk id -> file id


def store_file(settings: Settings, kb_id: str) -> Path:
    """The embedded store file of a KB (the collection `kb_<id>` that `Wiring.store` opens)."""
    folder = Path(settings.store.uri) if settings.store.uri else settings.home / "store" / EMBEDDED
    return folder / f"kb_{kb_id}.sqlite"


def is_tar(path: Path) -> bool:
    """Whether `path` names a tar archive rather than a directory."""
    return path.name.endswith(_TAR_SUFFIXES)


def encode(value: Any) -> Any:
    """A catalog value as JSON (timestamps as ISO 8601 with their zone)."""
    return value.isoformat() if isinstance(value, datetime) else value


def backup(
    catalog: Catalog, settings: Settings, dest: Path, progress: BackupProgress | None = None
) -> dict[str, Any]:
    """Write a backup of the catalog, stores and files to `dest` (a new directory or .tar); its manifest."""
    progress = progress or QuietProgress()
    if dest.exists():
        raise LoreError(f"{dest}: already exists; name a new directory or .tar file for the backup")
    if not dest.parent.is_dir():
        raise LoreError(f"{dest.parent}: no such directory")
    for kept in {settings.home, settings.files_dir}:
        if dest.resolve().is_relative_to(kept.resolve()):
            raise LoreError(f"{dest}: inside {kept}, which the backup copies; put it elsewhere")
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        manifest = _write(catalog, settings, work, dest, progress)
        if is_tar(dest):
            progress.step("archive", 1)
            mode: Literal["w", "w:gz"] = "w" if dest.name.endswith(".tar") else "w:gz"
            partial = work.with_name(f"{work.name}.tar")
            try:
                with tarfile.open(partial, mode) as tar:
                    tar.add(work, arcname="lore-backup")
                partial.rename(dest)
            finally:
                partial.unlink(missing_ok=True)
            progress.advance()
        else:
            work.rename(dest)  # a half-written backup never carries the final name
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def _write(
    catalog: Catalog, settings: Settings, out: Path, dest: Path, progress: BackupProgress
) -> dict[str, Any]:
    created = datetime.now(UTC)
    revision, counts, snap = _export_catalog(catalog.engine, out / "catalog", progress)
    left_out = _copy_stores(settings, snap, out, progress)
    if left_out:
        counts.update(_drop_files(out / "catalog", {f for _kb, f, _p in left_out}))
    files = _copy_files(catalog.engine, settings, out / "files", dest, progress)
    manifest = {
        "format": FORMAT,
        "lore_version": lore.__version__,
        "schema_revision": revision,
        "created_at": created.isoformat(),
        "catalog_backend": catalog.engine.dialect.name,
        "tables": counts,
        "kbs": [
            {"id": k["id"], "name": k["name"], "store_backend": k["store_backend"], "chunks": k["chunks"]}
            for k in snap.kbs
        ],
        "files": files,
        "left_out": [{"kb": kb, "path": path} for kb, _f, path in left_out],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    return manifest


# --- catalog ----------------------------------------------------------------------------------------


@contextmanager
def _snapshot_connection(engine: Engine, scratch: Path) -> Iterator[Connection]:
    """A connection that sees one consistent state of the catalog while writers go on."""
    if engine.dialect.name == "sqlite":
        # SQLite's online backup copies a committed state; the copy is then read at leisure.
        with tempfile.TemporaryDirectory(prefix=".catalog-", dir=scratch) as tmp:
            copy = Path(tmp) / "catalog.db"
            src, dst = sqlite3.connect(_sqlite_file(engine)), sqlite3.connect(copy)
            try:
                src.backup(dst)
            finally:
                src.close()
                dst.close()
            snap = create_engine(f"sqlite:///{copy}", poolclass=NullPool)
            try:
                with snap.connect() as conn:
                    yield conn
            finally:
                snap.dispose()
        return
    # Server databases: every read of one REPEATABLE READ transaction sees the same snapshot.
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        yield conn


def _sqlite_file(engine: Engine) -> str:
    database = make_url(engine.url).database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        raise LoreError("an in-memory SQLite catalog cannot be backed up")
    return database


def _export_catalog(
    engine: Engine, out: Path, progress: BackupProgress
) -> tuple[str, dict[str, int], _Snapshot]:
    out.mkdir()
    snap = _Snapshot()
    counts: dict[str, int] = {}
    with _snapshot_connection(engine, out.parent) as conn:
        revision = MigrationContext.configure(conn).get_current_revision()
        unknown = set(inspect(conn).get_table_names()) - set(Base.metadata.tables) - {"alembic_version"}
        if unknown:
            raise LoreError(f"the catalog holds tables this Lore does not know: {', '.join(sorted(unknown))}")
        tables = [t for t in Base.metadata.sorted_tables if t.name not in _NOT_BACKED_UP]
        progress.step("catalog", len(tables))
        for table in tables:
            names = [c.name for c in table.columns]
            n = 0
            with (out / f"{table.name}.jsonl").open("w", encoding="utf-8") as fh:
                rows = conn.execute(select(table).order_by(*table.primary_key.columns))
                for row in rows:
                    record = dict(zip(names, row, strict=True))
                    _note(snap, table.name, record)
                    fh.write(json.dumps({k: encode(v) for k, v in record.items()}, ensure_ascii=False))
                    fh.write("\n")
                    n += 1
            counts[table.name] = n
            progress.advance()
    if revision is None:
        raise LoreError("the catalog has no Lore schema yet: nothing to back up")
    return revision, counts, snap


def _note(snap: _Snapshot, table: str, row: dict[str, Any]) -> None:
    """Keep what the store step checks the stores against."""
    if table == "knowledge_bases":
        snap.kbs.append({**row, "chunks": 0})
    elif table == "kb_versions":
        snap.max_seq[row["kb_id"]] = max(snap.max_seq.get(row["kb_id"], 0), row["seq"])
    elif table == "chunks":
        snap.chunk_file.setdefault(row["kb_id"], {})[row["chunk_id"]] = row["file_id"]


def _drop_files(folder: Path, file_ids: set[str]) -> dict[str, int]:
    """Remove left-out files and their chunk rows from the exported catalog; the new row counts."""
    counts = {}
    for table, key in (("chunks", "file_id"), ("files", "id")):
        path = folder / f"{table}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if json.loads(line)[key] not in file_ids]
        path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
        counts[table] = len(kept)
    return counts


# --- stores -----------------------------------------------------------------------------------------


def _copy_stores(
    settings: Settings, snap: _Snapshot, out: Path, progress: BackupProgress
) -> list[tuple[str, str, str]]:
    """Copy each KB's store as of the catalog snapshot; the (kb name, file id, path) of files left out."""
    (out / "store").mkdir()
    for kb in snap.kbs:
        if kb["store_backend"] != EMBEDDED:
            raise LoreError(
                f"knowledge base {kb['name']!r} is in the {kb['store_backend']} store; lore backup copies "
                "embedded stores only (back that store up with its own tools)"
            )
    progress.step("stores", len(snap.kbs))
    left_out: list[tuple[str, str, str]] = []
    for kb in snap.kbs:
        src = store_file(settings, kb["id"])
        if src.is_file():
            dst = out / "store" / f"{kb['id']}.sqlite"
            _sqlite_copy(src, dst)
            dropped = _cut_back(dst, kb["id"], snap)
            left_out += [(kb["name"], f, "") for f in dropped]
            with sqlite3.connect(dst) as db:
                kb["chunks"] = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        progress.advance()
    if left_out:
        paths = _file_paths(out / "catalog", {f for _kb, f, _p in left_out})
        left_out = [(kb, f, paths.get(f, "")) for kb, f, _p in left_out]
    return left_out


def _sqlite_copy(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite file a writer may be changing (its online backup)."""
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    finally:
        source.close()
        target.close()


def _cut_back(path: Path, kb_id: str, snap: _Snapshot) -> set[str]:
    """Undo in the copied store what writers did after the catalog snapshot; the file ids left out."""
    with sqlite3.connect(path) as db:
        if kb_id in snap.max_seq:  # versioned: later builds' chunks go, their expiries are undone
            seq = snap.max_seq[kb_id]
            db.execute("DELETE FROM chunks WHERE valid_from_seq > ?", (seq,))
            db.execute(
                "UPDATE chunks SET valid_to_seq = 0, meta = json_set(meta, '$.valid_to_seq', 0) "
                "WHERE valid_to_seq > ?",
                (seq,),
            )
            return set()
        known = snap.chunk_file.get(kb_id, {})
        stored = {r[0] for r in db.execute("SELECT chunk_id FROM chunks")}
        # A file whose chunks the store no longer holds all of was re-ingested meanwhile: left out whole.
        torn = {known[c] for c in known.keys() - stored}
        drop = (stored - known.keys()) | {c for c, f in known.items() if f in torn and c in stored}
        db.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(c,) for c in drop])
    return torn


def _file_paths(folder: Path, file_ids: set[str]) -> dict[str, str]:
    with (folder / "files.jsonl").open(encoding="utf-8") as fh:
        rows = (json.loads(line) for line in fh)
        return {r["id"]: r["path"] for r in rows if r["id"] in file_ids}


# --- files ------------------------------------------------------------------------------------------


def _copy_files(
    engine: Engine, settings: Settings, out: Path, dest: Path, progress: BackupProgress
) -> dict[str, Any]:
    """Copy the storage directory's files (not the catalog, stores or caches kept in the same home)."""
    if settings.storage.url:
        return {"count": 0, "bytes": 0, "kept_in": "bucket"}  # the bucket is backed up by its own tools
    root = settings.files_dir.resolve()
    skip = {p.resolve() for p in _not_files(engine, settings, dest)}
    found = list(_walk(root, skip))
    progress.step("files", len(found))
    size = 0
    for path in found:
        target = out / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(path, target)
            size += target.stat().st_size
        except FileNotFoundError:  # deleted since the walk
            pass
        progress.advance()
    return {"count": sum(1 for p in out.rglob("*") if p.is_file()) if out.exists() else 0, "bytes": size}


def home_parts(settings: Settings) -> list[Path]:
    """Paths under `home` that are not stored files: store folders, caches."""
    home = settings.home
    return [home / "store", home / "cache", home / "storage-cache"]


def _not_files(engine: Engine, settings: Settings, dest: Path) -> list[Path]:
    paths = [*home_parts(settings), dest, store_file(settings, "x").parent]
    if engine.dialect.name == "sqlite":
        db = Path(_sqlite_file(engine))
        paths += [p for p in db.parent.glob(f"{db.name}*") if p.name.startswith(db.name)]
    return paths


def _walk(root: Path, skip: set[Path]) -> Iterator[Path]:
    """Every regular file under `root`, not hidden, outside `skip`, in a stable order."""
    if not root.is_dir():
        return
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (base / d).resolve() not in skip)
        for name in sorted(files):
            path = base / name
            if not name.startswith(".") and path.resolve() not in skip and path.is_file():
                yield path
