"""Shared test fixtures: paths to the sample KB and the shared fixtures, isolated settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "handbook"
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _no_user_lore_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's lore.toml or LORE_* variables."""
    for name in list(os.environ):
        if name.startswith("LORE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LORE_CONFIG", str(tmp_path / "no-lore.toml"))
