"""The web UI's files: every ES module the page imports exists, is served as JavaScript, and is packaged."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.app import WEB_DIR
from lore.config import load_settings
from lore.engine import Lore

ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = re.compile(r'<script\b[^>]*\bsrc="([^"]+)"')
_IMPORT = re.compile(r'^\s*import\s+(?:[^"\']*?\s+from\s+)?["\'](\./[^"\']+)["\']', re.M)


def imported(name: str) -> list[str]:
    """The files one module imports (relative ./x.js specifiers)."""
    return [spec[2:] for spec in _IMPORT.findall((WEB_DIR / name).read_text(encoding="utf-8"))]


def module_graph() -> set[str]:
    """Every script file the page loads: its <script src> and, transitively, what they import."""
    todo = _SCRIPT.findall((WEB_DIR / "index.html").read_text(encoding="utf-8"))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            assert (WEB_DIR / name).is_file(), f"{name} is loaded by the page but missing"
            todo += imported(name)
    return seen


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    lore = Lore(load_settings(home=tmp_path / "home"))
    with TestClient(create_app(lore)) as c:
        yield c
    lore.close()


def test_the_page_loads_every_script_file_and_nothing_else() -> None:
    assert "app.js" in module_graph()
    # No dead file: a script in static/ the page never reaches is a leftover.
    assert module_graph() == {p.relative_to(WEB_DIR).as_posix() for p in WEB_DIR.rglob("*.*js")}


def test_modules_import_downhill_without_cycles() -> None:
    def walk(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " → ".join((*path, name))
        for dep in imported(name):
            walk(dep, (*path, name))

    walk("app.js", ())


def test_every_script_is_served_as_javascript_under_the_ui_csp(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script type="module" src="app.js">' in page.text  # modules: strict, scoped, no globals
    for name in module_graph():
        r = client.get(f"/{name}")
        assert r.status_code == 200, name
        # nosniff is on: a module served with another type would not run.
        assert r.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript"), name
        assert r.text == (WEB_DIR / name).read_text(encoding="utf-8")


def test_every_static_file_is_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    patterns = globs["package-data"]["lore"]
    package = ROOT / "src" / "lore"
    files = [p for p in WEB_DIR.rglob("*") if p.is_file()]
    assert len(files) > 3
    for f in files:
        rel = f.relative_to(package)
        assert any(rel.match(pat) and len(rel.parts) == len(Path(pat).parts) for pat in patterns), rel
