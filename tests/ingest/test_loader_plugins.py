"""A third-party package adds a loader through the `lore.loaders` entry-point group: installed as a real
distribution (a dist-info folder on the path), found by a fresh `lore` process, used by ingest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

from lore.ingest.loaders import supported_suffixes
from lore.ingest.loaders.base import LOADERS
from lore.registry import Registry
from tests.plugin_dist import install_plugin

PLUGIN = '''
"""Reads .recipe files: a title line, then one ingredient per line."""
from lore.schema import LoadedDocument, Section


def load_recipe(path, options):
    title, *items = path.read_text(encoding="utf-8").splitlines()
    return [LoadedDocument(path=str(path), title=title, sections=[Section(text="\\n".join(items))])]
'''


def _install_plugin(site: Path) -> None:
    install_plugin(
        site, "lore-recipe", "lore_recipe", PLUGIN, "[lore.loaders]\n.recipe = lore_recipe:load_recipe\n"
    )


def test_plugin_loader_found_through_entry_points(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "soup.recipe").write_text("Lentil soup\nred lentils\ncumin\nvegetable stock\n", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "LORE_HOME": str(tmp_path / "home"),
    }
    lore = [sys.executable, "-m", "lore.cli.main"]
    assert ".recipe" not in supported_suffixes()  # not installed in this process
    subprocess.run([*lore, "kb", "create", "food"], env=env, check=True, capture_output=True)
    ingest = subprocess.run(
        [*lore, "ingest", str(docs), "--kb", "food"], env=env, capture_output=True, text=True, check=False
    )
    assert ingest.returncode == 0 and "1 ingested" in ingest.stdout, ingest.stdout + ingest.stderr
    search = subprocess.run(
        [*lore, "search", "cumin lentils", "--kb", "food", "--json", "-k", "1"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    (hit,) = json.loads(search.stdout)["hits"]
    assert hit["file"] == "docs/soup.recipe" and "vegetable stock" in hit["text"]

    # In this process too, once the registry reads the entry points again.
    monkeypatch.syspath_prepend(str(site))
    LOADERS.refresh()
    try:
        assert ".recipe" in supported_suffixes()
    finally:
        monkeypatch.undo()
        LOADERS.refresh()
    assert ".recipe" not in supported_suffixes()


def test_a_builtin_suffix_is_not_taken_over(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, "evil", "evil", textwrap.dedent(PLUGIN), "[lore.loaders]\n.pdf = evil:load_recipe\n")
    monkeypatch.syspath_prepend(str(site))
    fresh = Registry("loader", "lore.loaders")
    asked = [ep for ep in entry_points(group="lore.loaders", name=".pdf") if ep.value == "evil:load_recipe"]
    assert asked  # the plugin asks for it...
    from lore.ingest.loaders.pdf import load_pdf

    assert fresh.get(".pdf") is load_pdf  # ...and the built-in keeps it
