"""One regression test per finding of the access review (issue 12: findings 1, 2, 3, 4, 6, 7, 8, 11); each
fails on the code before the one-policy change."""

from __future__ import annotations

import json
from pathlib import Path

from lore.config import load_settings
from lore.engine import Lore
from lore.retrieve.search import SearchOptions
from lore.schema import SearchFilter
from lore.storage.layout import uploads_key
from tests.api.conftest import auth, sse_events
from tests.api.matrix_world import (
    CALLERS,
    A,
    B,
    World,
    canary,
    world_fixture,  # noqa: F401 - the module's fixture `world`
)


def _key(name: str) -> object:
    return next(c for c in CALLERS if c.name == name)


def _h(world: World, name: str) -> dict[str, str]:
    return world.headers(_key(name))  # type: ignore[arg-type]


def test_finding1_a_scenario_never_widens_a_key(world: World) -> None:
    question = {"scenario": "ahr", "question": "What is the canary code of the board minutes?"}
    secret = canary(A, "scn_restricted")
    for name in ("owner_employee", "owner_manager", "no_role"):
        r = world.client.post("/api/ask", json=question, headers=_h(world, name))
        assert r.status_code == 200 and secret not in r.text
        r = world.client.post(
            "/v1/chat/completions",
            headers=_h(world, name),
            json={"model": "scenario:ahr", "messages": [{"role": "user", "content": question["question"]}]},
        )
        assert secret not in r.text
    r = world.client.post("/api/ask", json=question, headers=_h(world, "owner_admin"))
    assert secret in r.text  # the admin's own grant holds restricted: the scenario keeps it
    end = sse_events(world.client.post("/api/ask", json=question, headers=_h(world, "owner_employee")).text)[
        -1
    ][1]
    assert end["scope"]["visibility"] == ["public", "internal"]  # the intersection, not the scenario's list


def test_finding2_record_ids_cannot_open_another_tenants_original(world: World) -> None:
    r = world.client.get("/api/kbs/shared/files/b_rec.jsonl", headers=_h(world, "owner_employee"))
    assert r.status_code == 404 and canary(B, "shared") not in r.text
    r = world.client.get("/api/kbs/shared/files/a_rec.jsonl", headers=_h(world, "owner_employee"))
    assert r.status_code == 200 and canary(A, "shared") in r.text
    assert r.headers["content-disposition"].startswith("attachment")
    kb = world.lore.catalog.get_kb("shared")
    ids = {
        c.document_id
        for c in world.lore.store(kb).get(
            [i for f in world.lore.catalog.list_files(kb.id) for i in world.lore.catalog.file_chunk_ids(f.id)]
        )
    }
    assert ids == {"acme:1", "bluefin:1"}  # the same `_id` of two tenants: two documents


def test_finding3_version_changes_need_rights_on_all_owners_content(world: World) -> None:
    lore, client = world.lore, world.client
    name = world.fresh_kb(A, shared=(B,))
    folder = lore.storage.path(uploads_key(lore.catalog.get_kb(name)))
    folder.mkdir(parents=True)
    for seq in (1, 2):
        (folder / "b.md").write_text(f"# B\n\nBluefin rule number {seq}.\n", encoding="utf-8")
        lore.build(name, [folder / "b.md"], activate=True, chunk_metadata=lambda _s: {"tenant_id": B})
    _, platform = lore.catalog.create_api_key(A, ["admin", "platform-admin"])
    for path in (f"/api/kbs/{name}/rollback", f"/api/kbs/{name}/versions/1/activate"):
        r = client.post(path, headers=auth(platform))
        assert r.status_code == 403 and "other tenants" in r.json()["detail"], r.text
    assert lore.catalog.active_version(lore.catalog.get_kb(name).id).seq == 2
    # an owner of all the content may, and the log names its key and tenant, not "api"
    mine = world.fresh_kb(A, upload="x.md", versioned=True)
    upload = lore.storage.path(uploads_key(lore.catalog.get_kb(mine))) / "x.md"
    upload.write_text("# X\n\nchanged\n", encoding="utf-8")
    lore.build(
        mine,
        [upload],
        activate=True,
        chunk_metadata=lambda _s: {"tenant_id": A},
    )
    key, secret = lore.catalog.create_api_key(A, ["admin"])
    r = client.post(f"/api/kbs/{mine}/rollback", headers=auth(secret), json={"reason": "bad answers"})
    assert r.status_code == 200, r.text
    log = client.get(f"/api/kbs/{mine}/versions", headers=auth(secret)).json()["activations"]
    assert log[-1]["actor"] == f"key:{key.id}@{A}"
    audit = client.get("/api/audit", headers=auth(secret), params={"kb": mine}).json()
    assert audit[0]["action"] == "rollback" and audit[0]["key_id"] == key.id and audit[0]["tenant"] == A


