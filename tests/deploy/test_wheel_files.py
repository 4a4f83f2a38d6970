"""The wheel carries every file of the package: modules, models, web assets, migrations and the demo's
samples, each as declared by the package-data globs of pyproject.toml."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.deploy.wheel_build import SRC

# What an installed Lore reads besides its modules (`lore demo`, the web console, `lore db upgrade`, the
# reranker and answer models, the query glossary).
ESSENTIAL = (
    "lore/retrieve/rerank/models/ltr.txt",
    "lore/answer/evidence_model.json",
    "lore/lexical/glossary.txt",
    "lore/web/static/index.html",
    "lore/catalog/migrations/env.py",
    "lore/samples/handbook/employee_handbook.md",
    "lore/samples/scenarios/hr/scenario.toml",
)


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _source_files() -> set[str]:
    return {
        f"lore/{p.relative_to(SRC).as_posix()}"
        for p in SRC.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_wheel_holds_exactly_the_package_files(wheel_names: set[str]) -> None:
    """Every file under src/lore is in the wheel (a missing one needs a package-data glob), nothing else."""
    shipped = {n for n in wheel_names if n.startswith("lore/")}
    source = _source_files()
    assert not source - shipped, f"not in the wheel (add to package-data): {sorted(source - shipped)}"
    assert not shipped - source, f"in the wheel but not in src/lore: {sorted(shipped - source)}"
    tops = {n.split("/")[0] for n in wheel_names} - {"lore"}
    assert len(tops) == 1 and tops.pop().startswith("lore_kb-"), sorted(wheel_names)
    assert set(ESSENTIAL) <= shipped
    assert any(n.startswith("lore/catalog/migrations/versions/") for n in shipped)
    assert any(n.startswith("lore/samples/handbook/") and n.endswith(".pdf") for n in shipped)


def test_every_package_data_glob_ships_files(wheel_names: set[str]) -> None:
    """No stale glob: each pattern matches files in src/lore, and all of them are in the wheel."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["lore"]
    for pattern in globs:
        matched = {f"lore/{p.relative_to(SRC).as_posix()}" for p in SRC.glob(pattern) if p.is_file()}
        assert matched, f"package-data glob {pattern!r} matches no file"
        assert matched <= wheel_names, f"{pattern!r}: {sorted(matched - wheel_names)} not in the wheel"


def test_the_samples_are_reachable_from_the_old_examples_paths() -> None:
    """examples/handbook and examples/scenarios are relative links to the shipped samples."""
    for name in ("handbook", "scenarios"):
        link = REPO / "examples" / name
        assert link.is_symlink() and not Path(link.readlink()).is_absolute()
        assert link.resolve() == (SRC / "samples" / name).resolve()
