"""The console walk-through: a real Lore service on a temporary home, driven in Chromium by Playwright as an
administrator and as an employee; one viewport PNG per flow, role and size (390×844, 1600×1000) in
docs/screenshots/. Fails (exit 1) if a panel scrolls sideways at 390 px or the browser logs an error.

`.venv/bin/python docs/walkthrough.py [--out DIR] [--no-screenshots]` (`make browser` first); the suite runs
it too (tests/api/test_walkthrough.py), into a temporary folder.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from PIL import Image
from playwright.sync_api import Browser, Page, expect, sync_playwright

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios

REPO = Path(__file__).resolve().parents[1]
HANDBOOK = REPO / "examples" / "handbook"
SIZES = [(1600, 1000), (390, 844)]
MAX_BYTES = 250_000
TABS = ["chat", "admin", "documents", "retrieval", "scenarios", "feedback", "keys", "traces", "audit"]
LONG = 300_000  # ms: a build on a busy machine
STATUS = "#docs th[data-sort=status]"


class Walk:
    """The screenshots taken and every problem seen (sideways scroll at 390 px, browser console errors)."""

    def __init__(self, out: Path, screenshots: bool = True) -> None:
        self.out, self.screenshots = out, screenshots
        self.shots: list[Path] = []
        self.problems: list[str] = []

    def watch(self, page: Page, role: str) -> None:
        """Record the page's console errors and uncaught exceptions as problems."""

        def on_console(msg: Any) -> None:
            if msg.type == "error" or "Content Security Policy" in msg.text:
                self.problems.append(f"{role}: console {msg.type}: {msg.text} ({msg.location.get('url')})")

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.problems.append(f"{role}: page error: {exc}"))

    def fits(self, page: Page, where: str) -> None:
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if widths[0] > widths[1]:
            self.problems.append(f"{where}: scrollWidth {widths[0]} > innerWidth {widths[1]} at 390 px")

    def shot(
        self,
        page: Page,
        role: str,
        flow: str,
        focus: str | None = None,
        block: str = "start",
        reveal: str = "",
    ) -> None:
        """A viewport PNG per size (unless `screenshots` is off: the sizes and checks only), `focus` scrolled
        to `block` (on the phone also `reveal`, a column of a table that scrolls in its own box), then back to
        the wide size."""
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            settle(page)
            if width < 600:
                self.fits(page, f"{role} {flow}")
            if focus:
                page.locator(focus).first.evaluate("(e, b) => e.scrollIntoView({block: b})", block)
            if reveal and width < 600:
                page.locator(reveal).first.evaluate(
                    "e => e.scrollIntoView({block: 'nearest', inline: 'center'})"
                )
            settle(page)
            if self.screenshots:
                path = self.out / f"{role}-{flow}-{width}.png"
                page.screenshot(path=str(path))
                shrink(path)
                self.shots.append(path)
        page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})

    def every_panel_fits(self, page: Page, role: str) -> None:
        """At 390 px each tab the key is offered: no sideways scroll of the page."""
        page.set_viewport_size({"width": 390, "height": 844})
        for tab in TABS:
            button = page.locator(f"button[data-tab={tab}]")
            if button.is_visible():
                button.click()
                expect(page.locator(f"#tab-{tab}")).to_be_visible()
                settle(page)
                self.fits(page, f"{role} panel {tab}")
        page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})


def settle(page: Page) -> None:
    """Two animation frames: the layout of the new size (or scroll) has been drawn."""
    page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def shrink(path: Path) -> None:
    """A PNG over MAX_BYTES is written again with a 256-colour palette (text stays sharp)."""
    if path.stat().st_size > MAX_BYTES:
        with Image.open(path) as img:
            img.convert("RGB").quantize(colors=256).save(path, optimize=True)


class Hold:
    """Holds a build once its second file is parsed (before it is embedded), until released: its progress
    and its cancel are shown meanwhile."""

    def __init__(self, lore: Lore) -> None:
        self.armed = False
        self.reached, self.go = threading.Event(), threading.Event()
        self.files = 0
        record = lore.catalog.add_job_event

        def add_job_event(job_id: str, event: dict[str, Any]) -> None:
            record(job_id, event)
            if self.armed and event.get("data", {}).get("stage") == "file":
                self.files += 1
                if self.files == 2:
                    self.reached.set()
                    self.go.wait(600)

        lore.catalog.add_job_event = add_job_event


