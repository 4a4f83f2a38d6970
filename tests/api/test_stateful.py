"""Sequences, not single calls: a Hypothesis state machine drives a live `lore serve` with two tenants
(admin and staff keys each), shares, uploads, indexing, builds (staged, gate-failed, activated, rolled
back, killed), web crawls, keys revoked with streams open, file and KB deletes (API and the operator's
CLI), over KB names that differ only by case, spaces or Unicode form (version and web rules:
`stateful_builds`).

After every step: no 5xx, no call over its budget, no response holding a canary its caller may not read
(another tenant's, or one of a deleted KB, file or share), and every owner still lists its KBs. A bounded
run in `make test` (derandomized); `make fuzz-long` runs more sequences.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import LiveServer
from tests.api.stateful_builds import VersionRules
from tests.api.stateful_parts import HeldWorker, PageSite
from tests.api.stateful_world import TENANTS, KbModel, World, expect

SEQUENCES = int(os.environ.get("STATEFUL_SEQUENCES", "220"))
STEPS = int(os.environ.get("STATEFUL_STEPS", "12"))
NAMES = ("kb1", "kb2", "KB1")  # valid names; KB1 differs from kb1 only by case
# Near-misses of a name: a path that must never reach the KB it resembles.
VARIANTS = (" ", "%20", "%C2%A0", "\u0301")
FILES = ("minutes.md", "plan.md")
QUERIES = ("launch word team", "private note", "年假有几天")

tenants = st.sampled_from(TENANTS)
names = st.sampled_from(NAMES)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("stateful_home")
    site = PageSite()
    settings = load_settings(
        home=home,
        # streams re-check their key often, so a revoked key's stream ends soon (waited on, not timed)
        api={"rate_limit_per_minute": 0, "web_sources": [site.url + "/"], "stream_recheck_s": 0.2},
        worker={"poll_s": 0.05, "in_process": False},  # the test's HeldWorker runs the builds
        answer={"calibrate_on_build": False},  # a build here is about sequences, not thresholds
        gate={"min_files": 1000},  # a gated build always fails its gate
    )
    lore = Lore(settings)
    worker = HeldWorker(lore, settings.worker.poll_s)
    from lore.api import create_app

    with LiveServer(create_app(lore)) as server:
        yield World(lore, server.url, home, site, worker)
    worker.close()
    site.close()
    lore.close()


def _same(a: str, b: str) -> bool:
    return unicodedata.normalize("NFKC", a).casefold() == unicodedata.normalize("NFKC", b).casefold()


class Sequences(VersionRules, RuleBasedStateMachine):
    """The model: which KBs exist, who owns and shares them, whose files they hold."""

    world: World

    def __init__(self) -> None:
        super().__init__()
        self.w = self.world
        self.w.reset()
        self.w.counts.sequences += 1
        self.kbs: dict[str, KbModel] = {}

    def _step(self) -> None:
        self.w.counts.steps += 1

    def _name(self, data: st.DataObject) -> str:
        """Mostly a KB that exists (so sequences go deep), sometimes any name."""
        pool = sorted(self.kbs) if self.kbs and data.draw(st.integers(0, 4)) else list(NAMES)
        return str(data.draw(st.sampled_from(pool)))

    def _kb(self, name: str) -> KbModel | None:
        return self.kbs.get(name)

    def _sees(self, tenant: str, kb: KbModel | None) -> bool:
        return kb is not None and (kb.owner == tenant or tenant in kb.shared)

    @initialize()
    def two_tenants_each_with_a_kb(self) -> None:
        """Each sequence starts where the findings did: each tenant owns a KB with an indexed file."""
        for tenant, name in zip(TENANTS, ("kb1", "kb2"), strict=True):
            key = self.w.admin[tenant]
            expect(self.w.call(key, "POST", "/api/kbs", json={"name": name}).status_code == 201, name)
            upload, data = self.w.new_upload(tenant, FILES[0])
            r = self.w.call(key, "POST", f"/api/kbs/{name}/files", files={"file": (FILES[0], data)})
            expect(r.status_code == 201, f"upload: {r.status_code}")
            expect(self.w.call(key, "POST", f"/api/kbs/{name}/ingest", json={}).status_code == 200, "ingest")
            self.kbs[name] = kb = KbModel(name, tenant)
            kb.uploaded(upload)
            kb.ingested(tenant)

    # -- knowledge bases ---------------------------------------------------------------------------

    @rule(tenant=tenants, name=names)
    def create(self, tenant: str, name: str) -> None:
        self._step()
        r = self.w.call(self.w.admin[tenant], "POST", "/api/kbs", json={"name": name})
        taken = any(_same(name, other) for other in self.kbs)
        if taken:
            expect(r.status_code == 409, f"create {name!r} over an existing name: {r.status_code}")
            return
        expect(r.status_code == 201, f"create {name!r}: {r.status_code} {r.text[:200]}")
        self.kbs[name] = KbModel(name, tenant)

    @rule(tenant=tenants, data=st.data(), variant=st.sampled_from(VARIANTS))
    def delete_a_near_name(self, tenant: str, data: st.DataObject, variant: str) -> None:
        """A name that only looks like an existing one is 404 and deletes nothing."""
        self._step()
        name = self._name(data)
        r = self.w.call(self.w.admin[tenant], "DELETE", f"/api/kbs/{name}{variant}")
        expect(r.status_code in (404, 422), f"DELETE {name!r}+{variant!r}: {r.status_code} {r.text[:200]}")

    @rule(tenant=tenants, data=st.data())
    def delete(self, tenant: str, data: st.DataObject) -> None:
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        r = self.w.call(self.w.admin[tenant], "DELETE", f"/api/kbs/{name}")
        if kb is None or not self._sees(tenant, kb):
            expect(r.status_code == 404, f"delete unseen {name}: {r.status_code}")
        elif kb.owner != tenant:
            expect(r.status_code == 403, f"a sharee deletes {name}: {r.status_code}")
        else:
            expect(r.status_code == 204, f"the owner deletes {name}: {r.status_code} {r.text[:200]}")
            self._gone(name)

    @rule(data=st.data())
    def operator_deletes(self, data: st.DataObject) -> None:
        self._step()
        name = self._name(data)
        code, out = self.w.cli("kb", "delete", name, "--yes")
        if name in self.kbs:
            expect(code == 0, f"lore kb delete {name}: {code} {out[-300:]}")
            self._gone(name)
        else:
            expect(code != 0, f"lore kb delete of a missing {name} exited 0")

    def _gone(self, name: str) -> None:
        kb = self.kbs.pop(name)
        self.w.kill(kb.uploads + kb.pages)

    @rule(data=st.data(), other=tenants)
    def share(self, data: st.DataObject, other: str) -> None:
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        if kb is None or kb.owner == other:
            return
        r = self.w.call(self.w.admin[kb.owner], "POST", f"/api/kbs/{name}/shares", json={"tenant": other})
        expect(r.status_code == 201, f"share {name} with {other}: {r.status_code} {r.text[:200]}")
        kb.shared.add(other)

    @rule(data=st.data())
    def unshare(self, data: st.DataObject) -> None:
        """The owner can always stop sharing; the sharee's files in the KB go with the share."""
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        if kb is None or not kb.shared:
            return
        other = sorted(kb.shared)[0]
        r = self.w.call(self.w.admin[kb.owner], "DELETE", f"/api/kbs/{name}/shares/{other}")
        expect(r.status_code == 204, f"the owner unshares {name}: {r.status_code} {r.text[:200]}")
        kb.shared.discard(other)
        self.w.kill(kb.tenant_removed(other))

    # -- files -------------------------------------------------------------------------------------

    @rule(tenant=tenants, data=st.data(), file=st.sampled_from(FILES), staff=st.booleans())
    def upload(self, tenant: str, data: st.DataObject, file: str, staff: bool) -> None:
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        upload, data = self.w.new_upload(tenant, file)
        key = (self.w.staff if staff else self.w.admin)[tenant]
        r = self.w.call(key, "POST", f"/api/kbs/{name}/files", files={"file": (file, data)})
        if not self._sees(tenant, kb):
            expect(r.status_code == 404, f"upload to unseen {name}: {r.status_code}")
        elif staff:
            expect(r.status_code == 403, f"a staff key uploads: {r.status_code}")
        else:
            expect(r.status_code == 201, f"upload {file} to {name}: {r.status_code} {r.text[:200]}")
            assert kb is not None
            kb.uploaded(upload)  # a replaced upload's text stays indexed until indexed again
            return
        self.w.kill([upload])

    @rule(tenant=tenants, data=st.data())
    def index(self, tenant: str, data: st.DataObject) -> None:
        """Unversioned: ingest the tenant's uploads; versioned: build and activate a version."""
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        key = self.w.admin[tenant]
        if kb is None or not self._sees(tenant, kb):
            r = self.w.call(key, "POST", f"/api/kbs/{name}/ingest", json={})
            expect(r.status_code == 404, f"ingest into unseen {name}: {r.status_code}")
            return
        mine = [u for u in kb.uploads if u.tenant == tenant]
        if not kb.versioned:
            r = self.w.call(key, "POST", f"/api/kbs/{name}/ingest", json={})
            expect(r.status_code in (200, 400, 403), f"ingest {name}: {r.status_code} {r.text[:200]}")
            expect(r.status_code != 400 or not mine, f"ingest {name} with uploads: 400 {r.text[:200]}")
            if r.status_code == 200:
                kb.ingested(tenant)
            return
        r = self.w.call(key, "POST", f"/api/kbs/{name}/builds", json={"activate": True})
        expect(r.status_code in (202, 400, 403, 409), f"build {name}: {r.status_code} {r.text[:200]}")
        if r.status_code == 202:
            self.built(kb, tenant, self.w.wait_job(key, name, r.json()["job"]["id"]), "a build")

    @rule(data=st.data())
    def first_build(self, data: st.DataObject) -> None:
        """The owner makes the KB versioned: the build keeps what is indexed (nothing is dropped)."""
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        if kb is None or kb.versioned or kb.shared:
            return
        key = self.w.admin[kb.owner]
        before = self.w.call(key, "GET", f"/api/kbs/{name}").json()["files"]
        r = self.w.call(key, "POST", f"/api/kbs/{name}/builds", json={"activate": True})
        if r.status_code == 400:  # nothing uploaded yet
            return
        expect(r.status_code == 202, f"first build of {name}: {r.status_code} {r.text[:200]}")
        job = self.w.wait_job(key, name, r.json()["job"]["id"])
        expect(job["status"] == "succeeded", f"first build of {name}: {job}")
        expect(job["result"]["removed"] == [], f"the first build of {name} dropped files: {job['result']}")
        after = self.w.call(key, "GET", f"/api/kbs/{name}").json()["files"]
        expect(after >= before, f"{name}: {before} files before its first build, {after} after")
        self.built(kb, kb.owner, job, "the first build")
        self.w.counts.did("first build")
        self.check_active(kb)

    @rule(tenant=tenants, data=st.data(), file=st.sampled_from(FILES))
    def delete_file(self, tenant: str, data: st.DataObject, file: str) -> None:
        self._step()
        name = self._name(data)
        kb = self._kb(name)
        r = self.w.call(self.w.admin[tenant], "DELETE", f"/api/kbs/{name}/files/{file}")
        if not self._sees(tenant, kb):
            expect(r.status_code == 404, f"delete a file of unseen {name}: {r.status_code}")
            return
        assert kb is not None
        ok = r.status_code in (200, 204)
        expect(ok or r.status_code in (403, 404, 409), f"delete {file}: {r.status_code} {r.text[:200]}")
        if ok and not kb.versioned:  # unversioned: the upload and its indexed text go at once
            gone = [u for u in kb.uploads if (u.tenant, u.name) == (tenant, file)]
            self.w.kill(gone)
            kb.uploads = [u for u in kb.uploads if u not in gone]
        if ok:
            kb.file_deleted((tenant, file))

    # -- reading -----------------------------------------------------------------------------------

    @rule(tenant=tenants, data=st.data(), query=st.sampled_from(QUERIES), staff=st.booleans())
    def search(self, tenant: str, data: st.DataObject, query: str, staff: bool) -> None:
        self._step()
        name = self._name(data)
        key = (self.w.staff if staff else self.w.admin)[tenant]
        r = self.w.call(key, "POST", "/api/search", json={"kb": name, "query": query, "top_k": 10})
        seen = self._sees(tenant, self._kb(name))
        expect(r.status_code == (200 if seen else 404), f"search {name}: {r.status_code} {r.text[:200]}")

    @rule(tenant=tenants, data=st.data())
    def ask(self, tenant: str, data: st.DataObject) -> None:
        self._step()
        name = self._name(data)
        self.w.stream(self.w.admin[tenant], "/api/ask", {"kb": name, "question": "What is the launch word?"})

    @rule(tenant=tenants, data=st.data(), file=st.sampled_from(FILES))
    def read_files(self, tenant: str, data: st.DataObject, file: str) -> None:
        self._step()
        name = self._name(data)
        key = self.w.admin[tenant]
        r = self.w.call(key, "GET", f"/api/kbs/{name}/files")
        kb = self._kb(name)
        expect(r.status_code == (200 if self._sees(tenant, kb) else 404), f"files of {name}: {r.status_code}")
        for other in TENANTS:  # another tenant's name for the file too: never its content
            prefix = "" if other == tenant else f"{other}|"
            self.w.call(key, "GET", f"/api/kbs/{name}/files/{prefix}{file}")

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def owners_list_their_kbs(self) -> None:
        for tenant in TENANTS:
            r = self.w.call(self.w.staff[tenant], "GET", "/api/kbs")
            expect(r.status_code == 200, f"GET /api/kbs as {tenant}: {r.status_code}")
            listed = {kb["name"] for kb in r.json()}
            expected = {n for n, kb in self.kbs.items() if self._sees(tenant, kb)}
            expect(listed == expected, f"{tenant} lists {sorted(listed)}, the model {sorted(expected)}")


def test_no_sequence_breaks_an_invariant(world: World, tmp_path: Path) -> None:
    Sequences.world = world
    run_state_machine_as_test(
        Sequences,
        settings=settings(
            max_examples=SEQUENCES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=os.environ.get("STATEFUL_RANDOM") != "1",
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
    c = world.counts
    print(f"stateful: {c.steps} steps in {c.sequences} sequences, {c.calls} calls, statuses {c.statuses}")
    print(f"stateful: version and web steps {dict(sorted(c.done.items()))}")
    if SEQUENCES >= 200:  # the bounded run of `make test` is the floor
        assert c.sequences >= 200 and c.steps >= 2000, c
