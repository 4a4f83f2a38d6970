"""The FastAPI application: routers, CORS, error mapping, start-up preflight, the web UI."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from lore.api.deps import RateLimiter, ServiceState, error_status
from lore.api.logs import install_log_redaction
from lore.api.preflight import preflight
from lore.api.routers import (
    ask,
    builds,
    chunks,
    documents,
    feedback,
    ingest,
    kbs,
    keys,
    openai_compat,
    scenarios,
    search,
    sessions,
    traces,
    versions,
)
from lore.engine import Lore
from lore.errors import LoreError

log = logging.getLogger("lore.api")
WEB_DIR = Path(__file__).resolve().parents[1] / "web" / "static"


def create_app(lore: Lore | None = None, *, run_preflight: bool = True) -> FastAPI:
    """The service over `lore` (default: from settings); start-up fails loudly if a part is missing."""
    engine = lore or Lore()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_preflight:
            for line in await run_in_threadpool(preflight, engine):
                (log.warning if line.startswith("warning:") else log.info)("preflight: %s", line)
        yield
        if lore is None:  # the app made it, so the app closes it
            engine.close()

    app = FastAPI(title="Lore", version="0.1.0", lifespan=lifespan,
                  description="Knowledge-base question answering: streamed, cited, versioned, multi-tenant. "
                              "Every request needs `Authorization: Bearer <key>` (`lore keys create`).")
    install_log_redaction()
    app.state.service = ServiceState(engine, RateLimiter(engine.settings.api.rate_limit_per_minute))
    if engine.settings.api.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=engine.settings.api.cors_origins,
                           allow_methods=["*"], allow_headers=["*"])

    @app.exception_handler(LoreError)
    async def lore_error(request: Request, exc: LoreError) -> JSONResponse:
        return _error(request, error_status(exc), str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(request, exc.status_code, exc.detail, exc.headers)

    for module in (kbs, documents, ingest, chunks, builds, versions, search, ask, feedback, sessions, traces,
                   openai_compat, scenarios, keys):
        app.include_router(module.router)

    @app.get("/api/health", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness (no key needed)."""
        return {"status": "ok"}

    if (WEB_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=WEB_DIR, html=True), name="web")
    return app


def _error(request: Request, status: int, detail: object, headers: dict[str, str] | None = None) -> JSONResponse:
    """`{"detail": ...}`, or OpenAI's `{"error": {...}}` shape under /v1 so OpenAI clients show the message."""
    if request.url.path.startswith("/v1/"):
        body: dict[str, object] = {"error": {"message": str(detail), "type": "lore_error", "code": status}}
    else:
        body = {"detail": detail}
    return JSONResponse(body, status, headers=headers)
