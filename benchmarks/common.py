"""Shared by the benchmarks: a knowledge base per (dataset, embedder, backend), ingested once."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rich.console import Console

from lore.cli.progress import RichIngestProgress
from lore.config import load_settings
from lore.engine import Lore
from lore.ingest.pipeline import IngestReport


def open_benchmark_kb(
    dataset: Path,
    embedder: str,
    backend: str,
    home: Path,
    *,
    fresh: bool = False,
    embed_model: str = "",
    embed_url: str = "",
    **settings: object,
) -> tuple[Lore, str]:
    """A Lore whose home is `home/<dataset>_<embedder>_<backend>`, with that KB created."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{dataset.name}_{embedder}_{backend}")
    kb_home = home / name
    if fresh and kb_home.exists():
        shutil.rmtree(kb_home)
    lore = Lore(
        load_settings(
            home=kb_home,
            embed={"provider": embedder, "model": embed_model or embedder, "base_url": embed_url},
            store={"backend": backend},
            **settings,
        )
    )
    if name not in {k.name for k in lore.catalog.list_kbs()}:
        lore.create_kb(name)
    return lore, name


def ingest_with_progress(lore: Lore, name: str, corpus: Path) -> IngestReport:
    """Ingest the corpus with a progress bar; a failed file stops the benchmark."""
    with RichIngestProgress(Console(stderr=True), 1) as progress:
        report = lore.ingest(name, [corpus], progress)
    failed = [f.error for f in report.files if f.status not in ("ingested", "skipped")]
    if failed:
        raise SystemExit(f"ingest failed: {failed}")
    return report
