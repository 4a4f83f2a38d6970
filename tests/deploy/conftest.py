"""The wheel, built once per test session (per xdist worker) for the wheel tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.wheel_build import build_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel (lore_kb-*.whl), built from a clean copy of the checkout."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))
