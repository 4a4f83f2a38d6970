"""The version diff's pickers in a real browser: after a build, a failed build, an activation or a switch of
knowledge base they are refilled and hold versions that can be compared, never a stale or failed one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import EXAMPLES


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[str, str, Lore]]:
    """A live service whose quality gate needs more files than the tests give it (a gated build fails)."""
    lore = Lore(
        load_settings(home=tmp_path / "home", gate={"min_files": 10}, api={"rate_limit_per_minute": 0})
    )
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with LiveServer(create_app(lore)) as server:
        yield server.url, secret, lore
    lore.close()


def _build(page, versions: int) -> None:  # type: ignore[no-untyped-def]
    page.click("#build")
    expect(page.locator("#versions tbody tr")).to_have_count(versions, timeout=120_000)
    expect(page.locator("#build")).to_be_enabled(timeout=120_000)


def _pickers(page, options: list[str], base: str, cand: str) -> None:  # type: ignore[no-untyped-def]
    for sel, value in (("#diff-base", base), ("#diff-cand", cand)):
        expect(page.locator(f"{sel} option")).to_have_text(options)
        expect(page.locator(sel)).to_have_value(value)


def test_diff_pickers_follow_builds_activations_and_the_kb(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    page.on("dialog", lambda d: d.accept("new release"))  # the reason asked for an activation
    sign_in(page, url, secret)
    new_kb_with_files(page, "rel", [EXAMPLES / "faq.csv", EXAMPLES / "employee_handbook.md"])
    _build(page, 1)  # activated
    page.uncheck("#activate")
    page.set_input_files("#files", [str(EXAMPLES / "travel_policy.docx")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr:nth-child(3)")
    _build(page, 2)  # staged
    _pickers(page, ["1", "2"], "1", "2")  # the newest against the active one

    page.select_option("#diff-base", "2")  # the user's own pair...
    page.select_option("#diff-cand", "1")
    page.check("#gate")
    _build(page, 3)  # the gate fails: nothing new to compare, so the pair stays
    expect(page.locator("#versions tbody tr").nth(2)).to_contain_text("failed")
    _pickers(page, ["1", "2"], "2", "1")
    page.click("#diff-run")
    expect(page.locator("#diff-result h4")).to_have_text("v2 → v1")

    page.uncheck("#gate")
    _build(page, 4)  # ...but a new version resets it to the newest against the active, the old result hidden
    _pickers(page, ["1", "2", "4"], "1", "4")
    expect(page.locator("#diff-result")).to_be_hidden()
    row4 = page.locator("#versions tbody tr").nth(3)
    row4.locator(".dif").click()  # the row's diff skips the failed version 3
    expect(page.locator("#report h4")).to_have_text("v2 → v4")

    row4.locator(".act").click()
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("4")
    _pickers(page, ["1", "2", "4"], "2", "4")  # the active one is the newest: against the one before it

    page.fill("#new-kb", "solo")
    page.click("#create-kb button")
    expect(page.locator("#admin-kb")).to_have_value("solo")
    _pickers(page, [], "", "")  # no version of "rel" stays offered
    expect(page.locator("#diff-form")).to_be_hidden()
    page.set_input_files("#files", [str(EXAMPLES / "faq.csv")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr:nth-child(1)")
    page.check("#activate")
    _build(page, 1)
    _pickers(page, ["1"], "1", "1")
    page.select_option("#admin-kb", "rel")
    _pickers(page, ["1", "2", "4"], "2", "4")
