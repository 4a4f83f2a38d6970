"""The attack matrix: every route of the app, called as every kind of caller, against own, foreign, shared
and unknown resources. Each cell asserts the status the README's policy gives, and that no response body,
stream event or downloaded file holds a canary the caller may not read. A new route without an entry fails."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from lore.scenario.faq_edit import revision
from lore.storage.layout import uploads_key
from tests.api.matrix_admin import admin_entries
from tests.api.matrix_world import (
    CALLERS,
    OWNERS,
    SEES,
    WEB_SOURCE,
    A,
    B,
    Caller,
    World,
    body_text,
    canary,
    leaks,
    readable,
    world_fixture,  # noqa: F401 - the module's fixture `world`
)

Expect = Callable[[Caller], int | set[int]]


@dataclass
class Call:
    """One request of a route; `make` builds (path, json body, files) for a caller (fresh targets per
    cell)."""

    label: str
    make: Callable[[World, Caller], tuple[str, Any, Any]]
    expect: Expect
    method: str = "GET"


def _kb_read(kb: str) -> Expect:
    return lambda c: 200 if c.tenant in SEES[kb] else 404


def _kb_admin(sees: set[str], owners: set[str], ok: int | set[int], platform_ok: bool = False) -> Expect:
    def expect(c: Caller) -> int | set[int]:
        if c.tenant not in sees:
            return 404
        if not c.admin:
            return 403
        return ok if owners <= {c.tenant} or (platform_ok and c.platform) else 403

    return expect


def _fixed(path: str, body: Any = None, files: Any = None) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    return lambda _w, _c: (path, body, files)


def _fresh(
    owner: str,
    path: str,
    body: Any = None,
    upload: str | None = "x.md",
    shared: tuple[str, ...] = (),
    versioned: bool = False,
) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        kb = w.fresh_kb(owner, upload, shared, versioned)
        return path.format(kb=kb), body, None

    return make


def _fresh_mixed(path: str) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    """A throwaway KB of A shared with B, holding an upload of each (B's stored as `bluefin|y.md`)."""

    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        kb = w.fresh_kb(A, "x.md", (B,))
        key = uploads_key(w.lore.catalog.get_kb(kb))
        w.lore.storage.write_bytes(f"{key}/{B}|y.md", b"# B\n\nA harmless note.\n")
        w.lore.catalog.claim_files(w.lore.catalog.get_kb(kb).id, [f"{B}|y.md"], B)
        return path.format(kb=kb), None, None

    return make


def _owner_admin(sees: set[str], owner: str, ok: int) -> Expect:
    """The KB owner's admins may (whatever others hold in it); other admins who see it get 403."""
    return lambda c: 404 if c.tenant not in sees else ok if c.admin and c.tenant == owner else 403


def _file_expect(name: str) -> Expect:
    tenant = A if name.startswith("a_") else B
    kind = name.split("_", 1)[1].split(".")[0].replace("rec", "shared")
    return lambda c: 200 if canary(tenant, kind) in readable(c) else 404


def _trace_expect(w_owner: str) -> Expect:
    owner = next(x for x in CALLERS if x.name == w_owner)
    return lambda c: 200 if c.tenant == owner.tenant and (c.name == owner.name or c.admin) else 404


def _session_for(w: World, owner: str) -> str:
    c = next(x for x in CALLERS if x.name == owner)
    key = w.lore.catalog.authenticate(w.secrets[owner])
    assert key is not None
    return w.lore.catalog.create_session(c.tenant or "", "ka", key.id, title="throwaway").id


def _job(suffix: str = "") -> Callable[[World, Caller], tuple[str, Any, Any]]:
    """A build job queued by tenant A's admin on a throwaway KB; the caller then reads it."""

    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        kb = w.fresh_kb(A, "x.md")
        admin = next(x for x in CALLERS if x.name == "owner_admin")
        r = w.client.post(f"/api/kbs/{kb}/builds", json={}, headers=w.headers(admin))
        assert r.status_code == 202, r.text
        return f"/api/kbs/{kb}/jobs/{r.json()['job']['id']}{suffix}", None, None

    return make


def _crawl_job(by: str, shared: bool, suffix: str) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    """A crawl job (ended: the web source's port is closed) that `by` ran on a throwaway KB of A (shared with
    B, or not); the caller then reads it."""

    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        kb = w.fresh_kb(A, shared=(B,) if shared else ())
        crawler = next(x for x in CALLERS if x.name == by)
        body = {"url": WEB_SOURCE + "index.html"}
        r = w.client.post(f"/api/kbs/{kb}/sources?wait=true", json=body, headers=w.headers(crawler))
        assert r.status_code == 422, r.text
        return f"/api/kbs/{kb}/jobs/{r.headers['x-lore-job']}{suffix}", None, None

    return make


def _crawl_job_calls(suffix: str) -> list[Call]:
    """A crawl job is its tenant's admins' and the KB owner's admins': another tenant sharing the KB gets
    404, a non-admin 403."""

    def reader(tenant: str) -> Expect:
        return lambda c: 403 if not c.admin else 200 if c.tenant in (tenant, A) else 404

    return [
        Call("crawl-a", _crawl_job("owner_admin", False, suffix), _kb_admin({A}, {A}, 200)),
        Call("crawl-a-shared", _crawl_job("owner_admin", True, suffix), reader(A)),
        Call("crawl-b-shared", _crawl_job("other_platform_admin", True, suffix), reader(B)),
    ]


def _crawl_cancel_calls() -> list[Call]:
    """A crawl job is reached as when read, then refused (409): it has ended (its web source is closed)."""

    def refused(expect: Expect) -> Expect:
        return lambda c: 409 if expect(c) == 200 else expect(c)

    return [Call(c.label, c.make, refused(c.expect), "POST") for c in _crawl_job_calls("/cancel")]


def _passage(kb: str, name: str) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    """The first passage of one of the world's files, by chunk id."""

    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        record = w.lore.catalog.get_file(w.lore.catalog.get_kb(kb).id, name)
        assert record is not None, name
        return f"/api/kbs/{kb}/passages/{w.lore.catalog.file_chunk_ids(record.id)[0]}", None, None

    return make


def _faq_edit(path: str, row: dict[str, Any]) -> Callable[[World, Caller], tuple[str, Any, Any]]:
    """A FAQ edit of scenario `ahr` at the file's current revision."""

    def make(w: World, _c: Caller) -> tuple[str, Any, Any]:
        folder = w.lore.settings.scenario.scenarios_dir / "ahr"
        return path, {"revision": revision(folder / "faq.csv"), **row}, None

    return make


KBS = ("ka", "kb", "shared", "nokb")
FILES = [("ka", f"a_{k}.md") for k in ("public", "restricted", "manager", "ds2", "upload")] + [
    ("kb", "b_public.md"),
    ("kb", "b_upload.md"),
    ("shared", "a_rec.jsonl"),
    ("shared", "b_rec.jsonl"),
]
QUESTION = "What is the canary code?"
BOARD_QUESTION = "What is the canary code of the board minutes?"
EVAL_JSONL = '{"question": "What is the canary code?", "files": ["a_public.md"]}\n'


def _ask_expect(target: str) -> Expect:
    if target.startswith("scenario:"):
        sc = target.split(":", 1)[1]
        return lambda c: 200 if sc == "ahr" and c.tenant == A else 404
    return _kb_read(target)


def _ask_body(target: str, **extra: Any) -> dict[str, Any]:
    scenario = target.startswith("scenario:")
    return {
        "scenario" if scenario else "kb": target.split(":", 1)[-1],
        "question": BOARD_QUESTION if scenario else QUESTION,
        **extra,
    }


def entries() -> dict[tuple[str, str], list[Call]]:
    """The matrix: (method, path template) -> calls."""
    t = {k: v for k, v in (("mgr", "owner_manager"), ("adm", "owner_admin"), ("b", "other_employee"))}
    m: dict[tuple[str, str], list[Call]] = {
        ("GET", "/api/kbs"): [Call("list", _fixed("/api/kbs"), lambda c: 200)],
        ("POST", "/api/kbs"): [
            Call(
                "create",
                lambda w, c: ("/api/kbs", {"name": f"new{next(w.counter)}"}, None),
                lambda c: 201 if c.admin else 403,
                "POST",
            )
        ],
        ("GET", "/api/kbs/{kb}"): [Call(kb, _fixed(f"/api/kbs/{kb}"), _kb_read(kb)) for kb in KBS],
        ("DELETE", "/api/kbs/{kb}"): [
            Call("fresh-a", _fresh(A, "/api/kbs/{kb}"), _kb_admin({A}, {A}, 204), "DELETE"),
            Call("fresh-b", _fresh(B, "/api/kbs/{kb}"), _kb_admin({B}, {B}, 204), "DELETE"),
            Call("mixed", _fresh_mixed("/api/kbs/{kb}"), _owner_admin({A, B}, A, 204), "DELETE"),
        ],
        ("POST", "/api/kbs/{kb}/shares"): [
            Call(
                "fresh-a",
                _fresh(A, "/api/kbs/{kb}/shares", {"tenant": "zz"}),
                _kb_admin({A}, {A}, 201),
                "POST",
            ),
            Call(
                "shared",
                _fixed("/api/kbs/shared/shares", {"tenant": "zz"}),
                _owner_admin({A, B}, A, 201),  # its owner shares it whatever others hold in it
                "POST",
            ),
        ],
        ("DELETE", "/api/kbs/{kb}/shares/{tenant}"): [
            Call(
                "fresh-a",
                _fresh(A, "/api/kbs/{kb}/shares/zz", shared=("zz",)),
                _kb_admin({A}, {A}, 204),
                "DELETE",
            ),
            Call(
                "mixed",
                _fresh_mixed(f"/api/kbs/{{kb}}/shares/{B}"),
                _owner_admin({A, B}, A, 204),
                "DELETE",
            ),
        ],
        ("DELETE", "/api/kbs/{kb}/files/{name}"): [
            Call("own", _fresh(A, "/api/kbs/{kb}/files/x.md"), _kb_admin({A}, {A}, 200), "DELETE"),
            Call(  # B's file: B's admins delete it (named as B names it); A's admins cannot (409)
                "sharee's",
                _fresh_mixed(f"/api/kbs/{{kb}}/files/{B}|y.md"),
                lambda c: (
                    404 if c.tenant not in (A, B) else 403 if not c.admin else 200 if c.tenant == B else 409
                ),
                "DELETE",
            ),
        ],
        ("POST", "/api/kbs/{kb}/files"): [
            Call(
                kb,
                lambda w, c, kb=kb: (
                    f"/api/kbs/{kb}/files",
                    None,
                    {"file": (f"m{next(w.counter)}.md", b"# M\n\nharmless\n")},
                ),
                _kb_admin(SEES[kb], OWNERS[kb], 201, platform_ok=True),
                "POST",
            )
            for kb in KBS
        ],
        ("GET", "/api/kbs/{kb}/files"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/files"), _kb_read(kb)) for kb in KBS
        ],
        ("GET", "/api/kbs/{kb}/files/{name}"): [
            Call(f"{kb}/{n}", _fixed(f"/api/kbs/{kb}/files/{n}"), _file_expect(n)) for kb, n in FILES
        ],
        ("POST", "/api/kbs/{kb}/preview"): [
            Call(
                f"{kb}/{n}",
                _fixed(f"/api/kbs/{kb}/preview", {"file": n}),
                lambda c, kb=kb, n=n: (
                    _kb_admin(SEES[kb], OWNERS[kb], 200)(c)
                    if _kb_admin(SEES[kb], OWNERS[kb], 200)(c) != 200
                    else _file_expect(n)(c)
                ),
                "POST",
            )
            for kb, n in (("ka", "a_upload.md"), ("ka", "a_restricted.md"), ("kb", "b_upload.md"))
        ],
        ("POST", "/api/kbs/{kb}/ingest"): [
            Call("fresh-a", _fresh(A, "/api/kbs/{kb}/ingest", {}), _kb_admin({A}, {A}, 200), "POST"),
            Call(
                "shared",
                _fixed("/api/kbs/shared/ingest", {"files": ["a_rec.jsonl"]}),
                # acme owns it (409: a versioned KB changes through builds); bluefin's own a_rec.jsonl
                # does not exist: the name of acme's file is not confirmed to it
                lambda c: (
                    404
                    if c.tenant not in SEES["shared"]
                    else 403
                    if not c.platform
                    else 409
                    if c.tenant == A
                    else 404
                ),
                "POST",
            ),
        ],
        ("POST", "/api/kbs/{kb}/sources"): [  # allowed: the crawl job reaches nothing (closed port), 422
            Call(
                f"fresh-{x}",
                _fresh(o, "/api/kbs/{kb}/sources?wait=true", {"url": WEB_SOURCE + "index.html"}),
                _kb_admin({o}, {o}, 422),
                "POST",
            )
            for x, o in (("a", A), ("b", B))
        ],
        ("POST", "/api/kbs/{kb}/chunks"): [
            Call(
                "fresh-a",
                _fresh(A, "/api/kbs/{kb}/chunks", {"file": "x.md", "chunks": [{"text": "harmless"}]}),
                _kb_admin({A}, {A}, 200),
                "POST",
            )
        ],
        ("POST", "/api/kbs/{kb}/builds"): [
            Call("fresh-a", _fresh(A, "/api/kbs/{kb}/builds", {}), _kb_admin({A}, {A}, 202), "POST"),
            Call(
                "shared",
                _fixed("/api/kbs/shared/builds", {"files": ["a_rec.jsonl"]}),
                _kb_admin({A, B}, {A, B}, 200),
                "POST",
            ),
        ],
        ("POST", "/api/kbs/{kb}/builds/stream"): [
            Call("fresh-b", _fresh(B, "/api/kbs/{kb}/builds/stream", {}), _kb_admin({B}, {B}, 200), "POST")
        ],
        ("GET", "/api/kbs/{kb}/versions"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/versions"), _kb_read(kb)) for kb in KBS
        ],
        ("POST", "/api/kbs/{kb}/versions/{seq}/activate"): [  # version 1 is already active: 400 when allowed
            Call(
                kb, _fixed(f"/api/kbs/{kb}/versions/1/activate"), _kb_admin(SEES[kb], OWNERS[kb], 400), "POST"
            )
            for kb in KBS
        ],
        ("POST", "/api/kbs/{kb}/rollback"): [  # nothing older to roll back to: 400 when allowed
            Call(kb, _fixed(f"/api/kbs/{kb}/rollback"), _kb_admin(SEES[kb], OWNERS[kb], {400, 409}), "POST")
            for kb in KBS
        ],
        ("GET", "/api/kbs/{kb}/versions/{seq}/report"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/versions/1/report"), _kb_admin(SEES[kb], OWNERS[kb], 200))
            for kb in ("ka", "kb", "nokb")
        ],
        ("GET", "/api/kbs/{kb}/diff"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/diff?base=1&candidate=1"), _kb_admin(SEES[kb], OWNERS[kb], 200))
            for kb in ("ka", "kb", "nokb")
        ],
        ("POST", "/api/kbs/{kb}/diff"): [
            Call(
                kb,
                _fixed(f"/api/kbs/{kb}/diff", {"base": 1, "candidate": 1, "eval_jsonl": EVAL_JSONL}),
                _kb_admin(SEES[kb], OWNERS[kb], 200),
                "POST",
            )
            for kb in ("ka", "kb", "nokb")
        ],
        ("GET", "/api/kbs/{kb}/eval-sets"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/eval-sets"), _kb_admin(SEES[kb], OWNERS[kb], 200))
            for kb in ("ka", "kb", "nokb")
        ],
        ("POST", "/api/search"): [
            *(
                Call(
                    kb,
                    _fixed("/api/search", {"kb": kb, "query": QUESTION, "top_k": 50}),
                    _kb_read(kb),
                    "POST",
                )
                for kb in KBS
            ),
            Call(
                "ka@1",
                _fixed("/api/search", {"kb": "ka", "query": QUESTION, "version": 1}),
                lambda c: 404 if c.tenant != A else 200 if c.admin else 403,
                "POST",
            ),
        ],
        ("POST", "/api/ask"): [
            Call(x, _fixed("/api/ask", _ask_body(x, new_session=False)), _ask_expect(x), "POST")
            for x in ("ka", "kb", "shared", "nokb", "scenario:ahr", "scenario:nosc")
        ],
        ("WS", "/api/stream"): [
            Call(x, _fixed("/api/stream", _ask_body(x, new_session=False)), _ask_expect(x))
            for x in ("ka", "scenario:ahr")
        ],
        ("POST", "/api/feedback"): [
            *(
                Call(
                    f"trace-{label}",
                    lambda w, c, label=label: (
                        "/api/feedback",
                        {"trace_id": w.traces[label][0], "rating": -1},
                        None,
                    ),
                    lambda c, owner=owner: {200: 201}.get(x := _trace_expect(owner)(c), x),
                    "POST",
                )
                for label, owner in t.items()
            ),
            Call("nope", _fixed("/api/feedback", {"trace_id": "nope", "rating": 1}), lambda c: 404, "POST"),
        ],
        ("GET", "/api/feedback"): [
            Call("tenant", _fixed("/api/feedback"), lambda c: 200 if c.admin else 403)
        ],
        ("GET", "/api/feedback/export"): [
            Call("tenant", _fixed("/api/feedback/export"), lambda c: 200 if c.admin else 403)
        ],
        ("GET", "/api/kbs/{kb}/documents"): [
            Call(kb, _fixed(f"/api/kbs/{kb}/documents"), _kb_read(kb)) for kb in KBS
        ],
        ("GET", "/api/kbs/{kb}/documents/{name:path}/chunks"): [
            Call(f"{kb}/{n}", _fixed(f"/api/kbs/{kb}/documents/{n}/chunks"), _file_expect(n))
            for kb, n in FILES
            if "upload" not in n
        ],
        ("PUT", "/api/kbs/{kb}/documents/{name:path}/chunks/{index}"): [
            Call(  # dataset "default": a key limited to ds2 does not see the file
                "fresh-a",
                _fresh(A, "/api/kbs/{kb}/documents/x.md/chunks/0", {"off": True}, versioned=True),
                lambda c: 404 if c.tenant != A else 403 if not c.admin else 404 if c.datasets else 200,
                "PUT",
            )
        ],
        ("GET", "/api/kbs/{kb}/documents/{name:path}/pages/{page}"): [  # none is a PDF: 404 for everyone
            *(
                Call(f"{kb}/{n}", _fixed(f"/api/kbs/{kb}/documents/{n}/pages/1"), lambda c: 404)
                for kb, n in FILES
                if "upload" not in n
            ),
            *(  # with a cited passage: whatever the chunk, never more than the page
                Call(f"{kb}/{n}?chunk", _fixed(f"/api/kbs/{kb}/documents/{n}/pages/1?chunk=x"), lambda c: 404)
                for kb, n in FILES
                if "upload" not in n
            ),
        ],
        ("PUT", "/api/kbs/{kb}/documents/{name:path}/pages/{page}/review"): [
            Call(  # an admin of the owner tenant reaches the file check: x.md is no OCR'd PDF
                "fresh-a",
                _fresh(A, "/api/kbs/{kb}/documents/x.md/pages/1/review", {}),
                lambda c: 404 if c.tenant != A else 403 if not c.admin else 404,
                "PUT",
            )
        ],
        ("GET", "/api/keys"): [Call("tenant", _fixed("/api/keys"), lambda c: 200 if c.platform else 403)],
        ("POST", "/api/keys"): [
            Call(
                "tenant",
                _fixed("/api/keys", {"roles": ["employee"]}),
                lambda c: 201 if c.platform else 403,
                "POST",
            ),
            Call(
                "unknown-role",
                _fixed("/api/keys", {"roles": ["superuser"]}),
                lambda c: 422 if c.platform else 403,
                "POST",
            ),
        ],
        ("GET", "/api/me"): [Call("own-key", _fixed("/api/me"), lambda c: 200)],
        ("DELETE", "/api/keys/{key_id}"): [
            Call(
                f"fresh-{t}",
                lambda w, c, t=t: (f"/api/keys/{w.lore.catalog.create_api_key(t, [])[0].id}", None, None),
                lambda c, t=t: 403 if not c.platform else 204 if c.tenant == t else 404,
                "DELETE",
            )
            for t in (A, B)
        ],
        ("GET", "/api/sessions"): [Call("list", _fixed("/api/sessions"), lambda c: 200)],
        ("GET", "/api/sessions/{session_id}"): [
            *(
                Call(
                    f"session-{label}",
                    lambda w, c, label=label: (f"/api/sessions/{w.traces[label][1]}", None, None),
                    _trace_expect(owner),
                )
                for label, owner in t.items()
            ),
            Call("nope", _fixed("/api/sessions/nope"), lambda c: 404),
        ],
        ("DELETE", "/api/sessions/{session_id}"): [
            Call(
                "fresh",
                lambda w, c: (f"/api/sessions/{_session_for(w, 'owner_employee')}", None, None),
                lambda c: {200: 204}.get(x := _trace_expect("owner_employee")(c), x),
                "DELETE",
            )
        ],
        ("GET", "/api/traces"): [Call("list", _fixed("/api/traces"), lambda c: 200)],
        ("GET", "/api/traces/{trace_id}"): [
            *(
                Call(
                    f"trace-{label}",
                    lambda w, c, label=label: (f"/api/traces/{w.traces[label][0]}", None, None),
                    _trace_expect(owner),
                )
                for label, owner in t.items()
            ),
            Call("nope", _fixed("/api/traces/nope"), lambda c: 404),
        ],
        ("POST", "/v1/chat/completions"): [
            Call(
                x,
                _fixed(
                    "/v1/chat/completions",
                    {"model": x, "messages": [{"role": "user", "content": _ask_body(x)["question"]}]},
                ),
                _ask_expect(x),
                "POST",
            )
            for x in ("ka", "kb", "shared", "nokb", "scenario:ahr", "scenario:nosc")
        ],
        ("GET", "/v1/models"): [Call("list", _fixed("/v1/models"), lambda c: 200)],
        ("GET", "/api/scenarios"): [Call("list", _fixed("/api/scenarios"), lambda c: 200)],
        ("GET", "/api/scenarios/{scenario_id}"): [
            Call(x, _fixed(f"/api/scenarios/{x}"), _ask_expect(f"scenario:{x}")) for x in ("ahr", "nosc")
        ],
        ("GET", "/api/scenarios/{scenario_id}/faq"): [
            Call(x, _fixed(f"/api/scenarios/{x}/faq"), _ask_expect(f"scenario:{x}")) for x in ("ahr", "nosc")
        ],
        ("POST", "/api/scenarios/{scenario_id}/faq"): [
            Call(
                "ahr-add",
                _faq_edit("/api/scenarios/ahr/faq", {"question": "Where is parking?", "answer": "Harmless."}),
                lambda c: 404 if c.tenant != A else 201 if c.admin and c.datasets is None else 403,
                "POST",
            )
        ],
        ("PUT", "/api/scenarios/{scenario_id}/faq/{index}"): [
            Call(  # the row everyone of tenant A reads (dataset main): only its admins change it
                "ahr-row0",
                _faq_edit("/api/scenarios/ahr/faq/0", {"disabled": False}),
                lambda c: 404 if c.tenant != A else (404 if c.datasets else 200) if c.admin else 403,
                "PUT",
            ),
            Call(  # the managers' row: an admin without the manager role does not see it
                "ahr-row1",
                _faq_edit("/api/scenarios/ahr/faq/1", {"disabled": False}),
                lambda c: (
                    404 if c.tenant != A else (200 if "manager" in c.roles else 404) if c.admin else 403
                ),
                "PUT",
            ),
        ],
        ("POST", "/api/scenarios/{scenario_id}/route"): [
            Call(
                x,
                _fixed(f"/api/scenarios/{x}/route", {"question": "hello"}),
                _ask_expect(f"scenario:{x}"),
                "POST",
            )
            for x in ("ahr", "nosc")
        ],
        ("GET", "/api/audit"): [Call("tenant", _fixed("/api/audit"), lambda c: 200 if c.admin else 403)],
        ("GET", "/api/kbs/{kb}/jobs/{job_id}"): [
            Call("job-a", _job(), _kb_admin({A}, {A}, 200)),
            *_crawl_job_calls(""),
        ],
        ("GET", "/api/kbs/{kb}/jobs/{job_id}/events"): [
            Call("job-a", _job("/events"), _kb_admin({A}, {A}, 200)),
            *_crawl_job_calls("/events"),
        ],
        ("POST", "/api/kbs/{kb}/jobs/{job_id}/cancel"): [  # the in-process worker may have finished it: 409
            Call("job-a", _job("/cancel"), _kb_admin({A}, {A}, {200, 409}), "POST"),
            *_crawl_cancel_calls(),
        ],
        ("GET", "/api/kbs/{kb}/passages/{chunk_id}"): [
            Call(f"{kb}/{n}", _passage(kb, n), _file_expect(n)) for kb, n in FILES if "upload" not in n
        ],
        ("GET", "/api/kbs/{kb}/document"): [
            Call(f"{kb}/{n}", _fixed(f"/api/kbs/{kb}/document?file={n}"), _file_expect(n))
            for kb, n in FILES
            if "upload" not in n
        ],
    }
    public = {
        ("GET", "/api/health"): "/api/health",
        ("GET", "/openapi.json"): "/openapi.json",
        ("GET", "/docs"): "/docs",
        ("GET", "/docs/oauth2-redirect"): "/docs/oauth2-redirect",
        ("GET", "/redoc"): "/redoc",
        ("MOUNT", ""): "/",
        ("GET", "/api/ready"): "/api/ready",
        ("GET", "/metrics"): "/metrics",
    }
    for key, path in public.items():
        m[key] = [Call("public", _fixed(path), lambda c: 200)]
    m.update(admin_entries(Call, _fixed, _kb_admin, FILES, KBS))
    return m


PUBLIC = {
    "/api/health",
    "/openapi.json",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
    "",
    "/api/ready",
    "/metrics",
}


def app_routes(app: Any) -> set[tuple[str, str]]:
    """(method, path) of every route of the app; WebSocket routes are "WS", mounts "MOUNT"."""
    out: set[tuple[str, str]] = set()

    def walk(routes: list[Any]) -> None:
        for r in routes:
            if hasattr(r, "original_router"):
                walk(r.original_router.routes)
            elif type(r).__name__ == "Mount":
                out.add(("MOUNT", r.path))
            elif type(r).__name__.endswith("WebSocketRoute"):
                out.add(("WS", r.path))
            else:
                out.update((m, r.path) for m in r.methods - {"HEAD"})

    walk(app.routes)
    return out


def _call(w: World, c: Caller, method: str, path: str, body: Any, files: Any) -> tuple[int, str]:
    if method == "WS":
        try:
            with w.client.websocket_connect(path, headers=w.headers(c)) as ws:
                ws.send_json(body)
                texts = []
                while True:
                    event = ws.receive_json()
                    texts.append(str(event))
                    if event["event"] in ("end", "error"):
                        status = event["data"].get("status", 200)
                        return status, "\n".join(texts)
        except WebSocketDenialResponse as exc:  # a refused handshake: its HTTP status and body
            return exc.status_code, exc.content.decode("utf-8", "replace")
        except WebSocketDisconnect as exc:
            return exc.code - 4000, str(exc.reason)
    r = w.client.request(method, path, json=body, files=files, headers=w.headers(c))
    return r.status_code, body_text(r)


def test_every_route_has_a_matrix_entry(world: World) -> None:
    missing = app_routes(world.client.app) - set(entries())
    assert not missing, f"routes without an attack-matrix entry: {sorted(missing)}"


def matrix_part(part: int, parts: int = 2) -> list[tuple[str, str]]:
    """Every `parts`-th route of the matrix from the `part`-th: each part is a test file of its own (a world
    of its own), so xdist runs the parts side by side; together they are every route."""
    return list(entries())[part::parts]


def route_id(route: tuple[str, str]) -> str:
    return f"{route[0]} {route[1] or '/'}"


def check_route(world: World, route: tuple[str, str]) -> None:
    """Every call of one route as every caller: the status the policy gives, and no canary leaked."""
    method, template = route
    cells, failures = 0, []
    for call in entries()[route]:
        for c in CALLERS:
            path, body, files = call.make(world, c)
            expected = call.expect(c)
            if template not in PUBLIC and not c.authed:
                expected = 401
            verb = call.method if method not in ("WS", "MOUNT") else ("WS" if method == "WS" else "GET")
            status, text = _call(world, c, verb, path, body, files)
            cells += 1
            ok = status in expected if isinstance(expected, set) else status == expected
            if not ok:
                failures.append(
                    f"{method} {template} [{call.label}] as {c.name}: {status}, expected {expected}: "
                    f"{text[:160]}"
                )
            if bad := leaks(text, c):
                failures.append(f"{method} {template} [{call.label}] as {c.name}: LEAKS {sorted(bad)}")
    print(f"\nattack matrix, {route_id(route)}: {cells} cells, {len(CALLERS)} callers")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("route", matrix_part(0), ids=route_id)
def test_attack_matrix(world: World, route: tuple[str, str]) -> None:
    check_route(world, route)


def test_search_finds_everything_the_caller_may_read(world: World) -> None:
    """The other side of the matrix: the policy is not stricter than the rules (every readable canary of a
    KB comes back from a search of it)."""
    for c in CALLERS:
        if not c.authed:
            continue
        for kb in ("ka", "kb", "shared"):
            if c.tenant not in SEES[kb]:
                continue
            r = world.client.post(
                "/api/search", json={"kb": kb, "query": QUESTION, "top_k": 50}, headers=world.headers(c)
            )
            found = {x for x in readable(c) if x in r.text}
            expected = {x for x in readable(c) if _in_kb(x, kb)}
            assert found == expected, (c.name, kb, found, expected)


def _in_kb(token: str, kb: str) -> bool:
    if kb == "shared":
        return token.endswith("SHAREDQ")
    letter = token[2]
    return ((kb == "ka" and letter == "A") or (kb == "kb" and letter == "B")) and not any(
        token.endswith(s) for s in ("SHAREDQ", "UPLOADQ", "FAQQ", "FAQMGRQ", "SCNRESTRICTEDQ")
    )


def test_matrix_world_is_what_it_claims() -> None:
    assert {c.name for c in CALLERS} >= {
        "owner_admin",
        "owner_employee",
        "other_admin",
        "other_platform_admin",
        "other_employee",
        "no_role",
        "other_dataset",
        "revoked",
        "no_key",
    }
    assert canary(A, "restricted") in readable(CALLERS[0]) and canary(A, "restricted") not in readable(
        CALLERS[1]
    )
    assert canary(B, "public") not in readable(CALLERS[0])
