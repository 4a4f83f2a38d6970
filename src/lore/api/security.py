"""Response hardening: security headers on every response, originals served as inert downloads, and
internal errors answered with a generic message and an id (the details go to the server log)."""

from __future__ import annotations

import logging
import mimetypes
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.responses import FileResponse, JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore.errors import internal_message

log = logging.getLogger("lore.api")

# The web UI: its own script and styles only (no inline script or style), API calls to its own origin.
UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# An uploaded original: never a document of this origin (no script, no plugins, no same-origin access).
ORIGINAL_CSP = "sandbox; default-src 'none'"
MAX_DETAIL = 500  # characters of an error message
_DOCS = ("/docs", "/redoc")  # FastAPI's API explorer pages load their own inline script: no UI CSP there
_INERT_TYPES = ("text/", "application/json", "application/pdf", "image/png", "image/jpeg", "image/gif")
_ACTIVE = ("text/html", "text/xml", "application/xhtml", "application/xml", "image/svg", "text/javascript")


def error_response(
    path: str, status: int, detail: object, headers: dict[str, str] | None = None, **extra: object
) -> JSONResponse:
    """`{"detail": ...}`, or OpenAI's `{"error": {...}}` shape under /v1 so OpenAI clients show the message.

    A long message (one quoting a huge input) is cut: an error never echoes more than `MAX_DETAIL` characters.
    """
    if isinstance(detail, str) and len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL] + "…"
    if path.startswith("/v1/"):
        body: dict[str, object] = {
            "error": {"message": str(detail), "type": "lore_error", "code": status, **extra}
        }
    else:
        body = {"detail": detail, **extra}
    return JSONResponse(body, status, headers=headers)


def validation_errors(path: str, errors: Sequence[Any]) -> JSONResponse:
    """422 naming each invalid field (location, message, type) without echoing the input it was given."""
    problems = [{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in errors]
    if path.startswith("/v1/"):
        return error_response(
            path, 422, "; ".join(f"{'.'.join(map(str, p.get('loc', ())))}: {p.get('msg')}" for p in problems)
        )
    return JSONResponse({"detail": problems}, 422)


def original_response(path: Path) -> FileResponse:
    """An uploaded original as a download: attachment, no sniffing, sandboxed, never active content."""
    media, _ = mimetypes.guess_type(path.name)
    if not media or media.startswith(_ACTIVE) or not media.startswith(_INERT_TYPES):
        media = "application/octet-stream"
    return FileResponse(
        path,
        media_type=media,
        filename=path.name,
        content_disposition_type="attachment",
        headers={"Content-Security-Policy": ORIGINAL_CSP, "Cache-Control": "private, no-store"},
    )


class HttpMiddleware:
    """ASGI middleware that acts on HTTP requests (`http`); WebSocket and lifespan pass straight through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request."""
        raise NotImplementedError


class Hardening(HttpMiddleware):
    """ASGI middleware: security headers on every HTTP response, and a generic 500 for unexpected errors."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        started = False

        async def send_hardened(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                headers.setdefault("Referrer-Policy", "no-referrer")
                if not path.startswith(_DOCS):
                    headers.setdefault("Content-Security-Policy", UI_CSP)
                    headers.setdefault("X-Frame-Options", "DENY")
            await send(message)

        try:
            await self.app(scope, receive, send_hardened)
        except Exception:
            error_id = uuid.uuid4().hex
            log.exception("error %s: %s %s failed", error_id, scope.get("method"), path)
            if started:  # the response is under way: all that can be done is to end it
                raise
            await error_response(path, 500, internal_message(error_id), trace_id=error_id)(
                scope, receive, send_hardened
            )
