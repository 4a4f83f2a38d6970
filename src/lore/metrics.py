"""Prometheus metrics of the service: requests, stage latencies, cache lookups, build jobs.

With several worker processes, set PROMETHEUS_MULTIPROC_DIR (`lore serve --workers N` does) so
`/metrics` adds up every process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from lore.events import StageEvent


class JobStats(Protocol):
    """What the catalog reports of its jobs (`lore.catalog.job_records.JobStats`; metrics sit below it)."""

    @property
    def counts(self) -> dict[tuple[str, str], int]: ...
    @property
    def durations(self) -> dict[tuple[str, str], list[float]]: ...
    @property
    def waits(self) -> dict[str, list[float]]: ...


REQUESTS = Counter(
    "lore_http_requests_total", "HTTP requests by route, method and status", ["method", "route", "status"]
)
REQUEST_SECONDS = Histogram(
    "lore_http_request_seconds",
    "HTTP request duration, to the end of the response (answer streams included)",
    ["method", "route"],
)
STAGE_SECONDS = Histogram(
    "lore_stage_seconds",
    "Latency of answer pipeline stages",
    ["stage"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
CACHE_LOOKUPS = Counter(
    "lore_cache_lookups_total", "Cache lookups by cache and result (hit or miss)", ["cache", "result"]
)
BUILDS = Counter("lore_build_jobs_total", "Versioned builds by outcome", ["outcome"])
BUILD_SECONDS = Histogram(
    "lore_build_seconds", "Duration of versioned builds", buckets=(1, 5, 15, 60, 300, 900, 3600)
)


def observe(event: StageEvent) -> None:
    """The metrics a request's event stream feeds (a subscriber): stage latencies from an answer's `end`."""
    if event.kind == "end":
        for stage, ms in (event.data.get("timings_ms") or {}).items():
            STAGE_SECONDS.labels(stage).observe(float(ms) / 1000)


def observe_request(event: StageEvent) -> None:
    """The HTTP metrics (a subscriber of the service middleware's stream): its closing `done` event."""
    if event.kind == "done" and "route" in event.data:
        d = event.data
        REQUESTS.labels(d["method"], d["route"], str(d["status"])).inc()
        REQUEST_SECONDS.labels(d["method"], d["route"]).observe(d["seconds"])


JOB_STATUSES = ("queued", "running", "succeeded", "failed")
JOB_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)


def _histogram(name: str, doc: str, labels: list[str], series: dict[tuple[str, ...], list[float]]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, samples in sorted(series.items()):
        buckets = [(str(b), sum(1 for x in samples if x <= b)) for b in JOB_BUCKETS]
        family.add_metric(list(values), [*buckets, ("+Inf", len(samples))], sum(samples))
    return family


class JobsCollector:
    """Build jobs as the catalog holds them (every replica's and worker's): a gauge per status, and
    histograms of run time (started to finished) and queue wait (queued to started)."""

    def __init__(self, stats: Callable[[], JobStats]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        st = self.stats()
        gauge = GaugeMetricFamily(
            "lore_jobs", "Jobs in the catalog by kind and status", labels=["kind", "status"]
        )
        for kind in sorted({k for k, _ in st.counts} | {"build"}):
            for status in JOB_STATUSES:
                gauge.add_metric([kind, status], st.counts.get((kind, status), 0))
        yield gauge
        yield _histogram(
            "lore_job_duration_seconds",
            "Run time of finished jobs",
            ["kind", "outcome"],
            dict(st.durations.items()),
        )
        yield _histogram(
            "lore_job_wait_seconds",
            "Queue wait of started jobs",
            ["kind"],
            {(k,): v for k, v in st.waits.items()},
        )


def render(job_stats: Callable[[], JobStats] | None = None) -> tuple[bytes, str]:
    """The exposition text (every worker's when PROMETHEUS_MULTIPROC_DIR is set) and its content type;
    with `job_stats`, the catalog's job figures too (they may fail: the caller reports that)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest()
    if job_stats is not None:
        jobs = CollectorRegistry()
        jobs.register(JobsCollector(job_stats))
        body += generate_latest(jobs)
    return body, CONTENT_TYPE_LATEST
