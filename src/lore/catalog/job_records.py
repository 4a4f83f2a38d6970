"""The job records of the catalog: the `jobs` and `job_events` tables, a job as the catalog reports it, and
the job statistics `/metrics` reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from lore.catalog.models import Base
from lore.catalog.records import RowRecord, json_or_none
from lore.catalog.types import LongText
from lore.errors import LoreError


class JobStatus(StrEnum):
    """QUEUED -> RUNNING -> SUCCEEDED or FAILED (a worker that stops heartbeating fails its job; a cancelled
    job is FAILED with its `cancelled_by`)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


ACTIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)
CANCELLED_STATUS = 409  # the error status of a cancelled job: it was stopped on request, not broken
CRAWL = "crawl"  # a web crawl into an unversioned KB; its payload names the tenant it runs for


class JobCapError(LoreError):
    """The tenant already has as many jobs of the kind queued or running as it may (HTTP 429)."""


class JobRow(Base):
    """One unit of queued work on a knowledge base."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_status_created_at", "status", "created_at"),
        Index("ix_jobs_kb_id", "kb_id"),
        CheckConstraint("status IN ('queued', 'running', 'succeeded', 'failed')", name="status"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    kb_id: Mapped[str] = mapped_column(String(32), ForeignKey("knowledge_bases.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    payload: Mapped[str] = mapped_column(LongText)  # JSON: what to do
    result: Mapped[str | None] = mapped_column(LongText)  # JSON: what came of it
    error: Mapped[str | None] = mapped_column(Text)
    error_status: Mapped[int | None] = mapped_column(Integer)  # the HTTP status the error maps to
    worker: Mapped[str | None] = mapped_column(String(255))  # host:pid of the worker running it
    cancelled_by: Mapped[str | None] = mapped_column(String(255))  # who asked it to stop
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class JobEventRow(Base):
    """One progress event of a job, in order."""

    __tablename__ = "job_events"
    __table_args__ = (Index("ix_job_events_job_id_id", "job_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"))
    data: Mapped[str] = mapped_column(LongText)  # JSON: {"event": ..., "data": ...}


@dataclass(frozen=True, slots=True)
class Job(RowRecord):
    """A job as the catalog reports it."""

    CONVERT: ClassVar = {"status": JobStatus, "payload": json.loads, "result": json_or_none}

    id: str
    kind: str
    kb_id: str
    status: JobStatus
    payload: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    error_status: int | None
    worker: str | None
    cancelled_by: str | None
    created_at: datetime
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None

    @property
    def done(self) -> bool:
        """Whether the job has finished, either way."""
        return self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view (without the payload, which may name server paths)."""
        stamp = {
            name: None if getattr(self, name) is None else getattr(self, name).isoformat()
            for name in ("created_at", "started_at", "heartbeat_at", "finished_at")
        }
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status.value,
            "result": self.result,
            "error": self.error,
            "error_status": self.error_status,
            "worker": self.worker,
            "cancelled_by": self.cancelled_by,
            **stamp,
        }


@dataclass(frozen=True)
class JobStats:
    """Job counts by (kind, status); run seconds by (kind, outcome) and queue-wait seconds by kind."""

    counts: dict[tuple[str, str], int]
    durations: dict[tuple[str, str], list[float]]
    waits: dict[str, list[float]]
