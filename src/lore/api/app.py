"""The FastAPI application: routers, CORS, error mapping, start-up preflight, the web UI."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from lore.api import ops
from lore.api.deps import ServiceState
from lore.api.jobs import Worker
from lore.api.limits import MULTIPART_SLACK, BodyLimits
from lore.api.logs import install_log_redaction
from lore.api.ops import ServiceMiddleware
from lore.api.preflight import preflight
from lore.api.routers import (
    ask,
    audit,
    builds,
    chunking,
    chunks,
    documents,
    feedback,
    ingest,
    kbs,
    keys,
    openai_compat,
    pages,
    passages,
    scenarios,
    search,
    sessions,
    traces,
    versions,
    web_sources,
)
from lore.api.security import Hardening, error_response, validation_errors
from lore.engine import Lore
from lore.errors import LoreError, error_status
from lore.state.ratelimit import make_rate_limiter
from lore.telemetry import exporter

log = logging.getLogger("lore.api")
WEB_DIR = Path(__file__).resolve().parents[1] / "web" / "static"
# A lost catalog database (restart, failover, network): the caller may retry; the details go to the log.
CATALOG_DOWN = "the catalog database is unavailable; try again shortly"
_RETRY = {"Retry-After": "5"}


def create_app(lore: Lore | None = None, *, run_preflight: bool = True) -> FastAPI:
    """The service over `lore` (default: from settings); start-up fails loudly if a part is missing."""
    engine = lore or Lore()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_preflight:
            for line in await run_in_threadpool(preflight, engine):
                (log.warning if line.startswith("warning:") else log.info)("preflight: %s", line)
        ops.health_of(app, engine)  # /api/ready's checks start with the service, not with its first probe
        stop = threading.Event()
        worker = None
        if engine.settings.worker.in_process:  # queued builds run here; off when `lore worker`s run them
            worker = threading.Thread(
                target=Worker(engine).loop, args=(stop,), name="lore-worker", daemon=True
            )
            worker.start()
        yield
        stop.set()
        if (health := getattr(app.state, "health", None)) is not None:  # /api/ready's background checks
            health.stop()
        if worker is not None:
            worker.join()  # a running build finishes (its lease would otherwise hold the KB for a while)
        if lore is None:  # the app made it, so the app closes it
            engine.close()

    app = FastAPI(
        title="Lore",
        version="0.1.0",
        lifespan=lifespan,
        description="Knowledge-base question answering: streamed, cited, versioned, multi-tenant. "
        "Every request needs `Authorization: Bearer <key>` (`lore keys create`).",
    )
    install_log_redaction()
    app.state.service = ServiceState(engine, make_rate_limiter(engine.settings))
    api = engine.settings.api
    app.add_middleware(
        BodyLimits,
        body_bytes=int(api.max_body_mb * 1e6),
        upload_bytes=int(api.max_upload_mb * 1e6) + MULTIPART_SLACK,
    )
    if api.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=api.cors_origins, allow_methods=["*"], allow_headers=["*"]
        )
    app.add_middleware(Hardening)  # outermost: its headers and generic 500 cover every response

    @app.exception_handler(LoreError)
    async def lore_error(request: Request, exc: LoreError) -> JSONResponse:
        status = error_status(exc)
        return _error(request, status, str(exc), _RETRY if status == 503 else None)

    async def catalog_down(request: Request, exc: Exception) -> JSONResponse:
        failing = isinstance(exc, DBAPIError) and not isinstance(exc, OperationalError | InterfaceError)
        if failing and not cast(DBAPIError, exc).connection_invalidated:
            raise exc  # a failing statement, not a lost database: the generic 500
        log.warning("catalog unreachable: %s %s: %s", request.method, request.url.path, exc)
        return _error(request, 503, CATALOG_DOWN, _RETRY)

    for kind in (OperationalError, InterfaceError, DBAPIError, DisconnectionError, PoolTimeoutError):
        app.add_exception_handler(kind, catalog_down)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_errors(request.url.path, exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(
            request, exc.status_code, exc.detail, None if exc.headers is None else dict(exc.headers)
        )

    telemetry = engine.settings.telemetry
    app.add_middleware(ServiceMiddleware, otlp=exporter(telemetry.endpoint, telemetry.service_name))
    for module in (
        ops,
        kbs,
        documents,
        pages,
        ingest,
        chunks,
        builds,
        versions,
        search,
        ask,
        feedback,
        sessions,
        traces,
        openai_compat,
        scenarios,
        keys,
        passages,
        audit,
        web_sources,
        chunking,
    ):
        app.include_router(module.router)

    if (WEB_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=WEB_DIR, html=True), name="web")
    return app


def serve_app() -> FastAPI:
    """The app of one `lore serve --workers N` worker (the parent process ran the preflight)."""
    return create_app(run_preflight=False)


def _error(
    request: Request, status: int, detail: object, headers: dict[str, str] | None = None
) -> JSONResponse:
    return error_response(request.url.path, status, detail, headers)
