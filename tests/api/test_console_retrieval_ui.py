"""The console's retrieval test in a real browser against a real service: the settings an administrator sets
are what the search is asked with, each hit's scores are the server's, named and explained (dense, BM25, the
fusion of their ranks, the reranker's), the refusal verdict follows the threshold typed without searching
again, all on a phone without horizontal scrolling and with no serious axe-core violation; an employee is
not offered a version to search (the server would refuse it)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.sync_api import expect

from lore.engine import Lore
from tests.api import test_console_ui
from tests.api.conftest import auth
from tests.api.test_console_a11y import serious_violations
from tests.api.test_console_admin_ui import console_errors, signed_in
from tests.conftest import EXAMPLES

site = test_console_ui.site  # a live service in this process and an admin + platform-admin key
QUESTION = "报销需要什么材料？"


def _docs(lore: Lore) -> None:
    lore.create_kb("docs")
    lore.ingest("docs", [EXAMPLES / "employee_handbook.md", EXAMPLES / "faq.csv"])


def _search(page) -> tuple[dict[str, Any], dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Run the form's search: (the request's body, the reply) once the hits are shown."""
    with page.expect_response(lambda r: r.url.endswith("/api/search")) as answered:
        page.click("#rt-form button")
    reply = answered.value
    assert reply.status == 200, reply.text()
    page.wait_for_selector("#rt-hits tbody tr dl.scores")
    return json.loads(reply.request.post_data or "{}"), reply.json()


def _scores(page, row: int) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """One shown hit's scores, name -> value as displayed."""
    cells = page.locator(f"#rt-hits tbody tr:nth-child({row}) dl.scores")
    names = [n.split(" k=")[0].strip() for n in cells.locator("dt").all_inner_texts()]
    return dict(zip(names, [v.strip() for v in cells.locator("dd").all_inner_texts()], strict=True))


def test_the_retrieval_test_explains_each_score_and_judges_the_threshold(site, page) -> None:  # type: ignore[no-untyped-def]
    url, secret, lore = site
    _docs(lore)
    errors = console_errors(page)
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, url, secret)
    page.click("button[data-tab=retrieval]")
    expect(page.locator("#rt-kb")).to_have_value("docs", timeout=60_000)
    expect(page.locator("#rt-version")).to_be_visible()  # an admin may search another version
    page.fill("#rt-query", QUESTION)
    body, reply = _search(page)
    assert body == {"kb": "docs", "query": QUESTION, "mode": "hybrid", "top_k": 10, "explain": True}
    top = reply["hits"][0]
    assert top["rerank_score"] is not None and top["fused_score"] is not None  # reranked, hybrid
    shown = _scores(page, 1)
    assert shown["dense"] == f"{top['dense_score']:.4f} #{top['dense_rank']}"
    assert shown["BM25"] == f"{top['bm25_score']:.4f} #{top['bm25_rank']}"
    assert shown["fused (RRF)"] == f"{top['fused_score']:.4f}"
    assert shown["reranker"] == f"{top['rerank_score']:.4f}"
    assert page.locator("#rt-hits tbody tr").count() == len(reply["hits"])
    assert "fused: reciprocal-rank fusion" in page.inner_text("#rt-legend")
    assert f"reranked by {reply['rerank']['provider']}" in page.inner_text("#rt-meta")

    # The verdict: the KB's threshold until another is typed, judged again on each keystroke.
    evidence = reply["evidence"]
    assert evidence["held"] and evidence["confidence"] >= evidence["threshold"]
    verdict = page.locator("#rt-verdict")
    expect(verdict).to_contain_text("an answer would be given")
    expect(verdict).to_contain_text(f"{evidence['confidence']:.3f} ≥ threshold {evidence['threshold']:.2f}")
    assert page.get_attribute("#rt-threshold", "placeholder") == f"KB's {evidence['threshold']:.2f}"
    searches: list[str] = []
    page.on("request", lambda r: searches.append(r.url) if r.url.endswith("/api/search") else None)
    page.fill("#rt-threshold", "1")
    expect(verdict).to_contain_text("the question would be refused")
    expect(verdict).to_contain_text("< threshold 1.00")
    page.fill("#rt-threshold", "")
    expect(verdict).to_contain_text("an answer would be given")
    assert searches == []  # judged in place, not searched again
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    found = serious_violations(page)
    assert not found, json.dumps(found, indent=1)

    # Another fusion constant and candidates, without the reranker: the fused score orders the hits.
    page.fill("#rt-rrf", "10")
    page.fill("#rt-recall", "20")
    page.uncheck("#rt-rerank")
    body, reply = _search(page)
    assert (body["rrf_k"], body["recall_k"], body["rerank"]) == (10, 20, False)
    assert reply["rerank"] is None and all(h["rerank_score"] is None for h in reply["hits"])
    top = reply["hits"][0]
    fused = sum(1 / (10 + r) for r in (top["dense_rank"], top["bm25_rank"]) if r)
    assert abs(top["fused_score"] - fused) < 1e-9 and top["score"] == top["fused_score"]
    shown = _scores(page, 1)
    assert "reranker" not in shown and shown["fused (RRF)"] == f"{fused:.4f}"
    assert "k=10" in page.inner_text("#rt-hits tbody tr:nth-child(1) dl.scores")

    # BM25 alone: one score per hit, no fusion.
    page.select_option("#rt-mode", "bm25")
    body, reply = _search(page)
    assert body["mode"] == "bm25" and reply["mode"] == "bm25"
    assert set(_scores(page, 1)) == {"BM25"}
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1600, "height": 1000})
    found = serious_violations(page)
    assert not found, json.dumps(found, indent=1)

    # In Chinese, every word of the panel is Chinese.
    page.click("#lang")
    expect(page.locator("#tab-retrieval legend")).to_have_text("检索设置")
    _search(page)
    assert "BM25" in page.inner_text("#rt-hits tbody tr:nth-child(1) dl.scores")
    expect(verdict).to_contain_text("P(知识库能回答)")
    page.click("#lang")
    assert not errors, errors


def test_an_employee_is_not_offered_a_version_to_search(site, page) -> None:  # type: ignore[no-untyped-def]
    url, _, lore = site
    _docs(lore)
    _, employee = lore.catalog.create_api_key("default", ["employee"], name="reader")
    errors = console_errors(page)
    signed_in(page, url, employee)
    page.click("button[data-tab=retrieval]")
    expect(page.locator("#rt-kb")).to_have_value("docs", timeout=60_000)
    expect(page.locator("#rt-version")).to_be_hidden()
    expect(page.locator("#rt-rerank")).to_be_visible()  # what any reader may set stays offered
    expect(page.locator("#rt-threshold")).to_be_visible()
    page.fill("#rt-query", QUESTION)
    body, reply = _search(page)
    assert "version" not in body and reply["hits"] and reply["evidence"] is not None
    # What the console does not offer, the server refuses.
    refused = httpx.post(
        f"{url}/api/search",
        json={"kb": "docs", "query": QUESTION, "version": 1},
        headers=auth(employee),
        timeout=60,
    )
    assert refused.status_code == 403, refused.text
    found = serious_violations(page)
    assert not found, json.dumps(found, indent=1)
    assert not errors, errors