@contextmanager
def service(lore: Lore) -> Iterator[str]:
    """`lore serve`'s app on a real uvicorn in a thread on a free port; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = uvicorn.Config(
        create_app(lore), host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def signed_in(browser: Browser, walk: Walk, url: str, secret: str, role: str) -> Page:
    page = browser.new_context(locale="en-US", viewport={"width": 1600, "height": 1000}).new_page()
    page.set_default_timeout(120_000)
    walk.watch(page, role)
    page.goto(url + "/")
    page.fill("#key", secret)
    page.dispatch_event("#key", "change")
    expect(page.locator("#whoami")).not_to_be_empty()
    return page


def tab(page: Page, name: str) -> None:
    page.click(f"button[data-tab={name}]")
    expect(page.locator(f"#tab-{name}")).to_be_visible()


def answer_prompt(page: Page, text: str, click: Callable[[], None]) -> None:
    page.once("dialog", lambda dialog: dialog.accept(text))
    click()


def ask(page: Page, question: str, nth: int) -> None:
    """Ask in the chat and wait for the nth answer (0-based) to end (its feedback buttons are drawn)."""
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".msg.assistant .feedback")).to_have_count(nth + 1, timeout=LONG)


def admin_builds(page: Page, walk: Walk, hold: Hold, broken: Path) -> None:
    """Sign in, create a KB, upload, follow a build and cancel it, build twice, roll back and activate."""
    walk.shot(page, "admin", "01-sign-in")
    tab(page, "admin")
    page.fill("#new-kb", "handbook")
    page.click("#create-kb button")
    expect(page.locator("#admin-kb")).to_have_value("handbook")
    files = [HANDBOOK / n for n in ("employee_handbook.md", "faq.csv", "travel_policy.docx")] + [broken]
    page.set_input_files("#files", [str(f) for f in files])
    page.click("#upload")
    expect(page.locator("#uploads tbody tr .file-state")).to_have_count(len(files))
    walk.shot(page, "admin", "02-upload", "#uploads")
    tab(page, "documents")
    page.select_option("#docs-kb", "handbook")
    expect(page.locator("#docs tbody tr .file-state", has_text="queued")).to_have_count(len(files))
    walk.shot(page, "admin", "03-documents-queued", "#tab-documents", reveal=STATUS)

    # A build held at its second file: progress bar, per-file states, then cancelled with a reason.
    tab(page, "admin")
    hold.armed = True
    page.click("#build")
    if not hold.reached.wait(600):
        raise RuntimeError("the build never reached its second file")
    expect(page.locator("#cancel-build")).to_be_visible()
    # The second file held before its embedding, the third read ahead meanwhile: both in work.
    expect(page.locator("#uploads tbody tr .file-state", has_text="parsing")).to_have_count(2)
    walk.shot(page, "admin", "04-build-progress", "#uploads")
    tab(page, "documents")
    expect(page.locator("#docs tbody tr .file-state", has_text="parsing")).to_have_count(2)
    walk.shot(page, "admin", "05-documents-parsing", "#tab-documents", reveal=STATUS)
    tab(page, "admin")
    answer_prompt(page, "uploaded before the docx was approved", lambda: page.click("#cancel-build"))
    expect(page.locator("#cancel-build")).to_be_disabled()
    walk.shot(page, "admin", "06-build-cancelling", "#uploads")
    hold.armed = False
    hold.go.set()
    expect(page.locator("#build-status")).to_have_text("Build cancelled", timeout=LONG)

    page.click("#build")
    expect(page.locator("#build-status")).to_have_text("Done", timeout=LONG)
    expect(page.locator("#versions tbody tr.active")).to_have_count(1)
    tab(page, "documents")
    expect(page.locator("#docs tbody tr .file-state", has_text="ready")).to_have_count(3)
    expect(page.locator("#docs tbody tr .file-state", has_text="failed")).to_have_count(1)
    walk.shot(page, "admin", "07-documents-ready-failed", "#tab-documents", reveal=STATUS)

    # Version 2 adds the price list; roll back to 1 and activate 2 again, each with a reason.
    tab(page, "admin")
    page.set_input_files("#files", [str(HANDBOOK / "price_list.xlsx")])
    page.click("#upload")
    expect(page.locator("#uploads tbody tr .file-state")).to_have_count(len(files) + 1)
    page.click("#build")
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("3", timeout=LONG)
    answer_prompt(page, "price list not signed off yet", lambda: page.click("#rollback"))
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("2")
    answer_prompt(page, "signed off by sales", lambda: page.click("#versions .act[data-seq='3']"))
    expect(page.locator("#versions tbody tr.active td").first).to_have_text("3")
    expect(page.locator("#activations tbody tr").first).to_contain_text("signed off by sales")
    walk.shot(page, "admin", "08-versions", "#tab-admin h3[data-i18n=versions]")
    page.click("#versions tbody tr.active .rep")
    expect(page.locator("#report .rp")).to_be_visible()
    walk.shot(page, "admin", "09-quality-report", "#report")

    # Chunking: other sizes previewed on a file (nothing is built), then back to the configured ones.
    page.fill("#ck-child", "80")
    page.fill("#ck-overlap", "0")
    page.fill("#ck-parent", "300")
    page.select_option("#ck-file", "employee_handbook.md")
    page.click("#ck-preview")
    expect(page.locator("#ck-list li.ck-chunk").first).to_be_visible()
    walk.shot(page, "admin", "10-chunking-preview", "#chunking-box")


def admin_asks(page: Page, walk: Walk) -> None:
    """Chat: a cited Markdown answer and its passage, a refusal; the retrieval test with its scores."""
    tab(page, "chat")
    page.select_option("#chat-kb", "handbook")
    ask(page, "年假有几天？", 0)  # the handbook's list, as a Markdown list with its citation markers
    expect(page.locator(".msg.assistant .text li")).to_have_count(3)
    expect(page.locator(".msg.assistant .sources a").first).to_be_visible()
    walk.shot(page, "admin", "11-chat-answer", ".msg.assistant", "nearest")
    page.locator(".msg.assistant .sources a").first.click()
    expect(page.locator("#passage")).to_be_visible()
    walk.shot(page, "admin", "12-chat-citation", "#passage", "nearest")
    page.click("#new-chat")
    ask(page, "What is the boiling point of liquid nitrogen on Mars?", 0)
    expect(page.locator(".msg.assistant .badge.refused")).to_be_visible()
    expect(page.locator(".msg.assistant .text")).to_contain_text("does not cover")
    walk.shot(page, "admin", "13-chat-refusal", ".msg.assistant", "nearest")

    tab(page, "retrieval")
    page.select_option("#rt-kb", "handbook")
    page.fill("#rt-query", "一线城市住宿上限是多少？")
    page.click("#rt-form button")
    expect(page.locator("#rt-hits tbody tr dl.scores").first).to_be_visible()
    expect(page.locator("#rt-verdict")).to_be_visible()
    walk.shot(page, "admin", "14-retrieval-test", "#rt-verdict", "center")


def employee_view(page: Page, walk: Walk) -> None:
    """An employee: chat (the KB and the HR scenario, a thumbs-down), and what the console does not offer."""
    offered = [t for t in TABS if page.locator(f"button[data-tab={t}]").is_visible()]
    if offered != ["chat", "documents", "retrieval", "scenarios", "keys", "traces"]:
        walk.problems.append(f"employee: tabs offered {offered}")
    page.select_option("#chat-kb", "handbook")
    ask(page, "How many days per week can I work remotely?", 0)
    expect(page.locator(".msg.assistant .sources a").first).to_be_visible()
    walk.shot(page, "employee", "01-chat", ".msg.assistant", "nearest")
    page.select_option("#chat-scenario", "hr")
    ask(page, "How many days of annual leave do new hires get?", 0)
    answer_prompt(page, "should say how many days in the first year", lambda: page.click(".feedback .down"))
    expect(page.locator(".msg.assistant .feedback .down")).to_be_disabled()
    walk.shot(page, "employee", "02-scenario-feedback", ".msg.assistant .feedback", "nearest")
    expect(page.locator("#toast")).to_be_hidden(timeout=30_000)
    tab(page, "retrieval")
    expect(page.locator("#rt-kb")).not_to_have_value("")
    page.select_option("#rt-kb", "handbook")
    expect(page.locator("#rt-version")).to_be_hidden()  # an employee may not search another version
    page.fill("#rt-query", "remote work days")
    page.click("#rt-form button")
    expect(page.locator("#rt-hits tbody tr dl.scores").first).to_be_visible()
    walk.shot(page, "employee", "03-retrieval-no-version")
    tab(page, "keys")
    expect(page.locator("#tab-keys .denied")).to_be_visible()
    expect(page.locator("#key-form")).to_be_hidden()
    walk.shot(page, "employee", "04-not-offered")
    walk.every_panel_fits(page, "employee")


def admin_reviews(page: Page, walk: Walk) -> None:
    """Feedback made a FAQ entry, the audit log, a key with an expiry; then every panel at 390 px."""
    tab(page, "feedback")
    row = page.locator("#fb tbody tr", has_text="annual leave")
    row.locator(".fb-to-faq").click()
    expect(page.locator("#fb-faq")).to_be_visible()
    expect(page.locator("#fb-faq-scenario")).to_have_value("hr")
    page.fill("#fb-faq-a", "New hires get 5 days of annual leave in their first year.")
    walk.shot(page, "admin", "15-feedback-to-faq", "#fb-faq", "center")
    page.click("#fb-faq-save")
    expect(page.locator("#fb tbody tr .fb-handled")).to_contain_text("faq:hr:")
    expect(page.locator("#toast")).to_be_hidden(timeout=30_000)  # not over the next screenshots

    tab(page, "audit")
    expect(page.locator("#audit tbody tr[data-action=rollback]")).to_have_count(1)
    expect(page.locator("#audit tbody tr[data-action=cancel]")).to_have_count(1)
    walk.shot(page, "admin", "16-audit", reveal="#audit thead th:nth-child(3)")

    tab(page, "keys")
    page.fill("#key-name", "contractor")
    page.select_option("#key-roles", ["employee"])
    page.fill("#key-days", "30")
    page.click("#key-form button")
    expect(page.locator("#copy-secret")).to_be_visible()
    expect(page.locator("#keys tbody tr", has_text="contractor")).to_have_count(1)
    walk.shot(page, "admin", "17-keys-expiry", reveal="#keys thead th:nth-child(6)")
    walk.every_panel_fits(page, "admin")


def walk_through(out: Path, screenshots: bool = True) -> Walk:
    """Every flow as admin and employee on a fresh service; the screenshots written to `out` and the
    problems seen."""
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    walk = Walk(out, screenshots)
    expect.set_options(timeout=120_000)
    with tempfile.TemporaryDirectory(prefix="lore-walk-") as tmp:
        root = Path(tmp)
        scenarios = Path(shutil.copytree(REPO / "examples" / "scenarios", root / "scenarios"))
        broken = root / "scanned_contract.pdf"
        broken.write_bytes(b"%PDF-1.4 this is not really a PDF")
        lore = Lore(
            load_settings(
                home=root / "home", scenario={"scenarios_dir": scenarios}, api={"rate_limit_per_minute": 0}
            )
        )
        try:
            build_scenario(lore, Scenarios(scenarios).get("hr"), activate=True)
            admin = lore.catalog.create_api_key("bluefin", ["admin", "platform-admin"], name="ops-admin")[1]
            employee = lore.catalog.create_api_key("bluefin", ["employee"], name="mei")[1]
            hold = Hold(lore)
            with service(lore) as url, sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = signed_in(browser, walk, url, admin, "admin")
                admin_builds(page, walk, hold, broken)
                admin_asks(page, walk)
                employee_view(signed_in(browser, walk, url, employee, "employee"), walk)
                admin_reviews(page, walk)
                browser.close()
        finally:
            lore.close()
    return walk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--no-screenshots", action="store_true", help="walk and check only, write no PNG")
    args = parser.parse_args(argv)
    walk = walk_through(args.out, screenshots=not args.no_screenshots)
    for path in walk.shots:
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        print(f"{shown}  {path.stat().st_size // 1000} KB")
    for problem in walk.problems:
        print("PROBLEM:", problem, file=sys.stderr)
    return 1 if walk.problems else 0


if __name__ == "__main__":
    sys.exit(main())
