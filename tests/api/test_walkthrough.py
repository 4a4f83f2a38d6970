"""The console walk-through (docs/walkthrough.py) as a test: every flow as administrator and employee at
390×844 and 1600×1000 on a real service, with no panel scrolling sideways at 390 px, no browser error, and
each flow's screenshot written (here to a temporary folder, not docs/)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from playwright.sync_api import sync_playwright

from tests.api.conftest import CHROMIUM
from tests.conftest import REPO

ADMIN_FLOWS = [
    "01-sign-in",
    "02-upload",
    "03-documents-queued",
    "04-build-progress",
    "05-documents-parsing",
    "06-build-cancelling",
    "07-documents-ready-failed",
    "08-versions",
    "09-quality-report",
    "10-chunking-preview",
    "11-chat-answer",
    "12-chat-citation",
    "13-chat-refusal",
    "14-retrieval-test",
    "15-feedback-to-faq",
    "16-audit",
    "17-keys-expiry",
]
EMPLOYEE_FLOWS = ["01-chat", "02-scenario-feedback", "03-retrieval-no-version", "04-not-offered"]


def _walkthrough() -> ModuleType:
    spec = importlib.util.spec_from_file_location("walkthrough", REPO / "docs" / "walkthrough.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_walkthrough_passes_and_writes_every_screenshot(tmp_path: Path) -> None:
    out = tmp_path / "shots"
    walk = _walkthrough().walk_through(out)
    # What `python docs/walkthrough.py` exits 1 on: a panel scrolling sideways at 390 px, a browser error.
    assert [p for p in walk.problems if "scrollWidth" in p] == []
    assert [p for p in walk.problems if "console" in p or "page error" in p] == []
    assert walk.problems == []
    expected = {
        f"{role}-{flow}-{width}.png"
        for role, flows in (("admin", ADMIN_FLOWS), ("employee", EMPLOYEE_FLOWS))
        for flow in flows
        for width in (1600, 390)
    }
    written = {p.name for p in out.iterdir()}
    assert written == expected, (sorted(expected - written), sorted(written - expected))
    assert all((out / name).stat().st_size > 1000 for name in expected)
    assert sorted(p.name for p in walk.shots) == sorted(expected)


def test_the_walkthrough_checks_can_fail(tmp_path: Path) -> None:
    """Its checks see a page wider than the phone and an error the page logs (exit status 1)."""
    walkthrough = _walkthrough()
    walk = walkthrough.Walk(tmp_path)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 390, "height": 844})
        walk.watch(page, "admin")
        page.set_content('<div style="width: 800px">wide</div>')
        walk.fits(page, "admin wide panel")
        page.evaluate("console.error('boom')")
        browser.close()
    assert len(walk.problems) == 2, walk.problems
    wide = re.match(r"admin wide panel: scrollWidth (\d+) > innerWidth 390 at 390 px$", walk.problems[0])
    assert wide and int(wide[1]) >= 800, walk.problems
    assert walk.problems[1].startswith("admin: console error: boom")
