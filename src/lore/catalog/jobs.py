"""Queued work (builds, web crawls) in the catalog: any process enqueues, a worker claims, heartbeats and
finishes a job, and its progress events are rows every API replica can stream."""

from __future__ import annotations

import json
import uuid
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.orm import Session

from lore.catalog.job_lock import named_lock
from lore.catalog.job_records import (
    ACTIVE,
    CANCELLED_STATUS,
    CRAWL,
    Job,
    JobCapError,
    JobEventRow,
    JobRow,
    JobStats,
    JobStatus,
)
from lore.catalog.manifests import BuildLockedError
from lore.catalog.versions import _lock_kb
from lore.errors import ConflictError, NotFoundError


def _now() -> datetime:
    return datetime.now(UTC)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class JobsMixin:
    """Job methods of the Catalog; they join its thread-local transaction like every catalog call."""

    engine: Engine  # provided by Catalog

    def transaction(self) -> AbstractContextManager[Session]:
        """One transaction (provided by Catalog)."""
        raise NotImplementedError

    def enqueue_job(
        self, kind: str, kb_id: str, payload: dict[str, Any], *, kb_name: str = "", lease_s: float = 60.0
    ) -> Job:
        """Queue a job; `BuildLockedError` (409) while the KB has another job queued or running.

        The KB row's write lock serialises enqueuers, so two requests at once cannot both queue."""
        self.reap_jobs(lease_s)
        with self.transaction() as s:
            _lock_kb(s, kb_id)
            busy = s.scalar(
                select(JobRow)
                .where(JobRow.kb_id == kb_id, JobRow.status.in_(ACTIVE))
                .order_by(JobRow.created_at)
                .limit(1)
            )
            if busy is not None:
                raise BuildLockedError(
                    f"knowledge base {kb_name or kb_id!r} already has a {busy.kind} job "
                    f"{busy.status} (job {busy.id}); wait for it to finish"
                )
            return _queued(s, kind, kb_id, payload)

    def enqueue_crawl(
        self, kb_id: str, payload: dict[str, Any], *, cap: int, kb_name: str = "", lease_s: float = 60.0
    ) -> Job:
        """Queue a crawl for `payload["tenant"]`: `BuildLockedError` (409) while a build of the KB is queued
        or running, `JobCapError` while the tenant has `cap` crawls queued or running (on any KB).

        Crawls of one KB may queue behind each other. The tenant's lock (taken in the database, so every
        replica counts the same jobs) and the KB row's serialise the count with the insert."""
        self.reap_jobs(lease_s)
        tenant = str(payload["tenant"])
        with named_lock(self.engine, f"crawl:{tenant}"), self.transaction() as s:
            _lock_kb(s, kb_id)  # SQLite: the write lock first, so the count below is the latest
            busy = s.scalar(
                select(JobRow)
                .where(JobRow.kb_id == kb_id, JobRow.kind != CRAWL, JobRow.status.in_(ACTIVE))
                .limit(1)
            )
            if busy is not None:
                raise BuildLockedError(
                    f"knowledge base {kb_name or kb_id!r} has a {busy.kind} job {busy.status} "
                    f"(job {busy.id}); wait for it to finish"
                )
            active = s.scalars(select(JobRow.payload).where(JobRow.kind == CRAWL, JobRow.status.in_(ACTIVE)))
            if sum(json.loads(p).get("tenant") == tenant for p in active) >= cap:
                raise JobCapError(f"this tenant already runs {cap} web crawls")
            return _queued(s, CRAWL, kb_id, payload)

    def get_job(self, job_id: str) -> Job:
        """One job; NotFoundError if there is none."""
        with self.transaction() as s:
            row = s.get(JobRow, job_id, populate_existing=True)
            if row is None:
                raise NotFoundError(f"job '{job_id}' not found")
            return Job.from_row(row)

    def list_jobs(self, kb_id: str, limit: int = 50) -> list[Job]:
        """A KB's most recent jobs, newest first."""
        query = select(JobRow).where(JobRow.kb_id == kb_id).order_by(JobRow.created_at.desc()).limit(limit)
        with self.transaction() as s:
            return [Job.from_row(r) for r in s.scalars(query)]

    def claim_job(self, worker: str, kinds: tuple[str, ...] = ("build",)) -> Job | None:
        """Move the oldest queued job to RUNNING for `worker`; None when nothing is queued.

        The conditional UPDATE makes a claim atomic: of two workers racing, one gets the job."""
        for _ in range(5):
            with self.transaction() as s:
                job_id = s.scalar(
                    select(JobRow.id)
                    .where(JobRow.status == JobStatus.QUEUED.value, JobRow.kind.in_(kinds))
                    .order_by(JobRow.created_at, JobRow.id)
                    .limit(1)
                )
                if job_id is None:
                    return None
                now = _now()
                claimed = s.execute(
                    update(JobRow)
                    .where(JobRow.id == job_id, JobRow.status == JobStatus.QUEUED.value)
                    .values(status=JobStatus.RUNNING.value, worker=worker, started_at=now, heartbeat_at=now)
                )
                if claimed.rowcount:  # type: ignore[attr-defined]
                    return Job.from_row(s.get(JobRow, job_id, populate_existing=True))
        return None

    def heartbeat_job(self, job_id: str, worker: str) -> bool:
        """Record that `worker` still runs the job; False if the job is no longer its (reaped)."""
        with self.transaction() as s:
            done = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.worker == worker, JobRow.status == JobStatus.RUNNING.value)
                .values(heartbeat_at=_now())
            )
            return bool(done.rowcount)  # type: ignore[attr-defined]

    def requeue_job(self, job_id: str, worker: str) -> None:
        """Give a claimed job back to the queue (e.g. its KB's build lock is held elsewhere for now)."""
        with self.transaction() as s:
            s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.worker == worker, JobRow.status == JobStatus.RUNNING.value)
                .values(status=JobStatus.QUEUED.value, worker=None, started_at=None, heartbeat_at=None)
            )

    def finish_job(
        self,
        job_id: str,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        error_status: int | None = None,
    ) -> Job:
        """Mark a job SUCCEEDED (with its result) or FAILED (with its error), with a final event."""
        status = JobStatus.FAILED if error is not None else JobStatus.SUCCEEDED
        event: dict[str, Any] = (
            {"event": "error", "data": {"message": error, "status": error_status}}
            if error is not None
            else {"event": "end", "data": result}
        )
        with self.transaction() as s:
            row = s.get(JobRow, job_id, populate_existing=True)
            if row is None:
                raise NotFoundError(f"job '{job_id}' not found")
            row.status, row.finished_at = status.value, _now()
            row.result = None if result is None else _dump(result)
            row.error, row.error_status = error, error_status
            if error is not None and row.cancelled_by is not None:
                event["data"]["cancelled_by"] = row.cancelled_by
            s.add(JobEventRow(job_id=job_id, data=_dump(event)))
            s.flush()
            return Job.from_row(row)

    def cancel_job(self, job_id: str, by: str) -> Job:
        """Stop a job for `by`: a queued one fails at once, a running one is flagged (its worker stops it
        at the next file); `ConflictError` once it has finished."""
        message = f"cancelled by {by}"
        with self.transaction() as s:
            stopped = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == JobStatus.QUEUED.value)
                .values(
                    status=JobStatus.FAILED.value,
                    finished_at=_now(),
                    cancelled_by=by,
                    error=message,
                    error_status=CANCELLED_STATUS,
                )
            )
            if stopped.rowcount:  # type: ignore[attr-defined]
                event = {"message": message, "status": CANCELLED_STATUS, "cancelled_by": by}
                s.add(JobEventRow(job_id=job_id, data=_dump({"event": "error", "data": event})))
            else:
                s.execute(
                    update(JobRow)
                    .where(
                        JobRow.id == job_id,
                        JobRow.status == JobStatus.RUNNING.value,
                        JobRow.cancelled_by.is_(None),
                    )
                    .values(cancelled_by=by)
                )
            row = s.get(JobRow, job_id, populate_existing=True)
            if row is None:
                raise NotFoundError(f"job '{job_id}' not found")
            job = Job.from_row(row)
        if job.done and job.cancelled_by is None:
            raise ConflictError(f"job {job_id} has already {job.status.value}; there is nothing to cancel")
        return job

    def job_cancelled_by(self, job_id: str) -> str | None:
        """Who asked the job to stop, if anyone (a running build checks it between files)."""
        with self.transaction() as s:
            return s.scalar(select(JobRow.cancelled_by).where(JobRow.id == job_id))

    def job_stats(self) -> JobStats:
        """Jobs by (kind, status) and the durations of finished ones (for `/metrics`; every replica's)."""
        with self.transaction() as s:
            counts = {
                (kind, status): int(n)
                for kind, status, n in s.execute(
                    select(JobRow.kind, JobRow.status, func.count()).group_by(JobRow.kind, JobRow.status)
                )
            }
            done = s.execute(
                select(
                    JobRow.kind, JobRow.status, JobRow.created_at, JobRow.started_at, JobRow.finished_at
                ).where(JobRow.finished_at.is_not(None), JobRow.started_at.is_not(None))
            ).all()
        durations: dict[tuple[str, str], list[float]] = {}
        waits: dict[str, list[float]] = {}
        for kind, status, created, started, finished in done:
            assert started is not None and finished is not None  # the query selects only those
            durations.setdefault((kind, status), []).append(max((finished - started).total_seconds(), 0.0))
            waits.setdefault(kind, []).append(max((started - created).total_seconds(), 0.0))
        return JobStats(counts, durations, waits)

    def reap_jobs(self, lease_s: float) -> list[str]:
        """Fail RUNNING jobs whose worker sent no heartbeat for `lease_s` seconds (killed, crashed)."""
        cutoff = _now() - timedelta(seconds=lease_s)
        with self.transaction() as s:
            stale = list(
                s.scalars(
                    select(JobRow.id).where(
                        JobRow.status == JobStatus.RUNNING.value, JobRow.heartbeat_at < cutoff
                    )
                )
            )
        for job_id in stale:
            message = (
                f"the worker stopped (no heartbeat for {lease_s:g} s); the job is marked failed by "
                "the next one"
            )
            with self.transaction() as s:
                done = s.execute(
                    update(JobRow)
                    .where(
                        JobRow.id == job_id,
                        JobRow.status == JobStatus.RUNNING.value,
                        JobRow.heartbeat_at < cutoff,
                    )
                    .values(
                        status=JobStatus.FAILED.value, finished_at=_now(), error=message, error_status=500
                    )
                )
                if done.rowcount:  # type: ignore[attr-defined]
                    s.execute(
                        insert(JobEventRow).values(
                            job_id=job_id,
                            data=_dump({"event": "error", "data": {"message": message, "status": 500}}),
                        )
                    )
        return stale

    def add_job_event(self, job_id: str, event: dict[str, Any]) -> None:
        """Append one progress event to a job."""
        with self.transaction() as s:
            s.execute(insert(JobEventRow).values(job_id=job_id, data=_dump(event)))

    def job_events(self, job_id: str, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        """A job's events with id greater than `after`, in order, as (id, event)."""
        query = (
            select(JobEventRow.id, JobEventRow.data)
            .where(JobEventRow.job_id == job_id, JobEventRow.id > after)
            .order_by(JobEventRow.id)
        )
        with self.transaction() as s:
            return [(event_id, json.loads(data)) for event_id, data in s.execute(query)]


def _queued(s: Session, kind: str, kb_id: str, payload: dict[str, Any]) -> Job:
    """A new queued job row of `kind` for a KB, written in transaction `s`."""
    row = JobRow(
        id=uuid.uuid4().hex,
        kind=kind,
        kb_id=kb_id,
        status=JobStatus.QUEUED.value,
        payload=_dump(payload),
        created_at=_now(),
    )
    s.add(row)
    s.flush()
    return Job.from_row(row)
