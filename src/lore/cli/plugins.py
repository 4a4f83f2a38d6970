"""`lore plugins`: the backends installed, built-in and from plug-in packages, kind by kind."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lore.registry import installed

console = Console()


def plugins(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The stores, embedders, generators, rerankers and loaders installed (read from their entry points)."""
    found = installed()
    if as_json:
        print(json.dumps([asdict(p) for p in found], ensure_ascii=False, indent=2))
        return
    table = Table("kind", "name", "from", "target")
    for p in found:
        origin = (
            "built-in" if p.builtin else p.distribution + ("" if p.used else " (ignored: a built-in name)")
        )
        table.add_row(p.kind, p.name, origin, p.target)
    console.print(table)
