"""Operations endpoints: liveness, readiness (catalog, migrations, stores, Redis), Prometheus metrics,
and the middleware that counts requests and gives each one a trace id for the logs."""

from __future__ import annotations

import logging
import time
import uuid

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import Message, Receive, Scope, Send

from lore.api.deps import State
from lore.api.logs import TRACE_ID
from lore.api.security import HttpMiddleware
from lore.engine import Lore
from lore.metrics import REQUEST_SECONDS, REQUESTS, render

router = APIRouter(tags=["service"])
log = logging.getLogger("lore.api")


@router.get("/api/health")
async def health() -> dict[str, str]:
    """Liveness: the process answers (no key needed; checks nothing else)."""
    return {"status": "ok"}


@router.get("/api/ready", responses={503: {"description": "A part the service needs is not ready."}})
async def ready(state: State) -> JSONResponse:
    """Readiness: catalog reachable, migrations at head, every KB's store answers, Redis (if set)
    and the file storage answer."""
    checks = await run_in_threadpool(readiness, state.lore)
    ok = all(c == "ok" for c in checks.values())
    return JSONResponse({"status": "ready" if ok else "not ready", "checks": checks}, 200 if ok else 503)


@router.get("/metrics", include_in_schema=False)
async def metrics(state: State) -> Response:
    """Prometheus exposition: requests, stage latencies, cache lookups, builds, the catalog's build jobs."""
    try:
        body, content_type = await run_in_threadpool(render, state.lore.catalog.job_stats)
    except Exception:  # the catalog is down: the process's own figures still go out
        log.warning("metrics: no job figures from the catalog", exc_info=True)
        body, content_type = await run_in_threadpool(render)
    return Response(body, media_type=content_type)


def readiness(lore: Lore) -> dict[str, str]:
    """One line per part: "ok" or what is wrong (exception types and counts only, no addresses)."""
    checks: dict[str, str] = {}
    try:
        kbs = lore.catalog.list_kbs()
        checks["catalog"] = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return {"catalog": f"unreachable ({type(exc).__name__})"}
    checks["migrations"] = migrations_status(lore)
    failed = []
    for kb in kbs:
        try:
            lore.store(kb).count()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            failed.append(f"{kb.name} ({type(exc).__name__})")
    checks["store"] = (
        "ok" if not failed else f"{len(failed)} of {len(kbs)} unreachable: {', '.join(failed[:5])}"
    )
    if lore.settings.redis.url:
        from lore.state.redis import redis_client

        try:
            redis_client(lore.settings.redis.url).ping()
            checks["redis"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks["redis"] = f"unreachable ({type(exc).__name__})"
    try:
        lore.storage.check()
        checks["storage"] = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        checks["storage"] = f"unreachable ({type(exc).__name__})"
    return checks


def migrations_status(lore: Lore) -> str:
    """ "ok" when the catalog's schema revision is the newest migration, else which revision it is at."""
    from lore.catalog.migrate import current_revision, head_revision

    try:
        current, head = current_revision(lore.catalog.engine), head_revision()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"unknown ({type(exc).__name__})"
    return "ok" if current == head else f"at {current or 'none'}, head is {head}: run lore db upgrade"


class ServiceMiddleware(HttpMiddleware):
    """Per request: a trace id (the `X-Request-ID` header, or a new one) for the logs, echoed back in
    `X-Request-ID`; Prometheus counts by route template and status, and latency to the response's end."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        rid = _header(scope, b"x-request-id") or uuid.uuid4().hex
        token = TRACE_ID.set(rid[:64])
        started, status = time.perf_counter(), [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid[:64].encode("latin-1"))]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or (
                "static" if scope["path"] == "/" or "." in scope["path"] else "unmatched"
            )
            REQUESTS.labels(scope["method"], route, str(status[0])).inc()
            REQUEST_SECONDS.labels(scope["method"], route).observe(time.perf_counter() - started)
            TRACE_ID.reset(token)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            text = value.decode("latin-1").strip()
            return text if text and text.isprintable() else None
    return None
