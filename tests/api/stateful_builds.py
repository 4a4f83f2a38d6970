"""The stateful model's rules for versions and the web: staged and gate-failed builds beside an active
version, activate, rollback, a build "killed" in the ways the API offers (its client leaves the stream;
its KB is deleted while it is queued), crawls of a local site, and a key revoked with streams open.

Checked after each: the active version answers with its own files' text and nothing of a version not
active; a rollback serves the previous version's files; a killed build leaves nothing behind; a page one
tenant crawled is never readable by the other; a revoked key's socket and stream deliver nothing more.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from tests.api.stateful_streams import revoke_with_streams_open
from tests.api.stateful_world import TENANTS, KbModel, VersionModel, World, expect

tenants = st.sampled_from(TENANTS)
QUESTION = "What is the launch word?"


class VersionRules:
    """Rules mixed into the state machine (which provides `w`, `kbs`, `_step`, `_name`, `_gone`)."""

    w: World
    kbs: dict[str, KbModel]

    def _step(self) -> None: ...
    def _name(self, data: st.DataObject) -> str: ...
    def _gone(self, name: str) -> None: ...

    def _pick(self, data: st.DataObject, kbs: list[KbModel]) -> KbModel | None:
        return data.draw(st.sampled_from(sorted(kbs, key=lambda kb: kb.name))) if kbs else None

    def _buildable(self, data: st.DataObject, tenant: str | None = None) -> KbModel | None:
        """A KB whose owner can build it alone: unshared, the owner's uploads there, and either serving an
        active version or not versioned yet (the build makes it so)."""
        return self._pick(
            data,
            [
                kb
                for kb in self.kbs.values()
                if tenant in (None, kb.owner)
                and not kb.shared
                and any(k[0] == kb.owner for k in kb.current)
                and (kb.active is not None or not kb.versioned)
            ],
        )

    def built(self, kb: KbModel, tenant: str, job: dict[str, Any], what: str) -> None:
        """A build job of `tenant` finished: the model takes its version."""
        expect(job["status"] == "succeeded", f"{what} of {kb.name}: {job}")
        version = job["result"]["version"]
        kb.build_done(tenant, int(version["seq"]), str(version["status"]))
        self._job_hidden(kb, tenant, str(job["id"]))

    def _job_hidden(self, kb: KbModel, tenant: str, job_id: str) -> None:
        """The other tenant cannot follow the job: 404 unless it sees the KB (then at most its owner
        follows a sharee's job)."""
        other = next(t for t in TENANTS if t != tenant)
        r = self.w.call(self.w.admin[other], "GET", f"/api/kbs/{kb.name}/jobs/{job_id}")
        allowed = {404} if not kb.sees(other) else {403, 404} | ({200} if other == kb.owner else set())
        expect(r.status_code in allowed, f"{other} follows {tenant}'s job of {kb.name}: {r.status_code}")

    def check_active(self, kb: KbModel, aside: VersionModel | None = None) -> None:
        """The active version is the model's, each tenant finds its files' text in it, and no text only
        `aside` (a version not active) holds is served."""
        r = self.w.call(self.w.admin[kb.owner], "GET", f"/api/kbs/{kb.name}/versions")
        expect(r.status_code == 200, f"versions of {kb.name}: {r.status_code} {r.text[:200]}")
        expect(r.json()["active"] == kb.active, f"{kb.name}: active {r.json()['active']}, model {kb.active}")
        assert kb.active is not None
        served = kb.versions[kb.active].files
        for (tenant, name), canary in sorted(served.items()):
            if kb.sees(tenant):
                found = self.w.finds(tenant, kb.name, canary)
                expect(found, f"{kb.name} v{kb.active}: {tenant}'s {name} ({canary}) is not served")
        for (tenant, name), canary in sorted((aside.files if aside else {}).items()):
            if kb.sees(tenant) and canary not in served.values():
                found = self.w.finds(tenant, kb.name, canary)
                expect(not found, f"{kb.name} v{kb.active} serves {name} ({canary}) of a version not active")

    def _wait(self, key: str, kb: str, r: Any) -> dict[str, Any]:
        return self.w.wait_job(key, kb, str(r.json()["job"]["id"]))

    def _build(self, kb: KbModel, what: str, **body: Any) -> VersionModel:
        """The owner builds its uploads (202, a job that succeeds); returns the new version."""
        key = self.w.admin[kb.owner]
        r = self.w.call(key, "POST", f"/api/kbs/{kb.name}/builds", json=body)
        expect(r.status_code == 202, f"{what} of {kb.name}: {r.status_code} {r.text[:200]}")
        self.built(kb, kb.owner, self._wait(key, kb.name, r), what)
        return kb.versions[max(kb.versions)]

    def _serving(self, kb: KbModel) -> None:
        """Make a buildable KB serve a version (its first build), if it does not yet."""
        if kb.active is None:
            self._build(kb, "a first build", activate=True)
            self.w.counts.did("first build")

    def _changed(self, kb: KbModel) -> None:
        """The owner uploads one of its files again (new text) and builds and activates a version of it."""
        file = next(name for tenant, name in sorted(kb.current) if tenant == kb.owner)
        upload, text = self.w.new_upload(kb.owner, file)
        r = self.w.call(
            self.w.admin[kb.owner], "POST", f"/api/kbs/{kb.name}/files", files={"file": (file, text)}
        )
        expect(r.status_code == 201, f"upload {file} to {kb.name}: {r.status_code} {r.text[:200]}")
        kb.uploaded(upload)
        self._build(kb, "a build of a changed file", activate=True)

    # -- builds beside the active version -----------------------------------------------------------

    @rule(data=st.data(), gated=st.booleans())
    def build_aside(self, data: st.DataObject, gated: bool) -> None:
        """A build left staged, or one its gate fails (`gate.min_files` is out of reach here): the
        active version keeps answering, with none of the new build's text."""
        self._step()
        kb = self._buildable(data)
        if kb is None:
            return
        self._serving(kb)
        file = next(name for tenant, name in sorted(kb.current) if tenant == kb.owner)
        upload, text = self.w.new_upload(kb.owner, file)  # new text the active version must not serve
        r = self.w.call(
            self.w.admin[kb.owner], "POST", f"/api/kbs/{kb.name}/files", files={"file": (file, text)}
        )
        expect(r.status_code == 201, f"upload {file} to {kb.name}: {r.status_code} {r.text[:200]}")
        kb.uploaded(upload)
        latest = self._build(kb, "a build aside", activate=gated, quality_gate=gated)
        expect(latest.status == ("failed" if gated else "staged"), f"{kb.name}: a build aside is {latest}")
        self.check_active(kb, latest)
        self.w.counts.did("failed build" if gated else "staged build")

    @rule(data=st.data())
    def activate(self, data: st.DataObject) -> None:
        """The owner activates a version: a staged or retired one is served; a failed or active one is a
        4xx that changes nothing."""
        self._step()
        kb = self._pick(data, [k for k in self.kbs.values() if k.versions and not k.shared])
        if kb is None:
            return
        seq = data.draw(st.sampled_from(sorted(kb.versions)))
        before = kb.versions[kb.active] if kb.active is not None else None
        r = self.w.call(self.w.admin[kb.owner], "POST", f"/api/kbs/{kb.name}/versions/{seq}/activate")
        if kb.versions[seq].status in ("failed", "active"):
            expect(r.status_code in (400, 409), f"activate {kb.versions[seq].status} v{seq}: {r.status_code}")
        else:
            expect(r.status_code == 200, f"activate v{seq} of {kb.name}: {r.status_code} {r.text[:200]}")
            kb.activated(seq)
        self.w.counts.did(f"activate {'refused' if r.status_code != 200 else 'done'}")
        if kb.active is not None:
            self.check_active(kb, before)

    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        """The owner rolls back (after a new version of a changed file, if nothing was retired yet): the
        newest retired version older than the active one is served again, with its files and none of the
        newer one's; without one, a 4xx that changes nothing."""
        self._step()
        kb = self._buildable(data)
        if kb is None:
            return
        self._serving(kb)
        if kb.rollback_target() is None and data.draw(st.integers(0, 3)):
            self._changed(kb)
        target, before = kb.rollback_target(), kb.versions[kb.active or 0]
        r = self.w.call(self.w.admin[kb.owner], "POST", f"/api/kbs/{kb.name}/rollback")
        if target is None:
            expect(r.status_code in (400, 409), f"rollback of {kb.name} without a target: {r.status_code}")
        else:
            expect(r.status_code == 200, f"rollback of {kb.name}: {r.status_code} {r.text[:200]}")
            expect(r.json()["seq"] == target, f"rollback of {kb.name} to v{r.json()['seq']}, model v{target}")
            kb.activated(target)
        self.w.counts.did("rollback refused" if target is None else "rollback done")
        self.check_active(kb, before)

    # -- killing a build --------------------------------------------------------------------------------

    @rule(data=st.data(), delete=st.booleans())
    def kill_a_build(self, data: st.DataObject, delete: bool) -> None:
        """No route cancels a build; what the API offers: the client of `builds/stream` leaves (the build
        still finishes and is served), or the owner deletes the KB while the build is queued (the job is
        gone, and a KB re-created under the name holds no version of it)."""
        self._step()
        kb = self._buildable(data)
        if kb is None:
            return
        key = self.w.admin[kb.owner]
        headers = {"Authorization": f"Bearer {key}"}
        if not delete:
            path = f"/api/kbs/{kb.name}/builds/stream"
            with self.w.http.stream("POST", path, json={"activate": True}, headers=headers) as r:
                expect(r.status_code == 200, f"build stream of {kb.name}: {r.status_code}")
                job_id = r.headers["X-Lore-Job"]
                first = next(r.iter_lines())
                self.w.record(key, f"POST {path}", 200, first, 0.0)
            self.built(kb, kb.owner, self.w.wait_job(key, kb.name, job_id), "a build its client left")
            expect(kb.versions[max(kb.versions)].status == "active", f"{kb.name}: a left build is not active")
            self.check_active(kb)
            self.w.counts.did("build stream left")
            return
        with self.w.worker.held():
            r = self.w.call(key, "POST", f"/api/kbs/{kb.name}/builds", json={"activate": True})
            expect(r.status_code == 202, f"build {kb.name}: {r.status_code} {r.text[:200]}")
            job_id = str(r.json()["job"]["id"])
            gone = self.w.call(key, "DELETE", f"/api/kbs/{kb.name}")
            expect(gone.status_code == 204, f"delete {kb.name} with a build queued: {gone.status_code}")
            self._gone(kb.name)
            job = self.w.call(key, "GET", f"/api/kbs/{kb.name}/jobs/{job_id}")
            expect(job.status_code == 404, f"the job of deleted {kb.name}: {job.status_code}")
            again = self.w.call(key, "POST", "/api/kbs", json={"name": kb.name})
            expect(again.status_code == 201, f"re-create {kb.name}: {again.status_code} {again.text[:200]}")
            fresh = self.kbs[kb.name] = KbModel(kb.name, kb.owner)
            file = sorted(kb.current)[0][1]
            upload, text = self.w.new_upload(kb.owner, file)
            r = self.w.call(key, "POST", f"/api/kbs/{kb.name}/files", files={"file": (file, text)})
            expect(r.status_code == 201, f"upload to re-created {kb.name}: {r.status_code}")
            fresh.uploaded(upload)
        expect(self.w.worker.idle_twice(30.0), "the worker did not look for jobs again within 30 s")
        r = self.w.call(key, "GET", f"/api/kbs/{kb.name}/versions")
        expect(r.status_code == 200 and r.json()["versions"] == [], f"re-created {kb.name}: {r.text[:300]}")
        self.w.counts.did("KB deleted with its build queued")

    # -- the web -------------------------------------------------------------------------------------

    @rule(tenant=tenants, data=st.data())
    def crawl(self, tenant: str, data: st.DataObject) -> None:
        """A tenant crawls two pages of the local site into a KB: its own (or, shared, under its name);
        the other tenant never reads them. Either answer shape: the crawl's result, or a job to wait on."""
        self._step()
        name = self._name(data)
        kb = self.kbs.get(name)
        start, prefix, pages = self.w.new_pages(tenant, 2)
        key = self.w.admin[tenant]
        body = {"url": start, "prefix": prefix, "max_pages": 3}
        r = self.w.call(key, "POST", f"/api/kbs/{name}/sources", json=body)
        if kb is None or not kb.sees(tenant) or kb.versioned:
            self.w.kill(pages)
            want = 409 if kb is not None and kb.sees(tenant) else 404
            if r.status_code == 202 and want == 409:  # a crawl job refuses a versioned KB when it runs
                job = self._crawl_job(key, name, r)
                expect(job.get("error_status") == 409, f"crawl into versioned {name}: {job}")
                return
            expect(r.status_code == want, f"crawl into {name}: {r.status_code} (want {want}) {r.text[:200]}")
            return
        if r.status_code == 202:
            job = self._crawl_job(key, name, r)
            expect(job["status"] == "succeeded", f"crawl job into {name}: {job}")
            self._job_hidden(kb, tenant, str(job["id"]))
            result = job["result"]
        else:
            expect(r.status_code == 200, f"crawl into {name}: {r.status_code} {r.text[:300]}")
            result = r.json()
        expect(result["pages"] == len(pages), f"crawl into {name}: {result}")
        kb.pages += pages
        self.w.counts.did("crawl")
        kb.built.update({(tenant, p.name): p.canary for p in pages})
        expect(
            self.w.finds(tenant, name, pages[0].canary), f"{tenant} does not find its crawled page in {name}"
        )
        other = next(t for t in TENANTS if t != tenant)  # its response may hold none of the pages' canaries
        q = {"kb": name, "query": f"launch word of the {tenant} team", "top_k": 10}
        r = self.w.call(self.w.admin[other], "POST", "/api/search", json=q)
        want = 200 if kb.sees(other) else 404
        expect(r.status_code == want, f"{other} searches {name}: {r.status_code} (want {want})")

    def _crawl_job(self, key: str, kb: str, r: Any) -> dict[str, Any]:
        body = r.json()
        job_id = str(body["job"]["id"] if "job" in body else body["id"])
        return self.w.wait_job(key, kb, job_id, r.headers.get("Location"))

    # -- streams --------------------------------------------------------------------------------------

    @rule(tenant=tenants, data=st.data())
    def revoke_a_key_with_streams_open(self, tenant: str, data: st.DataObject) -> None:
        """A new admin key answers on a WebSocket and follows a queued build's events, then is revoked:
        nothing more reaches it, both end (4401; the 401 `error`); the build itself still runs."""
        self._step()
        question = {"kb": self._name(data), "question": QUESTION}
        kb = self._buildable(data, tenant)
        key = self.w.new_key(tenant, ["admin"])
        if kb is None:
            revoke_with_streams_open(self.w, tenant, key, question, None)
            self.w.counts.did("revoked: socket")
            return
        with self.w.worker.held():  # the build stays queued while the streams are open
            r = self.w.call(key[1], "POST", f"/api/kbs/{kb.name}/builds", json={"activate": True})
            expect(r.status_code == 202, f"build {kb.name}: {r.status_code} {r.text[:200]}")
            job_id = str(r.json()["job"]["id"])
            revoke_with_streams_open(self.w, tenant, key, question, (kb.name, job_id))
        admin = self.w.admin[tenant]
        self.built(kb, tenant, self.w.wait_job(admin, kb.name, job_id), "the build of a revoked key")
        self.check_active(kb)
        self.w.counts.did("revoked: socket and job stream")
