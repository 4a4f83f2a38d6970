"""The console's accessibility, checked by axe-core (vendored in tests/api/vendor, see its README) in a real
browser: every panel an administrator and an employee see, on a phone and on a wide screen, with content
loaded (a built knowledge base, an answer with citations), has no serious or critical violation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.api import test_console_ui
from tests.api.test_console_admin_ui import console_errors, signed_in
from tests.api.test_web_ui import new_kb_with_files
from tests.conftest import EXAMPLES

site = test_console_ui.site  # a live service and an admin + platform-admin key
AXE = (Path(__file__).parent / "vendor" / "axe.min.js").read_text(encoding="utf-8")
# What each panel shows once loaded, for an administrator.
READY = {
    "chat": ".msg.assistant .sources a",
    "documents": "#docs tbody tr .chunks-btn",
    "retrieval": "#rt-kb option",
    "scenarios": "#tab-scenarios h3",
    "keys": "#keys tbody tr",
    "traces": "#traces tbody tr",
    "admin": "#versions tbody tr.active",
    "feedback": "#tab-feedback .row",
    "audit": "#audit tbody tr[data-action=build]",
}
# An employee's panels, and what they show (its keys panel says what the key may not do).
EMPLOYEE = {
    **{t: READY[t] for t in ("chat", "documents", "retrieval", "scenarios", "traces")},
    "keys": "#tab-keys .denied:not(.hidden)",
}


def serious_violations(page) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """axe-core's serious and critical violations on the page as it stands (rule, impact, where)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(AXE)  # through the DevTools protocol: the page's CSP does not apply to it
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
             .filter((v) => v.impact === 'serious' || v.impact === 'critical')
             .map((v) => ({rule: v.id, impact: v.impact, help: v.help,
                           nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' '))}))"""
    )
    return list(found)


def ask(page, question: str) -> None:  # type: ignore[no-untyped-def]
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "docs")
    page.fill("#question", question)
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .sources a")


def check_panels(page, tabs: dict[str, str]) -> dict[str, list[dict[str, Any]]]:  # type: ignore[no-untyped-def]
    """Open each tab, wait until it shows what it loads, and collect what axe-core finds there."""
    found = {}
    for tab, ready in tabs.items():
        page.click(f"button[data-tab={tab}]")
        expect(page.locator(f"#tab-{tab}")).to_be_visible()
        page.wait_for_selector(ready, state="attached")
        found[tab] = serious_violations(page)
    return {tab: v for tab, v in found.items() if v}


@pytest.mark.parametrize("size", [(390, 844), (1600, 1000)], ids=["phone", "wide"])
def test_every_panel_has_no_serious_accessibility_violation(site, page, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")
    ask(page, "报销需要什么材料？")
    found = check_panels(page, READY)
    assert not found, json.dumps(found, indent=1)

    _, employee = lore.catalog.create_api_key("default", ["employee"], name="reader")
    signed_in(page, url, employee)
    ask(page, "报销需要什么材料？")
    found = check_panels(page, EMPLOYEE)
    assert not found, json.dumps(found, indent=1)
    # The keys panel says why it is refused without asking the server: no refused request is logged.
    expect(page.locator("#tab-keys .denied")).to_contain_text("admin")
    assert not errors, errors
