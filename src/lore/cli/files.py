"""`lore files delete`: remove one file of a knowledge base (its upload and, unversioned, its index)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from lore.cli import remote
from lore.cli.common import KbOption, failing, new_lore

console = Console()
files_app = typer.Typer(help="Files of a knowledge base.", no_args_is_help=True)


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
    with failing():
        if (c := remote.client()) is not None:
            with c:
                done = c.delete_file(kb, name)
        else:
            lore = new_lore()
            try:
                done = lore.delete_file(lore.catalog.get_kb(kb), name, key_id=None)
            finally:
                lore.close()
    what = [w for w, gone in (("upload", done["upload"]), ("indexed file", done["indexed"])) if gone]
    console.print(f"{kb}: deleted {done['file']} ({' and '.join(what)})")
    if done.get("note"):
        console.print(done["note"])
