"""`lore worker` as a real process on PostgreSQL: killed mid-build, its job's lease runs out, the next build
runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.api.jobs import queue_build
from lore.catalog import BuildLockedError, JobStatus, VersionStatus
from lore.config import load_settings
from lore.engine import Lore
from lore.grant import Grant
from tests.conftest import fresh_database, migrated, server_absent

LEASE_S = 6.0
FILES = 30
OPTIONS = {
    "description": "",
    "activate": False,
    "quality_gate": False,
    "incremental_from": "latest",
    "force": False,
}
STAMP = {"tenant_id": "default"}
CALLER = Grant("default")  # who queues the builds (the local operator)


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    if reason := server_absent("postgresql"):
        pytest.skip(reason)
    with fresh_database("postgresql", tmp_path) as url:
        yield migrated(url)


def _worker(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from lore.cli.main import main; main()", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait(what: str, check: object, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_killed_worker_loses_its_lease_and_the_next_build_runs(pg_url: str, tmp_path: Path) -> None:
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    for i in range(FILES):
        (docs / f"note{i:03d}.md").write_text(f"# Note {i}\n\n" + f"Item {i} ships from depot {i % 7}. " * 12)
    env = {
        **os.environ,
        "LORE_HOME": str(home),
        "LORE_CATALOG_URL": pg_url,
        "LORE_WORKER__LEASE_S": str(LEASE_S),
        "LORE_WORKER__POLL_S": "0.2",
    }
    lore = Lore(load_settings(home=home, catalog_url=pg_url, worker={"lease_s": LEASE_S}))
    try:
        lore.create_kb("notes")
        first = queue_build(lore, "notes", [docs], OPTIONS, STAMP, by=CALLER)
        worker = _worker(env)
        try:

            def files_done() -> int:
                return sum(
                    e["data"].get("stage") == "file_done" for _, e in lore.catalog.job_events(first.id)
                )

            _wait("the worker to index some files", lambda: files_done() >= 3 or worker.poll() is not None)
            assert worker.poll() is None, worker.communicate()[0]
            worker.send_signal(signal.SIGKILL)  # mid-build: no clean-up of any kind
            worker.wait()
        finally:
            if worker.poll() is None:
                worker.kill()
        killed_at = time.monotonic()
        assert lore.catalog.get_job(first.id).status == JobStatus.RUNNING  # nobody knows yet
        assert files_done() < FILES
        with pytest.raises(
            BuildLockedError, match="already has a build job running"
        ):  # 409 while the lease runs
            queue_build(lore, "notes", [docs], OPTIONS, STAMP, by=CALLER)

        def queued() -> bool:
            try:
                queue_build(lore, "notes", [docs], OPTIONS, STAMP, by=CALLER)
            except BuildLockedError:
                return False
            return True

        _wait("the lease to run out", queued, timeout=60)
        assert (
            time.monotonic() - killed_at >= LEASE_S * 2 / 3 - 0.5
        )  # the last heartbeat was at most lease/3 ago
        lost = lore.catalog.get_job(first.id)
        assert lost.status == JobStatus.FAILED and "no heartbeat" in (lost.error or "")
        second = lore.catalog.list_jobs(lore.catalog.get_kb("notes").id)[0]
        assert second.id != first.id and second.status == JobStatus.QUEUED
        worker = _worker(env)
        try:
            _wait("the next build", lambda: lore.catalog.get_job(second.id).done)
            worker.send_signal(signal.SIGTERM)
            output = worker.communicate(timeout=60)[0]
        finally:
            if worker.poll() is None:
                worker.kill()
        assert worker.returncode == 0, output
        done = lore.catalog.get_job(second.id)
        assert done.status == JobStatus.SUCCEEDED, done.error
        assert done.result is not None and done.result["version"]["seq"] == 2
        assert done.result["counts"]["ingested"] + done.result["counts"].get("skipped", 0) == FILES
        kb = lore.catalog.get_kb("notes")
        statuses = [(v.seq, v.status) for v in lore.catalog.list_versions(kb.id)]
        assert statuses == [
            (1, VersionStatus.FAILED),
            (2, VersionStatus.STAGED),
        ]  # the killed build is closed
        assert lore.catalog.build_lock_holder(kb.id) is None
        assert lore.search("notes", "depot", version=2)
    finally:
        lore.close()
