"""Operations endpoints: liveness vs readiness, Prometheus metrics, request ids, JSON log lines."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from fastapi.testclient import TestClient

from lore.api import create_app
from lore.api.logs import JsonFormatter, TraceIdFilter, configure_logging
from lore.config import load_settings
from lore.engine import Lore
from tests.api.conftest import Keys, auth, build_and_wait


def test_ready_checks_catalog_migrations_and_stores(client: TestClient) -> None:
    r = client.get("/api/ready")
    assert r.status_code == 200, r.text
    assert r.json() == {
        "status": "ready",
        "checks": {"catalog": "ok", "migrations": "ok", "store": "ok", "storage": "ok"},
    }
    assert client.get("/api/health").json() == {"status": "ok"}


def test_ready_is_503_while_redis_is_down_and_health_stays_200(api_home: Path) -> None:
    lore = Lore(load_settings(home=api_home, redis={"url": "redis://127.0.0.1:1/0"}))
    with TestClient(create_app(lore, run_preflight=False)) as c:
        r = c.get("/api/ready")
        assert r.status_code == 503 and r.json()["checks"]["redis"].startswith("unreachable")
        assert r.json()["checks"]["catalog"] == "ok"
        assert c.get("/api/health").status_code == 200
    lore.close()


def test_ready_reports_a_catalog_behind_the_newest_migration(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path))
    lore.catalog.list_kbs()
    with lore.catalog.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    with TestClient(create_app(lore, run_preflight=False)) as c:
        r = c.get("/api/ready")
    assert r.status_code == 503 and "lore db upgrade" in r.json()["checks"]["migrations"]
    lore.close()


def test_metrics_count_requests_stages_and_cache_lookups(client: TestClient, keys: Keys) -> None:
    r = client.post("/api/ask", headers=auth(keys.staff), json={"kb": "hb", "question": "年假有几天？"})
    assert r.status_code == 200
    client.get("/api/kbs/nope/versions", headers=auth(keys.staff))
    text = client.get("/metrics").text
    assert 'lore_http_requests_total{method="POST",route="/api/ask",status="200"}' in text
    assert 'route="/api/kbs/{kb}/versions",status="404"' in text  # the route template, not the raw path
    assert 'lore_stage_seconds_count{stage="retrieve"}' in text
    assert "lore_cache_lookups_total" in text and "lore_build_jobs_total" in text


def test_request_id_is_echoed_and_json_log_lines_carry_the_trace_id(client: TestClient, keys: Keys) -> None:
    r = client.get("/api/health", headers={"X-Request-ID": "req-123"})
    assert r.headers["x-request-id"] == "req-123"
    assert len(client.get("/api/health").headers["x-request-id"]) == 32  # made up when not sent
    config = configure_logging(True)
    assert config is not None and configure_logging(False) is None
    out = io.StringIO()
    handler = logging.StreamHandler(out)  # what the `log_config` of `lore serve` installs, on a buffer
    handler.setFormatter(JsonFormatter())
    handler.addFilter(TraceIdFilter())
    logger = logging.getLogger("lore")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        r = client.post("/api/ask", headers=auth(keys.staff), json={"kb": "hb", "question": "年假有几天？"})
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    trace_id = json.loads(r.text.split("data: ", 2)[1].split("\n", 1)[0])["trace_id"]
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    asked = [line for line in lines if line["message"].startswith("ask kb=hb")]
    assert asked and asked[0]["trace_id"] == trace_id and asked[0]["level"] == "INFO" and asked[0]["time"]


def test_json_formatter_redacts_access_tokens() -> None:
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "GET %s", ("/api/stream?access_token=s3cr3t",), None
    )
    assert "s3cr3t" not in JsonFormatter().format(record)


def test_metrics_show_the_catalogs_build_jobs_after_a_build(tmp_path: Path) -> None:
    lore = Lore(load_settings(home=tmp_path, api={"rate_limit_per_minute": 0}))
    record = lore.create_kb("m")
    _, secret = lore.catalog.create_api_key("default", ["admin"])
    with TestClient(create_app(lore, run_preflight=False)) as c:
        before = c.get("/metrics").text
        assert 'lore_jobs{kind="build",status="queued"} 0.0' in before
        up = c.post(
            "/api/kbs/m/files",
            headers=auth(secret),
            files={"file": ("h.md", b"# H\n\nThe gate code is 4711.\n")},
        )
        assert up.status_code == 201
        assert build_and_wait(c, "m", {"activate": True}, auth(secret))["status"] == "succeeded"
        # A job that failed (as a worker records it), on the same catalog.
        failed = lore.catalog.enqueue_job("build", record.id, {"kb": "m"}, kb_name="m", lease_s=60)
        assert lore.catalog.claim_job("test-worker") is not None
        lore.catalog.finish_job(failed.id, error="broken", error_status=422)
        text = c.get("/metrics").text
    for status, n in (("queued", 0), ("running", 0), ("succeeded", 1), ("failed", 1)):
        assert f'lore_jobs{{kind="build",status="{status}"}} {n}.0' in text
    assert 'lore_job_duration_seconds_count{kind="build",outcome="succeeded"} 1.0' in text
    assert 'lore_job_duration_seconds_bucket{kind="build",le="+Inf",outcome="failed"} 1.0' in text
    assert 'lore_job_wait_seconds_count{kind="build"} 2.0' in text
    assert "# TYPE lore_job_duration_seconds histogram" in text
    lore.close()
