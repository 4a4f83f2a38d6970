"""The console as an administrator's daily tool, in a real browser against a real `lore serve`: what a key
may do decides what it sees, the audit tab, keys with known roles only, a phone-sized screen, and both
languages for every word. Every flow runs without a browser console error.

With LORE_SCREENSHOTS=<dir> each panel is also written there as a PNG.
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from lore.api.app import WEB_DIR
from tests.api import test_console_ui
from tests.api.conftest import auth
from tests.api.test_console_ui import shot
from tests.api.test_web_ui import new_kb_with_files, sign_in
from tests.conftest import EXAMPLES

site = test_console_ui.site  # the fixture these tests use: a live service and an admin + platform-admin key
TABS = ["chat", "admin", "documents", "retrieval", "scenarios", "feedback", "keys", "traces", "audit"]


def console_errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    """The page's console errors from now on (a bad `pattern`, a failed request, an exception)."""
    errors: list[str] = []
    page.on(
        "console",
        lambda msg: errors.append(f"{msg.text} {msg.location.get('url')}") if msg.type == "error" else None,
    )
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def signed_in(page, url: str, secret: str) -> None:  # type: ignore[no-untyped-def]
    """Sign in and wait until the console knows what the key may do."""
    sign_in(page, url, secret)
    expect(page.locator("#whoami")).not_to_be_empty(timeout=60_000)


def visible_tabs(page) -> list[str]:  # type: ignore[no-untyped-def]
    return [t for t in TABS if page.locator(f"button[data-tab={t}]").is_visible()]


