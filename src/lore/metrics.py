"""Prometheus metrics of the service: requests, stage latencies, cache lookups, build jobs.

With several worker processes, set PROMETHEUS_MULTIPROC_DIR (`lore serve --workers N` does) so
`/metrics` adds up every process.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

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


def render() -> tuple[bytes, str]:
    """The exposition text (every worker's when PROMETHEUS_MULTIPROC_DIR is set) and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
