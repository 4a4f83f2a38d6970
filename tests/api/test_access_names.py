"""Foreign looks like absent, for names: creating a KB whose name another tenant holds, and uploading into a
shared KB a file name another tenant holds, tell the caller nothing of the other tenant (issue 12, on every
catalog database)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import auth

A, B = "acme", "bluefin"
A_TEXT = b"# Salaries\n\nQXNAMEACMEQ: the acme salary table.\n"


@dataclass
class World:
    lore: Lore
    client: TestClient
    keys: dict[str, str]

    def h(self, key: str) -> dict[str, str]:
        return auth(self.keys[key])


@pytest.fixture(scope="module")
def world(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """acme owns `acme-kb` and `shared` (shared with bluefin; acme uploaded `salaries.md` to it); bluefin owns
    `bluefin-kb`."""
    home = tmp_path_factory.mktemp("names")
    lore = Lore(load_settings(home=home, catalog_url=module_db_url, api={"rate_limit_per_minute": 0}))
    lore.create_kb("acme-kb", owner_tenant=A)
    lore.create_kb("bluefin-kb", owner_tenant=B)
    shared = lore.create_kb("shared", owner_tenant=A)
    lore.catalog.share_kb(shared.id, B)
    keys = {
        "a_admin": lore.catalog.create_api_key(A, ["admin", "platform-admin"])[1],
        "a_staff": lore.catalog.create_api_key(A, ["staff"])[1],
        "b_admin": lore.catalog.create_api_key(B, ["admin"])[1],
        "b_platform": lore.catalog.create_api_key(B, ["admin", "platform-admin"])[1],
    }
    with TestClient(create_app(lore, run_preflight=False)) as client:
        w = World(lore, client, keys)
        r = client.post(
            "/api/kbs/shared/files", files={"file": ("salaries.md", A_TEXT)}, headers=w.h("a_admin")
        )
        assert r.status_code == 201, r.text
        yield w
    lore.close()


def test_a_taken_kb_name_is_refused_alike_whoever_holds_it(world: World) -> None:
    """A KB name is global; creating one that exists gets one refusal, whether the caller's own tenant or
    another holds it (and the other tenant's KB stays a 404 to the caller)."""
    c = world.client

    def create(name: str) -> tuple[int, str]:
        r = c.post("/api/kbs", json={"name": name}, headers=world.h("b_admin"))
        return r.status_code, r.json()["detail"].replace(name, "NAME")

    assert create("acme-kb") == create("bluefin-kb") == (409, create("bluefin-kb")[1])
    assert "NAME" in create("acme-kb")[1] and "exist" not in create("acme-kb")[1]
    assert c.get("/api/kbs/acme-kb", headers=world.h("b_admin")).status_code == 404
    assert world.lore.catalog.get_kb("acme-kb").owner_tenant == A  # untouched


def test_a_file_name_another_tenant_holds_is_the_uploaders_own_file(world: World) -> None:
    """In a shared KB files are keyed by (KB, path, tenant): bluefin's upload of the name acme uses
    succeeds as bluefin's own file, answered exactly like a name nobody uses; acme's file is untouched
    and unseen."""
    c, hb = world.client, world.h("b_platform")

    def upload(name: str, body: bytes) -> tuple[int, object]:
        r = c.post("/api/kbs/shared/files", files={"file": (name, body)}, headers=hb)
        return r.status_code, [{**f, "name": f["name"].replace(name, "NAME")} for f in r.json()["files"]]

    taken = upload("salaries.md", b"# B\n\nbluefin pay.\n")
    free = upload("fresh.md", b"# B\n\nbluefin pay.\n")
    assert taken == free == (201, [{"name": "bluefin|NAME", "size": 18}])
    # each tenant reads its own file under the same name; acme's text never reaches bluefin
    r = c.get("/api/kbs/shared/files/salaries.md", headers=hb)
    assert r.status_code == 200 and r.content == b"# B\n\nbluefin pay.\n"
    r = c.get("/api/kbs/shared/files/salaries.md", headers=world.h("a_admin"))
    assert r.status_code == 200 and r.content == A_TEXT
    listed = c.get("/api/kbs/shared/files", headers=hb).json()
    assert {u["name"] for u in listed["uploads"]} == {"bluefin|salaries.md", "bluefin|fresh.md"}
    assert (
        "QXNAMEACMEQ" not in c.post("/api/kbs/shared/preview", json={"file": "salaries.md"}, headers=hb).text
    )
    # bluefin's "every upload" ingest takes its own files only: nothing of acme's is named or touched
    r = c.post("/api/kbs/shared/ingest", json={}, headers=hb)
    assert r.status_code == 200, r.text
    assert {f["name"] for f in r.json()["files"]} == {"bluefin|salaries.md", "bluefin|fresh.md"}
    assert "QXNAMEACMEQ" not in r.text
    r = c.post("/api/search", json={"kb": "shared", "query": "salary table pay"}, headers=hb)
    assert r.status_code == 200 and "QXNAMEACMEQ" not in r.text
    assert world.lore.catalog.file_owners(world.lore.catalog.get_kb("shared").id) == {
        "salaries.md": A,
        "bluefin|salaries.md": B,
        "bluefin|fresh.md": B,
    }
    # names cannot forge another tenant's prefix ('|' is refused in uploaded names)
    r = c.post("/api/kbs/shared/files", files={"file": ("acme|x.md", b"x")}, headers=hb)
    assert r.status_code == 400
    r = c.get("/api/kbs/shared/files/bluefin|salaries.md", headers=world.h("a_staff"))
    assert r.status_code == 400


def test_the_owner_keeps_plain_names(world: World) -> None:
    r = world.client.post(
        "/api/kbs/shared/files", files={"file": ("plain.md", b"# A\n\nacme.\n")}, headers=world.h("a_admin")
    )
    assert r.status_code == 201 and r.json()["files"][0]["name"] == "plain.md"