def test_an_employee_sees_no_admin_panels_and_the_server_still_refuses(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    _, employee = lore.catalog.create_api_key("default", ["employee"], name="reader")
    me = httpx.get(f"{url}/api/me", headers=auth(employee), timeout=30).json()
    assert me["name"] == "reader" and me["roles"] == ["employee"] and me["tenant"] == "default"
    assert not {"upload", "build", "activate", "rollback", "delete", "manage_keys", "audit"} & set(
        me["actions"]
    )
    admin = httpx.get(f"{url}/api/me", headers=auth(secret), timeout=30).json()
    assert {"upload", "build", "activate", "rollback", "delete", "manage_keys", "audit"} <= set(
        admin["actions"]
    )

    signed_in(page, url, employee)
    assert "reader" in page.inner_text("#whoami")
    assert visible_tabs(page) == ["chat", "documents", "retrieval", "scenarios", "keys", "traces"]
    assert not page.locator("#tab-admin").is_visible() and not page.locator("#delete-kb").is_visible()
    page.click("button[data-tab=documents]")
    expect(page.locator("#tab-documents")).to_be_visible()
    # The server stays the authority: what the console hides is refused to the key all the same.
    made = httpx.post(f"{url}/api/kbs", json={"name": "hidden"}, headers=auth(secret), timeout=30)
    assert made.status_code == 201, made.text
    r = httpx.post(f"{url}/api/kbs/hidden/builds", json={}, headers=auth(employee), timeout=30)
    assert r.status_code == 403, r.text
    assert httpx.get(f"{url}/api/audit", headers=auth(employee), timeout=30).status_code == 403

    # The same page with an administrator's key: every panel, the key form included.
    signed_in(page, url, secret)
    expect(page.locator("button[data-tab=admin]")).to_be_visible()
    assert visible_tabs(page) == TABS
    page.click("button[data-tab=keys]")
    expect(page.locator("#key-form")).to_be_visible()
    assert not errors, errors


def test_the_audit_tab_names_the_key_and_why(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    errors = console_errors(page)
    _, alice = lore.catalog.create_api_key("default", ["admin"], name="alice-admin")
    signed_in(page, url, alice)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md"])
    page.click("#build")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("1", timeout=120_000)
    page.set_input_files("#files", [str(EXAMPLES / "faq.csv")])
    page.click("#upload")
    page.wait_for_selector("#uploads tbody tr:nth-child(2)")
    page.click("#build")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("2", timeout=120_000)

    # An empty reason is refused: asked again, then cancelled, nothing is rolled back.
    prompts: list[str] = []

    def answer_empty_then_cancel(dialog) -> None:  # type: ignore[no-untyped-def]
        prompts.append(dialog.message)
        dialog.accept("  ") if len(prompts) == 1 else dialog.dismiss()

    page.on("dialog", answer_empty_then_cancel)
    page.click("#rollback")
    page.evaluate("1")  # runs once the click's handler is over: both prompts were answered
    assert len(prompts) == 2 and "reason is required" in prompts[1], prompts
    page.remove_listener("dialog", answer_empty_then_cancel)
    assert "rollback" not in [e.action for e in lore.catalog.audit_log(kb="docs")]

    page.once("dialog", lambda dialog: dialog.accept("faq.csv not reviewed yet"))
    page.click("#rollback")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("1", timeout=60_000)
    # A second knowledge base, deleted with a reason: the filter by KB keeps them apart.
    page.fill("#new-kb", "scratch")
    page.click("#create-kb button")
    expect(page.locator("#admin-kb")).to_have_value("scratch", timeout=60_000)
    page.once("dialog", lambda dialog: dialog.accept("made by mistake"))
    page.click("#delete-kb")
    expect(page.locator("#toast")).to_have_text("Knowledge base deleted", timeout=60_000)
    expect(page.locator("#admin-kb option", has_text="scratch")).to_have_count(0, timeout=60_000)

    page.click("button[data-tab=audit]")
    rollback = page.locator("#audit tbody tr[data-action=rollback]")
    expect(rollback).to_have_count(1, timeout=60_000)
    assert rollback.locator(".who").inner_text() == "alice-admin"  # the key's name, not its id
    assert rollback.locator(".reason").inner_text() == "faq.csv not reviewed yet"
    assert "docs" in rollback.inner_text() and "roll back" in rollback.inner_text()
    assert page.locator("#audit tbody tr[data-action=build]").count() == 2
    deleted = page.locator("#audit tbody tr[data-action=delete]")
    assert deleted.locator(".reason").inner_text() == "made by mistake"
    assert "key:" not in page.inner_text("#audit tbody")
    shot(page, "audit")
    page.select_option("#audit-kb", "docs")
    expect(page.locator("#audit tbody tr[data-action=delete]")).to_have_count(0, timeout=60_000)
    kbs = {r.inner_text() for r in page.locator("#audit tbody tr td:nth-child(4)").all()}
    assert kbs == {"docs"}, kbs
    assert not errors, errors


def test_keys_offer_only_the_servers_roles_and_copy_the_secret(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    errors = console_errors(page)
    r = httpx.post(f"{url}/api/keys", json={"roles": ["superuser"]}, headers=auth(secret), timeout=30)
    assert r.status_code == 422 and "superuser" in r.json()["detail"], r.text
    known = httpx.get(f"{url}/api/me", headers=auth(secret), timeout=30).json()["key_roles"]
    assert "admin" in known and "employee" in known and "superuser" not in known
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    signed_in(page, url, secret)
    page.click("button[data-tab=keys]")
    page.wait_for_selector("#keys tbody tr")
    expect(page.locator("#key-roles option")).to_have_count(len(known), timeout=60_000)
    assert [o.get_attribute("value") for o in page.locator("#key-roles option").all()] == known
    page.fill("#key-name", "night-shift")
    page.select_option("#key-roles", ["employee"])
    page.click("#key-form button")
    page.wait_for_selector("#copy-secret:not(.hidden)")
    made = lore.catalog.list_api_keys()[-1]
    assert (made.name, made.roles) == ("night-shift", ["employee"])
    page.click("#copy-secret")
    expect(page.locator("#toast")).to_have_text("Copied", timeout=60_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert lore.catalog.authenticate(copied).id == made.id  # type: ignore[union-attr]
    assert not errors, errors


def test_every_panel_fits_a_phone_and_documents_fit_a_laptop(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    errors = console_errors(page)
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, url, secret)
    new_kb_with_files(page, "docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])
    page.click("#build")
    page.wait_for_selector("#versions tbody tr.active")
    page.click("button[data-tab=chat]")
    page.select_option("#chat-kb", "docs")
    page.fill("#question", "报销需要什么材料？")
    page.press("#question", "Enter")
    page.wait_for_selector(".msg.assistant .sources a")
    page.once("dialog", lambda dialog: dialog.accept("too long for a phone"))
    page.click(".msg.assistant .feedback .down")  # an icon, not an emoji: no emoji font needed
    page.wait_for_selector(".msg.assistant .feedback .down:disabled svg")
    ready = {  # what each panel shows once loaded
        "chat": ".msg.assistant .sources a",
        "admin": "#versions tbody tr.active",
        "documents": "#docs tbody tr .chunks-btn",
        "retrieval": "#rt-kb option",
        "scenarios": "h3",
        "feedback": "#fb tbody tr",
        "keys": "#keys tbody tr",
        "traces": "#traces tbody tr",
        "audit": "#audit tbody tr[data-action=build]",
    }
    for tab, selector in ready.items():
        page.click(f"button[data-tab={tab}]")
        page.wait_for_selector(f"#tab-{tab} {selector}" if tab != "chat" else selector, state="attached")
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], (tab, widths)
        if tab in ("chat", "documents"):
            shot(page, f"phone-{tab}")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.click("button[data-tab=documents]")
    page.wait_for_selector("#docs tbody tr .chunks-btn")
    box = page.evaluate(
        "(t => [t.scrollWidth, t.parentElement.clientWidth])(document.querySelector('#docs'))"
    )
    assert box[0] <= box[1], box  # the table itself fits: no scrolling inside its box either
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not errors, errors


def test_every_word_of_the_console_is_in_both_languages(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, _ = site
    errors = console_errors(page)
    page.goto(url + "/")
    tables = page.evaluate(
        """import('./i18n.js').then(({I18N}) => {
             const flat = (o, p = '') => Object.entries(o).flatMap(([k, v]) =>
               typeof v === 'object' ? flat(v, p + k + '.') : [[p + k, v]]);
             return {en: Object.fromEntries(flat(I18N.en)), zh: Object.fromEntries(flat(I18N.zh))};
           })"""
    )
    en, zh = tables["en"], tables["zh"]
    assert set(en) == set(zh) and len(en) > 100
    assert [k for k in en if not en[k].strip() or not zh[k].strip()] == []
    # Chinese means Chinese: a translation is not the English word left in place (names like BM25 aside).
    assert [k for k in en if en[k] == zh[k] and re.search(r"[a-z]{4}", en[k])] == []
    # Every word the page or a module asks for is there.
    html = (WEB_DIR / "index.html").read_text(encoding="utf-8")
    used = set(re.findall(r'data-i18n(?:-placeholder|-title|-aria)?="([^"]+)"', html))
    for js in WEB_DIR.glob("*.js"):
        used |= set(re.findall(r'\bt\("([A-Za-z_]+)"\)', js.read_text(encoding="utf-8")))
    assert sorted(used - set(en)) == []
    assert not errors, errors


# Every status text the documents' state cells showed, in order, and whether #build was ever disabled: a
# MutationObserver sees every render (each render writes new cells), so no state can slip by unseen.
RECORD_STATES = """() => {
  window.__states = []; window.__buildDisabled = false; window.__samePage = true;
  new MutationObserver((records) => records.forEach((r) => {
    if (r.type === 'attributes' && r.target.id === 'build' && r.target.hasAttribute('disabled'))
      window.__buildDisabled = true;
    if (r.type === 'childList' && r.target.closest && r.target.closest('#docs')) r.addedNodes.forEach((n) =>
      n.querySelectorAll && n.querySelectorAll('.file-state')
        .forEach((s) => window.__states.push(s.closest('tr').cells[0].textContent + ': ' + s.textContent)));
  })).observe(document.body, {subtree: true, childList: true, attributeFilter: ['disabled']});
}"""


def test_documents_follow_each_upload_from_queued_to_ready_or_failed(site, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url, secret, _ = site
    errors = console_errors(page)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not really a PDF")
    signed_in(page, url, secret)
    new_kb_with_files(page, "live", [EXAMPLES / "employee_handbook.md", broken])
    uploads = page.locator("#uploads tbody tr", has_text="employee_handbook.md")
    expect(uploads.locator(".file-state")).to_have_text("queued")  # uploaded, waiting for a build
    page.click("button[data-tab=documents]")
    page.select_option("#docs-kb", "live")
    handbook = page.locator("#docs tbody tr", has_text="employee_handbook.md")
    expect(handbook.locator(".file-state")).to_have_text("queued")
    page.evaluate(RECORD_STATES)

    # Build from the admin tab, then watch the documents tab: the states change there without a reload.
    page.click("button[data-tab=admin]")
    page.click("#build")
    page.click("button[data-tab=documents]")
    expect(handbook.locator(".file-state")).to_have_text("ready", timeout=120_000)
    failed = page.locator("#docs tbody tr", has_text="broken.pdf")
    expect(failed.locator(".file-state")).to_have_text("failed", timeout=60_000)
    assert failed.locator(".reason").inner_text().strip()
    assert page.evaluate("window.__samePage") is True  # the same page all along: never reloaded
    assert page.evaluate("window.__buildDisabled") is True  # #build was off while its build ran
    expect(page.locator("#build")).to_be_enabled(timeout=60_000)  # once the build's job has ended
    seen = [
        s.split(": ", 1)[1] for s in page.evaluate("window.__states") if s.startswith("employee_handbook")
    ]
    parsing = [s for s in seen if s.startswith("parsing")]
    assert parsing and any(re.search(r"parsing · \d+ chunks", s) for s in parsing), seen  # with its chunks
    assert seen.index(parsing[0]) < seen.index("ready"), seen
    page.click("button[data-tab=admin]")  # the upload list says the same
    expect(uploads.locator(".file-state")).to_have_text("ready", timeout=60_000)
    expect(page.locator("#uploads tbody tr", has_text="broken.pdf").locator(".file-state")).to_have_text(
        "failed", timeout=60_000
    )
    assert not errors, errors
