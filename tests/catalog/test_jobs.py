"""Build jobs and the leased build lock on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, update

from lore.catalog import BuildLockedError, Catalog, JobStatus, KnowledgeBase
from lore.catalog.job_records import JobRow
from lore.catalog.models import BuildLockRow
from lore.errors import ConflictError, NotFoundError
from tests.catalog.rows import KB
from tests.conftest import migrated


@pytest.fixture
def catalog(db_url: str) -> Iterator[Catalog]:
    with Catalog(migrated(db_url)) as cat:
        yield cat


@pytest.fixture
def kb(catalog: Catalog) -> KnowledgeBase:
    return catalog.create_kb("docs", **KB)  # type: ignore[arg-type]


def _foreign_lock(catalog: Catalog, kb_id: str, lease_left_s: float | None) -> None:
    """A lock row held by a builder on another machine, its lease running out in `lease_left_s`."""
    now = datetime.now(UTC)
    with catalog.transaction() as s:
        s.execute(
            insert(BuildLockRow).values(
                kb_id=kb_id,
                host="builder-on-another-host",
                pid=4242,
                acquired_at=now - timedelta(minutes=5),
                token=None if lease_left_s is None else "f" * 32,
                lease_expires_at=None if lease_left_s is None else now + timedelta(seconds=lease_left_s),
            )
        )


def test_live_lease_refuses_with_409_and_expired_lease_is_taken_over(
    catalog: Catalog, kb: KnowledgeBase
) -> None:
    _foreign_lock(catalog, kb.id, 30)
    with pytest.raises(BuildLockedError, match="builder-on-another-host, pid 4242.*lease until") as info:
        catalog.acquire_build_lock(kb.id, kb.name)
    assert isinstance(info.value, ConflictError)  # the API answers 409
    with catalog.transaction() as s:  # the other builder stops heartbeating; its lease runs out
        s.execute(update(BuildLockRow).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    mine = catalog.acquire_build_lock(kb.id, kb.name, lease_s=5)
    holder = catalog.build_lock_holder(kb.id)
    assert holder is not None and (holder.token, holder.pid) == (mine.token, mine.pid)
    assert holder.lease_expires_at is not None and not holder.lease_expired()
    assert catalog.release_build_lock(kb.id, mine) is True and catalog.build_lock_holder(kb.id) is None


def test_lease_renewal_and_release_only_by_the_holder(catalog: Catalog, kb: KnowledgeBase) -> None:
    lock = catalog.acquire_build_lock(kb.id, kb.name, lease_s=2)
    first = catalog.build_lock_holder(kb.id)
    assert first is not None and first.lease_expires_at is not None
    assert catalog.renew_build_lock(lock, lease_s=60)
    renewed = catalog.build_lock_holder(kb.id)
    assert renewed is not None and renewed.lease_expires_at > first.lease_expires_at + timedelta(seconds=50)
    with catalog.transaction() as s:  # the lease lapsed and another builder took over
        s.execute(update(BuildLockRow).values(token="e" * 32))
    assert not catalog.renew_build_lock(lock)  # we learn that we lost it
    assert not catalog.release_build_lock(kb.id, lock)  # and cannot release the new holder's lock
    assert catalog.build_lock_holder(kb.id) is not None


def test_lock_without_lease_needs_unlock(catalog: Catalog, kb: KnowledgeBase) -> None:
    """A lock taken before leases existed (NULL lease) never expires by itself."""
    _foreign_lock(catalog, kb.id, None)
    with pytest.raises(BuildLockedError, match="lore unlock --kb docs"):
        catalog.acquire_build_lock(kb.id, kb.name)


def test_jobs_queue_claim_finish(catalog: Catalog, kb: KnowledgeBase) -> None:
    job = catalog.enqueue_job("build", kb.id, {"kb": "docs", "inputs": ["a.md"]}, kb_name="docs")
    assert job.status == JobStatus.QUEUED and not job.done
    with pytest.raises(BuildLockedError, match=f"already has a build job queued \\(job {job.id}\\)"):
        catalog.enqueue_job("build", kb.id, {}, kb_name="docs")
    claimed = catalog.claim_job("w1")
    assert claimed is not None and (claimed.id, claimed.status, claimed.worker) == (
        job.id,
        JobStatus.RUNNING,
        "w1",
    )
    assert catalog.claim_job("w2") is None
    assert catalog.heartbeat_job(job.id, "w1") and not catalog.heartbeat_job(job.id, "w2")
    catalog.add_job_event(job.id, {"event": "status", "data": {"stage": "file", "file": "a.md"}})
    done = catalog.finish_job(job.id, result={"version": {"seq": 1}})
    assert done.status == JobStatus.SUCCEEDED and done.result == {"version": {"seq": 1}} and done.done
    events = catalog.job_events(job.id)
    assert [e["event"] for _, e in events] == ["status", "end"] and events[-1][1]["data"] == {
        "version": {"seq": 1}
    }
    assert catalog.job_events(job.id, after=events[0][0]) == events[1:]
    second = catalog.enqueue_job("build", kb.id, {}, kb_name="docs")  # the KB is free again
    assert catalog.list_jobs(kb.id)[0].id == second.id
    with pytest.raises(NotFoundError):
        catalog.get_job("nope")


def test_racing_workers_claim_a_job_once(catalog: Catalog, kb: KnowledgeBase, db_url: str) -> None:
    other = catalog.create_kb("other", **KB)  # type: ignore[arg-type]
    for target in (kb, other):
        catalog.enqueue_job("build", target.id, {}, kb_name=target.name)
    workers = [Catalog(db_url) for _ in range(4)]
    claims: list[str] = []
    lock = threading.Lock()

    def claim(cat: Catalog, name: str) -> None:
        job = cat.claim_job(name)
        if job is not None:
            with lock:
                claims.append(job.id)

    threads = [threading.Thread(target=claim, args=(cat, f"w{i}")) for i, cat in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for cat in workers:
        cat.close()
    assert len(claims) == 2 and len(set(claims)) == 2


def test_a_job_whose_worker_stopped_is_failed_after_its_lease(catalog: Catalog, kb: KnowledgeBase) -> None:
    job = catalog.enqueue_job("build", kb.id, {}, kb_name="docs")
    assert catalog.claim_job("gone-worker") is not None
    assert catalog.reap_jobs(lease_s=60) == []  # it heartbeated just now
    with catalog.transaction() as s:
        s.execute(update(JobRow).values(heartbeat_at=datetime.now(UTC) - timedelta(seconds=61)))
    assert catalog.reap_jobs(lease_s=60) == [job.id]
    failed = catalog.get_job(job.id)
    assert failed.status == JobStatus.FAILED and "no heartbeat for 60 s" in (failed.error or "")
    assert catalog.job_events(job.id)[-1][1]["event"] == "error"
    assert catalog.enqueue_job("build", kb.id, {}, kb_name="docs").status == JobStatus.QUEUED
