"""Crawl jobs in the catalog on SQLite, PostgreSQL and MariaDB: a tenant's cap on queued-or-running crawls
holds when many requests race through two catalogs (two replicas) at once, and crawls and builds of one KB
exclude each other while crawls of one KB queue behind each other."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lore.catalog import BuildLockedError, Catalog, JobStatus
from lore.catalog.job_records import CRAWL, JobCapError
from tests.catalog.rows import KB
from tests.conftest import migrated

RACERS = 8


@pytest.fixture
def catalogs(db_url: str) -> Iterator[tuple[Catalog, Catalog]]:
    url = migrated(db_url)
    with Catalog(url) as one, Catalog(url) as two:
        yield one, two


def _crawl(tenant: str) -> dict[str, str]:
    return {"tenant": tenant, "url": "https://intranet.example.com/"}


def test_the_tenant_cap_holds_when_requests_race_on_two_replicas(catalogs: tuple[Catalog, Catalog]) -> None:
    one, two = catalogs
    kbs = [one.create_kb(f"kb{i}", **KB) for i in range(RACERS)]  # type: ignore[arg-type]
    start = threading.Barrier(RACERS)
    admitted: list[str] = []
    refused: list[str] = []

    def race(i: int) -> None:
        catalog = (one, two)[i % 2]
        start.wait()
        try:
            admitted.append(catalog.enqueue_crawl(kbs[i].id, _crawl("acme"), cap=2).id)
        except JobCapError as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 2 and len(refused) == RACERS - 2
    assert refused[0] == "this tenant already runs 2 web crawls"
    other = two.enqueue_crawl(kbs[0].id, _crawl("globex"), cap=2)  # another tenant's count is its own
    assert other.kind == CRAWL and other.status is JobStatus.QUEUED

    claimed = one.claim_job("w", (CRAWL,))  # a running crawl still counts; a finished one no more
    assert claimed is not None and claimed.id in admitted
    with pytest.raises(JobCapError):
        two.enqueue_crawl(kbs[1].id, _crawl("acme"), cap=2)
    one.finish_job(claimed.id, error="no web page could be fetched", error_status=422)
    assert two.enqueue_crawl(kbs[1].id, _crawl("acme"), cap=2).status is JobStatus.QUEUED


def test_crawls_queue_behind_each_other_but_not_beside_a_build(catalogs: tuple[Catalog, Catalog]) -> None:
    catalog = catalogs[0]
    kb = catalog.create_kb("docs", **KB)  # type: ignore[arg-type]
    first = catalog.enqueue_crawl(kb.id, _crawl("acme"), cap=5, kb_name="docs")
    second = catalog.enqueue_crawl(kb.id, _crawl("acme"), cap=5, kb_name="docs")
    assert first.id != second.id
    with pytest.raises(BuildLockedError, match=f"already has a crawl job queued \\(job {first.id}\\)"):
        catalog.enqueue_job("build", kb.id, {}, kb_name="docs")
    assert catalog.claim_job("builder") is None  # a build worker does not take crawls
    for job in (first, second):
        catalog.finish_job(job.id, result={"pages": 1})
    build = catalog.enqueue_job("build", kb.id, {}, kb_name="docs")
    with pytest.raises(BuildLockedError, match=f"has a build job queued \\(job {build.id}\\)"):
        catalog.enqueue_crawl(kb.id, _crawl("acme"), cap=5, kb_name="docs")
