"""Fixtures: the sample HR scenario copied into a temp folder and built once per module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from tests.conftest import REPO

SAMPLE = REPO / "examples" / "scenarios"


def copy_scenarios(dest: Path) -> Path:
    shutil.copytree(SAMPLE, dest)
    return dest


def scenario_lore(home: Path, scenarios_dir: Path, scenario: dict | None = None, **settings: object) -> Lore:
    return Lore(
        load_settings(home=home, scenario={"scenarios_dir": scenarios_dir, **(scenario or {})}, **settings)
    )


@pytest.fixture(scope="module")
def hr_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(LORE home, scenarios dir) with the `hr` sample scenario built and activated."""
    root = tmp_path_factory.mktemp("hr")
    scenarios = copy_scenarios(root / "scenarios")
    lore = scenario_lore(root / "home", scenarios)
    build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
    lore.close()
    return root / "home", scenarios


@pytest.fixture()
def hr(hr_home: tuple[Path, Path]) -> Iterator[Lore]:
    lore = scenario_lore(*hr_home)
    yield lore
    lore.close()
