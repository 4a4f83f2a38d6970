"""Operations endpoints: liveness, readiness (catalog, migrations, stores, Redis), Prometheus metrics,
and the middleware that counts requests and gives each one a trace id for the logs."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore.api.deps import State
from lore.api.security import HttpMiddleware
from lore.engine import Lore
from lore.events import EventStream
from lore.metrics import observe_request, render
from lore.telemetry import Exporter

router = APIRouter(tags=["service"])
log = logging.getLogger("lore.api")
FIRST_WAIT_S = 1.0  # a probe right after start-up waits this long at most for the first round of checks


@router.get("/api/health")
async def health() -> dict[str, str]:
    """Liveness: the process answers (no key needed; checks nothing else)."""
    return {"status": "ok"}


@router.get("/api/ready", responses={503: {"description": "A part the service needs is not ready."}})
async def ready(request: Request, state: State) -> JSONResponse:
    """Readiness: catalog reachable, migrations at head, every KB's store answers, Redis (if set)
    and the file storage answer, from checks a background thread repeats (`api.ready_refresh_s`)."""
    health = health_of(request.app, state.lore)
    deadline = time.monotonic() + FIRST_WAIT_S
    while health.runs == 0 and time.monotonic() < deadline:  # just started: the first round is quick
        await asyncio.sleep(0.02)
    checks = health.current()
    ok = bool(checks) and all(c == "ok" for c in checks.values())
    return JSONResponse({"status": "ready" if ok else "not ready", "checks": checks}, 200 if ok else 503)


class Health:
    """Component checks (`readiness`) run in a background thread every `interval_s`; `current()` answers
    from the last round at once, naming a check that has been running longer than `interval_s`."""

    def __init__(self, lore: Lore, interval_s: float) -> None:
        self.lore, self.interval_s = lore, interval_s
        self.runs = 0  # rounds finished
        self._last: dict[str, str] = {}
        self._partial: dict[str, str] = {}
        self._pending: tuple[str, float] | None = None  # the check running now, since when
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="lore-health", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()  # not joined: a check that hangs must not hold the shutdown

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self._partial = {}
            try:
                checks = readiness(self.lore, self._checking)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                checks = {"service": f"check failed ({type(exc).__name__})"}
            with self._lock:
                self._last, self._pending, self.runs = checks, None, self.runs + 1
            self._stop.wait(self.interval_s)

    def _checking(self, name: str, result: str | None) -> None:
        with self._lock:
            if result is None:
                self._pending = (name, time.monotonic())
            else:
                self._partial[name], self._pending = result, None

    def current(self) -> dict[str, str]:
        """The last round's checks; a check overdue (or not yet answered in the first round) as failing."""
        with self._lock:
            checks = {**self._last, **self._partial} if self._pending else dict(self._last)
            if self._pending:
                name, since = self._pending
                waited = time.monotonic() - since
                if waited >= self.interval_s or name not in checks:
                    checks[name] = f"no answer for {waited:.0f} s"
            return checks


def health_of(app: Any, lore: Lore) -> Health:
    """The app's `Health` (made and started on first use)."""
    health = getattr(app.state, "health", None)
    if health is None:
        health = app.state.health = Health(lore, lore.settings.api.ready_refresh_s)
    health.start()
    return health


@router.get("/metrics", include_in_schema=False)
async def metrics(state: State) -> Response:
    """Prometheus exposition: requests, stage latencies, cache lookups, builds, the catalog's build jobs."""
    try:
        body, content_type = await run_in_threadpool(render, state.lore.catalog.job_stats)
    except Exception:  # the catalog is down: the process's own figures still go out
        log.warning("metrics: no job figures from the catalog", exc_info=True)
        body, content_type = await run_in_threadpool(render)
    return Response(body, media_type=content_type)


def readiness(lore: Lore, note: Callable[[str, str | None], None] | None = None) -> dict[str, str]:
    """One line per part: "ok" or what is wrong (exception types and counts only, no addresses).
    `note(part, None)` is called as a part's check starts and `note(part, result)` when it ends."""
    checks: dict[str, str] = {}

    def check(name: str, run: Callable[[], str]) -> str:
        if note:
            note(name, None)
        try:
            checks[name] = run()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks[name] = f"unreachable ({type(exc).__name__})"
        if note:
            note(name, checks[name])
        return checks[name]

    kbs: list[Any] = []

    def catalog() -> str:
        kbs.extend(lore.catalog.list_kbs())
        return "ok"

    def redis() -> str:
        from lore.state.redis import redis_client

        redis_client(lore.settings.redis.url).ping()
        return "ok"

    def storage() -> str:
        lore.storage.check()
        return "ok"

    if check("catalog", catalog) != "ok":
        return checks
    check("migrations", lambda: migrations_status(lore))
    check("store", lambda: _stores(lore, kbs))
    if lore.settings.redis.url:
        check("redis", redis)
    check("storage", storage)
    return checks


def _stores(lore: Lore, kbs: list[Any]) -> str:
    failed = []
    for kb in kbs:
        try:
            lore.store(kb).count()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            failed.append(f"{kb.name} ({type(exc).__name__})")
    return "ok" if not failed else f"{len(failed)} of {len(kbs)} unreachable: {', '.join(failed[:5])}"


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
    `X-Request-ID`, and the request's event stream; its closing `done` event (route template, status,
    seconds to the response's end) feeds the Prometheus metrics and, when configured, an OTLP span."""

    def __init__(self, app: ASGIApp, otlp: Exporter | None = None) -> None:
        super().__init__(app)
        self.otlp = otlp

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        rid = _header(scope, b"x-request-id") or uuid.uuid4().hex
        started, status = time.perf_counter(), [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid[:64].encode("latin-1"))]
            await send(message)

        stream = EventStream(rid[:64])  # the request's event stream: log lines carry its id
        stream.subscribe(observe_request)
        if self.otlp is not None:
            stream.subscribe(self.otlp.subscriber("lore.http"))
        stream.emit("start", {"method": scope["method"]})
        try:
            with stream.bound():
                await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or (
                "static" if scope["path"] == "/" or "." in scope["path"] else "unmatched"
            )
            seconds = time.perf_counter() - started
            done = {"method": scope["method"], "route": route, "status": status[0], "seconds": seconds}
            stream.emit("done", done)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            text = value.decode("latin-1").strip()
            return text if text and text.isprintable() else None
    return None
