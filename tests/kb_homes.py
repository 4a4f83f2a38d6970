"""Shared test KBs built once per test run and copied: the first worker to need a home builds it under a
lock in the run's temp root, every fixture then gets its own copy (so a test that changes it changes only
its copy). Only for homes whose whole state is in the folder (SQLite catalog, embedded store)."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from tests.conftest import EXAMPLES
from tests.embed_memo import run_root


def cached_home(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None], dest: Path | None = None
) -> Path:
    """A copy (at `dest`, else a new temp folder) of the home `build(home)` makes, built once per run."""
    root = run_root(factory.getbasetemp()) / "kb-homes"
    root.mkdir(exist_ok=True)
    built = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (built / ".complete").exists():
            shutil.rmtree(built, ignore_errors=True)  # a build that failed half-way
            build(built)
            (built / ".complete").touch()
    target = dest if dest is not None else factory.mktemp(name) / "home"
    shutil.copytree(built, target, ignore=shutil.ignore_patterns(".complete", "*.migrate.lock"))
    return target


def build_handbook(home: Path, kb: str = "hb", description: str = "") -> None:
    """The sample handbook (5 files) ingested into KB `kb` of a new home."""
    lore = Lore(load_settings(home=home))
    try:
        lore.create_kb(kb, description)
        assert lore.ingest(kb, [EXAMPLES]).count("ingested") == 5
    finally:
        lore.close()


def handbook_home(factory: pytest.TempPathFactory, dest: Path | None = None, kb: str = "hb") -> Path:
    """A home of its own holding the sample handbook as KB `kb`."""
    return cached_home(factory, f"handbook-{kb}", lambda home: build_handbook(home, kb), dest)
