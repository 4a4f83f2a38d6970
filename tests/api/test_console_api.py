"""The console's API: documents with status and metadata, a document's chunks, feedback review, keys,
scenarios with their FAQ rows and routing test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pymupdf
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from lore.api import create_app
from lore.engine import Lore
from lore.ingest.pages import passage_region
from lore.scenario.build import build_scenario
from lore.scenario.config import Scenarios
from lore.scenario.faq import read_faq
from tests.api.conftest import Keys, auth, build_and_wait, sse_events
from tests.conftest import SHARED
from tests.scenario.conftest import copy_scenarios, scenario_lore

FIXTURES = SHARED / "fixtures" / "documents"


def test_documents_table_lists_indexed_files_with_metadata(client: TestClient, keys: Keys) -> None:
    r = client.get("/api/kbs/hb/documents", headers=auth(keys.admin))
    assert r.status_code == 200, r.text
    docs = {d["name"]: d for d in r.json()["documents"]}
    assert len(docs) == 5 and not any("nightingale" in n for n in docs)  # tenant-b's file is not listed
    xlsx = next(d for n, d in docs.items() if n.endswith(".xlsx"))
    assert xlsx["status"] == "ingested" and xlsx["type"] == "xlsx" and xlsx["chunks"] > 0
    assert xlsx["sheets"] and xlsx["rows"] and xlsx["tenant"] == "default" and xlsx["visibility"]
    other = client.get("/api/kbs/hb/documents", headers=auth(keys.tenant_b)).json()["documents"]
    assert [d["name"] for d in other] == [
        n for n in [d["name"] for d in other] if "nightingale" in n
    ] and other


def test_document_chunks_in_order_with_location(client: TestClient, keys: Keys) -> None:
    docs = client.get("/api/kbs/hb/documents", headers=auth(keys.staff)).json()["documents"]
    name = next(d["name"] for d in docs if d["name"].endswith(".md"))
    r = client.get(f"/api/kbs/hb/documents/{name}/chunks", headers=auth(keys.staff))
    assert r.status_code == 200, r.text
    chunks = r.json()["chunks"]
    assert chunks and [c["chunk_index"] for c in chunks] == sorted(c["chunk_index"] for c in chunks)
    assert all(c["text"] and c["parent_text"] and "heading_path" in c for c in chunks)


def test_another_tenants_document_looks_absent(client: TestClient, keys: Keys) -> None:
    docs = client.get("/api/kbs/hb/documents", headers=auth(keys.tenant_b)).json()["documents"]
    theirs = docs[0]["name"]
    mine = next(
        d["name"] for d in client.get("/api/kbs/hb/documents", headers=auth(keys.admin)).json()["documents"]
    )
    hidden = client.get(f"/api/kbs/hb/documents/{theirs}/chunks", headers=auth(keys.admin))
    absent = client.get("/api/kbs/hb/documents/no-such-file.md/chunks", headers=auth(keys.admin))
    assert hidden.status_code == absent.status_code == 404
    r = client.get(f"/api/kbs/hb/documents/{mine}/chunks", headers=auth(keys.tenant_b))
    assert r.status_code == 404 and "NG-7731" not in r.text


def test_feedback_review_and_export(client: TestClient, keys: Keys, lore: Lore) -> None:
    events = sse_events(
        client.post(
            "/api/ask", json={"kb": "hb", "question": "What is the refund window?"}, headers=auth(keys.staff)
        ).text
    )
    trace = next(d for e, d in events if e == "end")["trace_id"]
    assert (
        client.post(
            "/api/feedback",
            json={"trace_id": trace, "rating": -1, "note": "too long"},
            headers=auth(keys.staff),
        ).status_code
        == 201
    )
    assert client.get("/api/feedback", headers=auth(keys.staff)).status_code == 403
    listed = client.get("/api/feedback?rating=-1", headers=auth(keys.admin))
    assert listed.status_code == 200, listed.text
    rows = listed.json()
    row = next(r for r in rows if r["trace_id"] == trace)
    assert row["note"] == "too long" and row["citations"] and not row["redacted"]
    _, b_admin = lore.catalog.create_api_key("tenant-b", ["admin"])
    other = client.get("/api/feedback", headers=auth(b_admin))
    assert other.status_code == 200 and all(r["trace_id"] != trace for r in other.json())
    export = client.get("/api/feedback/export", headers=auth(keys.admin))
    assert "attachment" in export.headers["content-disposition"]
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert any(x["trace_id"] == trace and x["cited_files"] for x in lines)


def test_keys_need_platform_admin_and_stay_in_tenant(client: TestClient, keys: Keys, lore: Lore) -> None:
    assert client.get("/api/keys", headers=auth(keys.admin)).status_code == 403
    _, platform = lore.catalog.create_api_key("default", ["admin", "platform-admin"])
    made = client.post("/api/keys", json={"roles": ["staff"], "name": "console"}, headers=auth(platform))
    assert made.status_code == 201 and made.json()["tenant"] == "default"
    secret = made.json()["secret"]
    assert client.get("/api/kbs", headers=auth(secret)).status_code == 200
    listed = client.get("/api/keys", headers=auth(platform)).json()
    assert {k["tenant"] for k in listed} == {"default"} and all("secret" not in k for k in listed)
    other = next(k for k in lore.catalog.list_api_keys() if k.tenant_id == "tenant-b")
    assert client.delete(f"/api/keys/{other.id}", headers=auth(platform)).status_code == 404
    assert client.delete(f"/api/keys/{made.json()['id']}", headers=auth(platform)).status_code == 204
    assert client.get("/api/kbs", headers=auth(secret)).status_code == 401


def test_feedback_redacts_passages_the_reader_cannot_read(client: TestClient, keys: Keys, lore: Lore) -> None:
    _, b_admin = lore.catalog.create_api_key("tenant-b", ["admin"])
    _, b_limited = lore.catalog.create_api_key("tenant-b", ["admin"], datasets=["elsewhere"])
    events = sse_events(
        client.post(
            "/api/ask",
            json={"kb": "hb", "question": "What is the launch code of Nightingale?"},
            headers=auth(b_admin),
        ).text
    )
    trace = next(d for e, d in events if e == "end")["trace_id"]
    assert (
        client.post(
            "/api/feedback", json={"trace_id": trace, "rating": -1}, headers=auth(b_admin)
        ).status_code
        == 201
    )
    mine = next(
        r for r in client.get("/api/feedback", headers=auth(b_admin)).json() if r["trace_id"] == trace
    )
    assert not mine["redacted"] and "NG-7731" in json.dumps(mine)
    theirs = client.get("/api/feedback", headers=auth(b_limited))
    row = next(r for r in theirs.json() if r["trace_id"] == trace)
    assert row["redacted"] and "NG-7731" not in theirs.text


# ---- scenarios and FAQ ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Lore, dict[str, str]]]:
    """The sample `hr` scenario (copied: its faq.csv is edited here), built, behind an in-process client."""
    root = tmp_path_factory.mktemp("console3_hr")
    folder = copy_scenarios(root / "scenarios")
    lore = scenario_lore(root / "home", folder, api={"rate_limit_per_minute": 0})
    build_scenario(lore, Scenarios(folder).get("hr"), activate=True)
    cat = lore.catalog
    keys = {
        "employee": cat.create_api_key("bluefin", ["employee"])[1],
        "admin": cat.create_api_key("bluefin", ["admin"])[1],
        "outsider": cat.create_api_key("acme", ["admin"])[1],
    }
    with TestClient(create_app(lore)) as client:
        yield client, lore, keys
    lore.close()


def test_scenario_configuration_and_the_faq_rows_a_key_reads(hr) -> None:  # type: ignore[no-untyped-def]
    client, _, keys = hr
    config = client.get("/api/scenarios/hr", headers=auth(keys["employee"]))
    assert config.status_code == 200, config.text
    c = config.json()
    assert {s["id"] for s in c["sources"]} >= {"leave", "expense"} and c["access"]["roles"]
    assert c["routing"]["out_of_scope"] and not c["writable"] and "folder" not in c
    assert client.get("/api/scenarios/hr", headers=auth(keys["outsider"])).status_code == 404
    assert client.get("/api/scenarios/nope", headers=auth(keys["employee"])).status_code == 404
    rows = client.get("/api/scenarios/hr/faq", headers=auth(keys["employee"])).json()
    questions = [r["question"] for r in rows["rows"]]
    assert "如何申请年假？" in questions and "调薪什么时候生效？" not in questions  # managers and HR only
    assert "香港同事的年假有几天？" not in questions and all(r["status"] == "ok" for r in rows["rows"])
    assert rows["hidden"] >= 5 and not rows["writable"]
    # An editor also sees the malformed rows, with the reason each is skipped.
    admin = client.get("/api/scenarios/hr/faq", headers=auth(keys["admin"])).json()
    invalid = {r["line"]: r["reason"] for r in admin["rows"] if r["status"] == "invalid"}
    assert (
        admin["writable"]
        and "empty question" in invalid.values()
        and any("holidays" in v for v in invalid.values())
    )
    assert client.get("/api/scenarios/hr/faq", headers=auth(keys["outsider"])).status_code == 404


def test_faq_add_edit_disable_flags_conflicts(hr) -> None:  # type: ignore[no-untyped-def]
    client, lore, keys = hr
    h = auth(keys["admin"])
    rev = client.get("/api/scenarios/hr/faq", headers=h).json()["revision"]
    row = {"question": "年假有几天？", "answer": "二十天。", "source": "leave", "dataset": "hr-faq"}
    assert (
        client.post(
            "/api/scenarios/hr/faq", json={"revision": rev, **row}, headers=auth(keys["employee"])
        ).status_code
        == 403
    )
    made = client.post("/api/scenarios/hr/faq", json={"revision": rev, **row}, headers=h)
    assert made.status_code == 201, made.text
    new = made.json()
    assert new["status"] == "conflict" and new["clash"] == [3] and "line 3" in new["reason"]
    stale = client.put(
        f"/api/scenarios/hr/faq/{new['index']}", json={"revision": rev, "disabled": True}, headers=h
    )
    assert stale.status_code == 409  # the file changed since `rev`
    rev = client.get("/api/scenarios/hr/faq", headers=h).json()["revision"]
    off = client.put(
        f"/api/scenarios/hr/faq/{new['index']}", json={"revision": rev, "disabled": True}, headers=h
    )
    assert off.status_code == 200 and off.json()["status"] == "disabled" and off.json()["disabled"]
    rev = client.get("/api/scenarios/hr/faq", headers=h).json()["revision"]
    fixed = client.put(
        "/api/scenarios/hr/faq/9", json={"revision": rev, "question": "缺少问题的那一行？"}, headers=h
    )
    assert fixed.status_code == 200 and fixed.json()["status"] == "ok"  # the malformed row, repaired
    rev = fixed_rev = client.get("/api/scenarios/hr/faq", headers=h).json()["revision"]
    bad = client.post(
        "/api/scenarios/hr/faq",
        json={"revision": rev, "question": "q?", "answer": "a", "source": "nope"},
        headers=h,
    )
    assert bad.status_code == 422 and "source" in bad.text
    outside = client.post(
        "/api/scenarios/hr/faq",
        json={"revision": rev, "question": "q?", "answer": "a", "roles": ["manager"]},
        headers=h,
    )
    assert outside.status_code == 403  # a row its own key could not read
    hidden = client.put("/api/scenarios/hr/faq/8", json={"revision": rev, "answer": "x"}, headers=h)
    assert hidden.status_code == 404 and "调薪" not in hidden.text  # the managers' row is not this key's
    assert client.get("/api/scenarios/hr/faq", headers=h).json()["revision"] == fixed_rev  # nothing written
    sc = Scenarios(lore.settings.scenario.scenarios_dir).get("hr")
    rows, problems = read_faq(sc.faq_path, sc)
    assert "缺少问题的那一行？" in [r.question for r in rows] and "二十天。" not in [r.answer for r in rows]
    assert not any("二十天" in p.reason or p.line == new["line"] for p in problems)  # disabled: not a problem
    actions = [e.action for e in lore.catalog.audit_log("bluefin")]
    assert "faq_add" in actions and "faq_edit" in actions


def test_routing_test_shows_route_profile_and_plan(hr) -> None:  # type: ignore[no-untyped-def]
    client, _, keys = hr
    h = auth(keys["employee"])

    def route(q: str) -> dict:
        r = client.post("/api/scenarios/hr/route", json={"question": q}, headers=h)
        assert r.status_code == 200, r.text
        return r.json()

    assert route("你好")["route"]["name"] == "greeting"
    hotel = route("出差住宿标准是多少？")
    assert hotel["route"]["name"] == "retrieval" and hotel["source"] == {
        "ids": ["expense"],
        "how": "inferred",
    }
    assert hotel["plan"]["faq_k"] and hotel["plan"]["reasons"] and hotel["intent"] == "lookup"
    risky = route("可以预支差旅费吗")
    assert risky["route"]["risk"] == "pricing" and risky["profile"]["name"] == "guarded"
    assert route("今天天气怎么样")["route"]["name"] == "out_of_scope"
    assert (
        client.post(
            "/api/scenarios/hr/route", json={"question": "x"}, headers=auth(keys["outsider"])
        ).status_code
        == 404
    )
    assert client.post("/api/scenarios/hr/route", json={"question": ""}, headers=h).status_code == 422


def test_version_diff_with_an_uploaded_or_saved_eval_set_and_who_activated(hr) -> None:  # type: ignore[no-untyped-def]
    client, lore, keys = hr
    build_scenario(
        lore, Scenarios(lore.settings.scenario.scenarios_dir).get("hr")
    )  # a second, staged version
    h = auth(keys["admin"])
    evals = (
        '{"question": "出差住宿标准是多少？", "files": ["faq.csv"]}\n'
        '{"question": "试用期多长？", "files": ["faq.csv"]}\n'
    )
    r = client.post(
        "/api/kbs/hr/diff",
        json={"base": 1, "candidate": 2, "eval_jsonl": evals, "save_as": "smoke"},
        headers=h,
    )
    assert r.status_code == 200, r.text
    d = r.json()
    assert set(d["files"]) >= {"added", "changed", "removed", "unchanged"}
    q = d["retrieval"]
    assert q["questions"] == 2 and q["base"]["recall"] == 1.0 and "mrr" in q["candidate"]
    sets = client.get("/api/kbs/hr/eval-sets", headers=h).json()["eval_sets"]
    assert {"name": "smoke", "questions": 2} in sets
    again = client.post("/api/kbs/hr/diff", json={"base": 1, "candidate": 2, "eval_set": "smoke"}, headers=h)
    assert again.status_code == 200 and again.json()["retrieval"]["candidate"] == q["candidate"]
    assert (
        client.post(
            "/api/kbs/hr/diff", json={"base": 1, "candidate": 2, "eval_set": "nope"}, headers=h
        ).status_code
        == 404
    )
    bad = client.post(
        "/api/kbs/hr/diff", json={"base": 1, "candidate": 2, "eval_jsonl": "{not json"}, headers=h
    )
    assert bad.status_code == 400 and ":1:" in bad.text
    assert client.post("/api/kbs/hr/diff", json={"base": 1, "candidate": 9}, headers=h).status_code == 404
    assert client.get("/api/kbs/hr/eval-sets", headers=auth(keys["employee"])).status_code == 403
    assert client.get("/api/kbs/hr/eval-sets", headers=auth(keys["outsider"])).status_code == 404
    # Activate with a reason: the activation log says who (key and tenant) and why.
    act = client.post("/api/kbs/hr/versions/2/activate", json={"reason": "faq fixes"}, headers=h)
    assert act.status_code == 200, act.text
    log = client.get("/api/kbs/hr/versions", headers=h).json()["activations"]
    assert (
        log[-1]["to_seq"] == 2 and log[-1]["reason"] == "faq fixes" and log[-1]["actor"].endswith("@bluefin")
    )


def test_documents_table_takes_the_same_queries_whatever_the_number_of_files(
    client: TestClient, keys: Keys, lore: Lore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("console3_docs")
    for i in range(12):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nParking rule number {i}.\n", encoding="utf-8")
    lore.create_kb("one", "one file")
    lore.ingest("one", [folder / "note0.md"])
    lore.create_kb("many", "twelve files")
    lore.ingest("many", sorted(folder.glob("*.md")))
    counted: list[str] = []

    def count(*args: object) -> None:
        counted.append(str(args[2]))

    def queries(kb: str) -> int:
        counted.clear()
        event.listen(lore.catalog.engine, "before_cursor_execute", count)
        try:
            r = client.get(f"/api/kbs/{kb}/documents", headers=auth(keys.admin))
        finally:
            event.remove(lore.catalog.engine, "before_cursor_execute", count)
        assert r.status_code == 200 and r.json()["documents"], r.text
        return len(counted)

    # The least of two calls each: a key's last-use stamp or a cache epoch check may add a write to either.
    one, many = min(queries("one"), queries("one")), min(queries("many"), queries("many"))
    assert len(client.get("/api/kbs/many/documents", headers=auth(keys.admin)).json()["documents"]) == 12
    assert many == one, (one, many)


NOTES = "".join(
    f"# Section {i}\n\n"
    + f"Section {i} says the shuttle leaves from gate {i} every {10 + i} minutes. " * 6
    + "\n\n"
    for i in range(4)
)


def _kb_with_upload(client: TestClient, h: dict[str, str], kb: str) -> None:
    assert client.post("/api/kbs", json={"name": kb}, headers=h).status_code == 201
    up = client.post(f"/api/kbs/{kb}/files", files={"file": ("notes.md", NOTES.encode())}, headers=h)
    assert up.status_code == 201, up.text


def test_chunk_edit_and_switch_off_in_an_unversioned_kb_apply_at_once(client: TestClient, keys: Keys) -> None:
    h = auth(keys.admin)
    _kb_with_upload(client, h, "edits3")
    assert client.post("/api/kbs/edits3/ingest", json={}, headers=h).status_code == 200
    chunks = client.get("/api/kbs/edits3/documents/notes.md/chunks", headers=h).json()["chunks"]
    assert len(chunks) >= 3
    staff = client.put(
        "/api/kbs/edits3/documents/notes.md/chunks/0", json={"off": True}, headers=auth(keys.staff)
    )
    assert staff.status_code == 403
    r = client.put(
        "/api/kbs/edits3/documents/notes.md/chunks/0",
        json={"text": "The ferry leaves from pier nine."},
        headers=h,
    )
    assert r.status_code == 200, r.text
    assert r.json()["applied"] and not r.json()["edit"]["pending"]
    off = client.put("/api/kbs/edits3/documents/notes.md/chunks/1", json={"off": True}, headers=h).json()
    assert off["applied"] and off["edit"]["off"]
    after = client.get("/api/kbs/edits3/documents/notes.md/chunks", headers=h).json()
    texts = [c["text"] for c in after["chunks"]]
    assert texts[0] == "The ferry leaves from pier nine." and len(texts) == len(chunks) - 1
    assert chunks[1]["text"] not in texts and {e["chunk_index"] for e in after["edits"]} == {0, 1}
    hits = client.post("/api/search", json={"kb": "edits3", "query": "ferry pier nine"}, headers=h).json()[
        "hits"
    ]
    assert hits[0]["text"] == "The ferry leaves from pier nine."  # re-embedded and re-indexed
    back = client.put("/api/kbs/edits3/documents/notes.md/chunks/1", json={}, headers=h)  # switch it on again
    assert back.status_code == 200 and back.json()["applied"]
    restored = client.get("/api/kbs/edits3/documents/notes.md/chunks", headers=h).json()
    assert chunks[1]["text"] in [c["text"] for c in restored["chunks"]]
    assert [e["chunk_index"] for e in restored["edits"]] == [0]
    assert (
        client.put("/api/kbs/edits3/documents/notes.md/chunks/99", json={"off": True}, headers=h).status_code
        == 404
    )
    assert (
        client.put("/api/kbs/edits3/documents/notes.md/chunks/0", json={"text": " "}, headers=h).status_code
        == 422
    )


def test_chunk_edit_in_a_versioned_kb_waits_for_the_next_build(client: TestClient, keys: Keys) -> None:
    h = auth(keys.admin)
    _kb_with_upload(client, h, "vedits3")
    assert build_and_wait(client, "vedits3", {"activate": True}, h)["status"] == "succeeded"
    chunks = client.get("/api/kbs/vedits3/documents/notes.md/chunks", headers=h).json()["chunks"]
    r = client.put(
        "/api/kbs/vedits3/documents/notes.md/chunks/0",
        json={"text": "The ferry leaves from pier nine."},
        headers=h,
    )
    assert r.status_code == 200 and not r.json()["applied"] and r.json()["edit"]["pending"]
    still = client.get("/api/kbs/vedits3/documents/notes.md/chunks", headers=h).json()
    assert still["chunks"][0]["text"] == chunks[0]["text"] and still["edits"][0]["pending"]
    assert build_and_wait(client, "vedits3", {"activate": True}, h)["status"] == "succeeded"
    now = client.get("/api/kbs/vedits3/documents/notes.md/chunks", headers=h).json()
    assert now["chunks"][0]["text"] == "The ferry leaves from pier nine."
    assert now["edits"][0]["applied_in"] == 2 and not now["edits"][0]["pending"]
    v1 = client.post(
        "/api/search", json={"kb": "vedits3", "query": "ferry pier nine", "version": 1}, headers=h
    ).json()["hits"]
    assert all(x["text"] != "The ferry leaves from pier nine." for x in v1)  # version 1 is as it was built


def test_scanned_pdf_pages_as_images(client: TestClient, keys: Keys) -> None:
    h = auth(keys.admin)
    assert client.post("/api/kbs", json={"name": "scan3"}, headers=h).status_code == 201
    pdf = (FIXTURES / "rapidocrpdf_image.pdf").read_bytes()
    assert (
        client.post("/api/kbs/scan3/files", files={"file": ("scan.pdf", pdf)}, headers=h).status_code == 201
    )
    up = client.post(
        "/api/kbs/scan3/files", files={"file": ("notes.md", b"# Notes\n\nPlain text.\n")}, headers=h
    )
    assert up.status_code == 201
    assert client.post("/api/kbs/scan3/ingest", json={}, headers=h).status_code == 200
    docs = {d["name"]: d for d in client.get("/api/kbs/scan3/documents", headers=h).json()["documents"]}
    assert docs["scan.pdf"]["ocr_pages"] == 1 and docs["scan.pdf"]["chunks"] > 0
    r = client.get("/api/kbs/scan3/documents/scan.pdf/pages/1", headers=h)
    assert (
        r.status_code == 200
        and r.headers["content-type"] == "image/png"
        and r.content[:8] == b"\x89PNG\r\n\x1a\n"
    )
    assert client.get("/api/kbs/scan3/documents/scan.pdf/pages/2", headers=h).status_code == 404
    assert client.get("/api/kbs/scan3/documents/scan.pdf/pages/0", headers=h).status_code == 422
    assert client.get("/api/kbs/scan3/documents/notes.md/pages/1", headers=h).status_code == 404
    assert (
        client.get("/api/kbs/scan3/documents/scan.pdf/pages/1", headers=auth(keys.tenant_b)).status_code
        == 404
    )


def _png(data: bytes) -> Any:
    return pymupdf.Pixmap(data)


def pymupdf_page_width(path: Any) -> float:
    with pymupdf.open(path) as doc:
        return float(doc[0].rect.width)


def test_cited_pdf_passage_is_highlighted_on_its_page(client: TestClient, keys: Keys) -> None:
    h = auth(keys.admin)
    assert client.post("/api/kbs", json={"name": "cite4"}, headers=h).status_code == 201
    pdf = FIXTURES / "docling_2305.03393v1-pg9.pdf"
    up = client.post("/api/kbs/cite4/files", files={"file": ("paper.pdf", pdf.read_bytes())}, headers=h)
    assert up.status_code == 201
    assert client.post("/api/kbs/cite4/ingest", json={}, headers=h).status_code == 200
    chunks = client.get("/api/kbs/cite4/documents/paper.pdf/chunks", headers=h).json()["chunks"]
    c = max((c for c in chunks if c["page"] == 1), key=lambda c: len(c["text"]))
    plain = client.get("/api/kbs/cite4/documents/paper.pdf/pages/1", headers=h)
    marked = client.get(f"/api/kbs/cite4/documents/paper.pdf/pages/1?chunk={c['chunk_id']}", headers=h)
    assert marked.status_code == 200 and marked.headers["x-lore-region"] == "marked"
    assert plain.headers["x-lore-region"] == "none"
    a, b = _png(plain.content), _png(marked.content)
    assert (a.width, a.height) == (b.width, b.height)
    region = passage_region(pdf, 1, c["text"])
    zoom = a.width / pymupdf_page_width(pdf)
    x0, y0 = (min(r[i] for r in region.rects) * zoom - 2 for i in (0, 1))
    x1, y1 = (max(r[i] for r in region.rects) * zoom + 2 for i in (2, 3))
    inside = outside = 0
    for y in range(0, a.height, 3):
        for x in range(0, a.width, 3):
            if a.pixel(x, y) != b.pixel(x, y):
                if x0 <= x <= x1 and y0 <= y <= y1:
                    inside += 1
                else:
                    outside += 1
    assert inside > 500 and outside == 0  # the passage's lines, and nothing else, are tinted
    assert region.rects and (y1 - y0) < 0.8 * a.height  # a region, not the whole page
    # A chunk the caller cannot read (another tenant's), a missing one and one of another page: one 404.
    theirs = client.post(
        "/api/search", json={"kb": "hb", "query": "NG-7731"}, headers=auth(keys.tenant_b)
    ).json()["hits"][0]["chunk_id"]
    other_page = next((x["chunk_id"] for x in chunks if x["page"] != 1), "none-such")
    for chunk in (theirs, "none-such", other_page):
        r = client.get(f"/api/kbs/cite4/documents/paper.pdf/pages/1?chunk={chunk}", headers=h)
        assert r.status_code == 404 and "not found" in r.json()["detail"], r.text
    r = client.get(f"/api/kbs/hb/documents/paper.pdf/pages/1?chunk={theirs}", headers=h)
    assert r.status_code == 404


def test_ocr_pages_are_reviewed_and_counted(client: TestClient, keys: Keys) -> None:
    h = auth(keys.admin)
    assert client.post("/api/kbs", json={"name": "ocr4"}, headers=h).status_code == 201
    pdf = (FIXTURES / "rapidocrpdf_direct_and_image.pdf").read_bytes()
    assert (
        client.post("/api/kbs/ocr4/files", files={"file": ("mixed.pdf", pdf)}, headers=h).status_code == 201
    )
    assert client.post("/api/kbs/ocr4/ingest", json={}, headers=h).status_code == 200
    doc = client.get("/api/kbs/ocr4/documents", headers=h).json()["documents"][0]
    assert doc["ocr_pages"] == 1 and doc["ocr_unreviewed"] == 1
    view = client.get("/api/kbs/ocr4/documents/mixed.pdf/chunks", headers=h).json()
    assert view["ocr"] == {"pages": [2], "reviewed": {}}
    scanned = next(c for c in view["chunks"] if c["page"] == 2)
    r = client.get(f"/api/kbs/ocr4/documents/mixed.pdf/pages/2?chunk={scanned['chunk_id']}", headers=h)
    assert r.status_code == 200 and r.headers["x-lore-region"] == "no-text-layer"  # the whole page
    staff = client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/2/review", json={}, headers=auth(keys.staff))
    assert staff.status_code == 403
    other = auth(keys.tenant_b)
    assert (
        client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/2/review", json={}, headers=other).status_code
        == 404
    )
    not_ocr = client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/1/review", json={}, headers=h)
    assert not_ocr.status_code == 422 and "not read by OCR" in not_ocr.text
    r = client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/2/review", json={}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["reviewed"] and r.json()["unreviewed"] == [] and r.json()["by"].startswith("key:")
    doc = client.get("/api/kbs/ocr4/documents", headers=h).json()["documents"][0]
    assert doc["ocr_unreviewed"] == 0
    view = client.get("/api/kbs/ocr4/documents/mixed.pdf/chunks", headers=h).json()
    assert list(view["ocr"]["reviewed"]) == ["2"]
    back = client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/2/review", json={"reviewed": False}, headers=h)
    assert back.status_code == 200 and back.json()["unreviewed"] == [2]
    # A new upload of the file (other content) is unreviewed again.
    client.put("/api/kbs/ocr4/documents/mixed.pdf/pages/2/review", json={}, headers=h)
    pdf2 = (FIXTURES / "rapidocrpdf_image.pdf").read_bytes()
    assert client.post("/api/kbs/ocr4/files", files={"file": ("mixed.pdf", pdf2)}, headers=h).status_code in (
        200,
        201,
    )
    assert client.post("/api/kbs/ocr4/ingest", json={}, headers=h).status_code == 200
    doc = client.get("/api/kbs/ocr4/documents", headers=h).json()["documents"][0]
    assert doc["ocr_unreviewed"] == 1


def test_the_gate_can_require_ocr_review(client: TestClient, keys: Keys, lore: Lore) -> None:
    h = auth(keys.admin)
    assert client.post("/api/kbs", json={"name": "ocrgate4"}, headers=h).status_code == 201
    pdf = (FIXTURES / "rapidocrpdf_direct_and_image.pdf").read_bytes()
    up = client.post("/api/kbs/ocrgate4/files", files={"file": ("mixed.pdf", pdf)}, headers=h)
    assert up.status_code == 201
    lore.settings.gate.max_unreviewed_ocr_pages = 0
    try:
        job = build_and_wait(client, "ocrgate4", {"activate": True, "quality_gate": True}, h, timeout=300)
        report = client.get("/api/kbs/ocrgate4/versions/1/report", headers=h).json()
        assert report["ocr"]["unreviewed_pages"] == 1
        assert report["ocr"]["unreviewed"] == [{"file": "mixed.pdf", "page": 2}]
        assert not report["gate"]["passed"] and "not reviewed" in " ".join(report["gate"]["reasons"]), job
        r = client.put("/api/kbs/ocrgate4/documents/mixed.pdf/pages/2/review", json={}, headers=h)
        assert r.status_code == 200, r.text
        build_and_wait(client, "ocrgate4", {"activate": True, "quality_gate": True}, h, timeout=300)
        report = client.get("/api/kbs/ocrgate4/versions/2/report", headers=h).json()
        assert report["ocr"]["unreviewed_pages"] == 0 and report["gate"]["passed"], report["gate"]
    finally:
        lore.settings.gate.max_unreviewed_ocr_pages = None
