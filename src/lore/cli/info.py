"""`lore info`: where Lore keeps its data (the home), its configuration and knowledge bases."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lore.cli.common import catalog_missing, new_lore, no_kbs_yet
from lore.cli.render import fail
from lore.errors import LoreError

console = Console()


def info(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Where Lore keeps its data (the home; LORE_HOME overrides it), its configuration and its KBs."""
    from lore import __version__
    from lore.config import load_settings

    try:
        settings = load_settings()
    except LoreError as exc:
        fail(exc)
    config = Path(os.environ.get("LORE_CONFIG", "lore.toml"))
    kbs: list[str] | None = None
    if not catalog_missing(settings):
        kbs = [k.name for k in new_lore().catalog.list_kbs()]
    from lore.catalog import mask_url

    facts = {
        "version": __version__,
        "home": str(settings.home.resolve()),
        "config": str(config.resolve()) if config.exists() else None,
        "catalog": mask_url(settings.resolved_catalog_url),
        "store": settings.store.backend,
        "embedder": f"{settings.embed.provider}/{settings.embed.model}",
        "knowledge_bases": kbs or [],
    }
    if as_json:
        print(json.dumps(facts, ensure_ascii=False, indent=2))
        return
    for name, value in facts.items():
        if name == "knowledge_bases":
            value = ", ".join(kbs) if kbs else no_kbs_yet(settings)
        elif name == "config":
            value = value or f"none ({config} not found; defaults and LORE_* variables apply)"
        console.print(f"[bold]{name:<16}[/]{value}", soft_wrap=True, highlight=False)
