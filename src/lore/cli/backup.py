"""`lore backup PATH` and `lore restore PATH`: the catalog, stores and stored files in one archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Self

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from lore.catalog import mask_url
from lore.cli.common import failing
from lore.config import load_settings
from lore.engine import Lore
from lore.engine.backup import backup as take_backup
from lore.engine.restore import restore as restore_backup

console = Console()
PathArg = Annotated[Path, typer.Argument(help="A directory, or a .tar / .tar.gz file.")]


class _Bars:
    """One bar per step of a backup or restore."""

    def __init__(self) -> None:
        self.bars = Progress(
            TextColumn("{task.description:>8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> Self:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def step(self, name: str, total: int) -> None:
        self.task = self.bars.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.bars.advance(self.task, n)


def backup(path: PathArg) -> None:
    """Back up the catalog, every KB's store and the stored files, consistently, while Lore runs."""
    with failing():
        lore = Lore()
        try:
            with _Bars() as bars:
                manifest = take_backup(lore.catalog, lore.settings, path, bars)
        finally:
            lore.close()
    _summary("backed up", manifest, path)
    for item in manifest["left_out"]:
        console.print(
            f"[yellow]left out[/] {item['kb']}/{item['path']}: changed during the backup; ingest it again"
        )
    if manifest["files"].get("kept_in") == "bucket":
        console.print("[yellow]stored files stay in the S3 bucket[/]: back it up with its own tools")


def restore(path: PathArg) -> None:
    """Restore a backup into an empty home and catalog (any catalog backend: SQLite, PostgreSQL, MySQL)."""
    settings = load_settings()
    with failing(), _Bars() as bars:
        manifest = restore_backup(settings, path, bars)
    _summary("restored", manifest, path)
    console.print(f"into home {settings.home} and catalog {mask_url(settings.resolved_catalog_url)}")


def _summary(verb: str, manifest: dict[str, Any], path: Path) -> None:
    tables = manifest["tables"]
    chunks = sum(kb["chunks"] for kb in manifest["kbs"])
    console.print(
        f"{verb} {len(manifest['kbs'])} knowledge bases ({tables.get('files', 0)} files, {chunks} chunks), "
        f"{sum(tables.values())} catalog rows and {manifest['files']['count']} stored files "
        f"(schema {manifest['schema_revision']}, Lore {manifest['lore_version']}): {path}"
    )
