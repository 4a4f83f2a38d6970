"""`lore files list / delete`: the files of a knowledge base (uploads and indexed files)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.cli.backends import running
from lore.cli.common import JsonOption, KbOption

console = Console()
files_app = typer.Typer(help="Files of a knowledge base.", no_args_is_help=True)


@files_app.command("list")
def files_list(kb: KbOption, as_json: JsonOption = False) -> None:
    """List a knowledge base's uploads and indexed files (against a server: those the key may see)."""
    with running() as backend:
        listed = backend.list_files(kb)
    if as_json:
        print(json.dumps(asdict(listed), ensure_ascii=False, indent=2))
        return
    table = Table("file", "upload", "indexed", "chunks", "error")
    uploads = {u["name"]: u for u in listed.uploads}
    indexed = {f["path"]: f for f in listed.indexed}
    for name in sorted({*uploads, *indexed}):
        up, ix = uploads.get(name), indexed.get(name)
        table.add_row(
            name,
            "-" if up is None else f"{up['size']} B",
            "-" if ix is None else str(ix["status"]),
            "" if ix is None else str(ix["chunks"]),
            "" if ix is None else ix.get("error") or "",
        )
    console.print(table)


@files_app.command("delete")
def files_delete(
    kb: KbOption,
    name: Annotated[str, typer.Argument(help="The file (upload or indexed path) to delete.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
) -> None:
    """Delete one file: its upload and, in an unversioned KB, its chunks and catalog rows (a versioned KB
    drops it at its next build). Against a server: one of the key's tenant's files."""
    if not yes and not typer.confirm(f"Delete file {name!r} of knowledge base {kb!r}?"):
        raise typer.Exit(1)
    with running() as backend:
        done = backend.delete_file(kb, name)
    what = [w for w, gone in (("upload", done.upload), ("indexed file", done.indexed)) if gone]
    console.print(f"{kb}: deleted {done.file} ({' and '.join(what)})")
    if done.note:
        console.print(done.note)