def test_finding4_an_empty_kb_belongs_to_its_creator(world: World) -> None:
    client = world.client
    assert (
        client.post("/api/kbs", json={"name": "empty-a"}, headers=_h(world, "owner_admin")).status_code == 201
    )
    r = client.post(
        "/api/kbs/empty-a/files",
        files={"file": ("p.md", b"# P\n\npending\n")},
        headers=_h(world, "owner_admin"),
    )
    assert r.status_code == 201
    for name in ("other_admin", "other_platform_admin"):
        h = _h(world, name)
        assert "empty-a" not in {kb["name"] for kb in client.get("/api/kbs", headers=h).json()}
        assert client.delete("/api/kbs/empty-a", headers=h).status_code == 404
        r = client.post("/api/kbs/empty-a/files", files={"file": ("q.md", b"# Q\n\ntakeover\n")}, headers=h)
        assert r.status_code == 404
    assert world.lore.catalog.get_kb("empty-a").owner_tenant == A
    record = world.lore.catalog.get_kb("empty-a")
    assert (world.lore.storage.path(uploads_key(record)) / "p.md").is_file()


def test_finding6_a_foreign_kb_answers_exactly_like_an_unknown_one(world: World) -> None:
    h = _h(world, "other_employee")
    requests = [
        ("post", "/api/search", {"kb": "{kb}", "query": "canary"}),
        ("post", "/api/ask", {"kb": "{kb}", "question": "canary?"}),
        ("post", "/v1/chat/completions", {"model": "{kb}", "messages": [{"role": "user", "content": "x"}]}),
        ("get", "/api/kbs/{kb}/files", None),
        ("get", "/api/kbs/{kb}", None),
        ("get", "/api/kbs/{kb}/versions", None),
    ]
    for method, path, body in requests:
        seen = []
        for kb in ("ka", "zz"):
            data = json.loads(json.dumps(body).replace("{kb}", kb)) if body else None
            r = world.client.request(method, path.replace("{kb}", kb), json=data, headers=h)
            seen.append((r.status_code, r.text.replace(kb, "NAME")))
        assert seen[0] == seen[1] and seen[0][0] == 404, (path, seen)


def test_finding7_a_trace_keeps_what_its_asker_was_allowed_to_see(world: World) -> None:
    trace_id, session_id = world.traces["mgr"]
    secret = canary(A, "manager")
    for name in ("owner_admin", "other_dataset"):  # admins without the manager role / of another dataset
        r = world.client.get(f"/api/traces/{trace_id}", headers=_h(world, name))
        assert r.status_code == 200 and secret not in r.text
        trace = r.json()
        assert trace["data"]["redacted"] and trace["data"]["end"]["citations"][0]["file"]  # metadata stays
        r = world.client.get(f"/api/sessions/{session_id}", headers=_h(world, name))
        assert r.status_code == 200 and secret not in r.text
    r = world.client.get(f"/api/traces/{trace_id}", headers=_h(world, "owner_manager"))
    assert secret in r.text and "redacted" not in r.json()["data"]


def test_finding8_scores_depend_only_on_what_the_caller_sees(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path / "home"))
    try:
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "a.md").write_text("# A\n\nOur zebra crossing rule: walk, do not run.\n", encoding="utf-8")
        for i in range(20):
            (folder / f"b{i}.md").write_text(
                f"# B{i}\n\nzebra zebra notes {i} about stripes.\n", encoding="utf-8"
            )
        scores = []
        for kb, files, tenant_of in (
            ("alone", [folder / "a.md"], {}),
            ("mixed", sorted(folder.iterdir()), {f"b{i}.md": B for i in range(20)}),
        ):
            lore.create_kb(kb)
            lore.ingest(kb, files, chunk_metadata=lambda s, t=tenant_of: {"tenant_id": t.get(s.name, A)})
            opts = SearchOptions(mode="bm25", top_k=5, filter=SearchFilter(tenant_ids=[A]))
            hits = lore.search(kb, "zebra crossing", opts)
            assert [h.chunk.file_path for h in hits] == ["a.md"]
            scores.append(hits[0].bm25_score)
        assert scores[0] == scores[1]  # B's twenty zebra documents do not move A's score
    finally:
        lore.close()


def test_finding11_no_leaks_in_errors_or_counts(world: World) -> None:
    r = world.client.post(
        "/api/ask", json={"scenario": "nosuch", "question": "x"}, headers=_h(world, "owner_admin")
    )
    detail = r.json()["detail"]
    assert r.status_code == 404 and detail == "scenario 'nosuch' not found"
    assert "ahr" not in detail and "/" not in detail
    for name, tenant in (("owner_employee", A), ("other_employee", B)):
        kb = world.client.get("/api/kbs/shared", headers=_h(world, name)).json()
        assert (kb["files"], kb["chunks"]) == (1, 1), (tenant, kb)  # its own record, not the sum of both
