"""Shared service state, the caller's grant from its API key, and the per-key rate limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, HTTPException, Request, WebSocket
from starlette.concurrency import run_in_threadpool

from lore.engine import Lore
from lore.grant import Grant
from lore.state.ratelimit import RateLimiter


@dataclass
class ServiceState:
    """What every request handler shares."""

    lore: Lore
    limiter: RateLimiter
    streams: set[object] = field(default_factory=set)  # live answer streams (for shutdown and tests)
    builds: set[object] = field(default_factory=set)  # builds running for a progress stream
    tenant_streams: dict[str, int] = field(default_factory=dict)  # open streams and sockets per tenant


def state_of(request: Request) -> ServiceState:
    """The service state of the app handling `request`."""
    return request.app.state.service  # type: ignore[no-any-return]


State = Annotated[ServiceState, Depends(state_of)]


def bearer(header: str | None) -> str | None:
    """The key from an `Authorization: Bearer <key>` header."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _unauthorized(reason: str) -> HTTPException:
    return HTTPException(401, reason, headers={"WWW-Authenticate": "Bearer"})


async def authenticate(state: ServiceState, secret: str | None, *, count: bool = True) -> Grant:
    """The grant of a live key; 401 without one, 429 over the rate limit (when `count`: a request)."""
    if not secret:
        raise _unauthorized("missing API key: send 'Authorization: Bearer <key>'")
    key = await run_in_threadpool(state.lore.catalog.use_api_key, secret)
    if key is None:
        raise _unauthorized("invalid or revoked API key")
    if key.expired(datetime.now(UTC)):
        raise _unauthorized("expired API key: ask an administrator for a new one")
    wait = state.limiter.check(key.id) if count else 0.0
    if wait > 0:
        raise HTTPException(
            429,
            f"rate limit of {state.limiter.per_minute} requests/minute exceeded for this key",
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    return Grant.of_key(key.id, key.tenant_id, key.roles, key.datasets)


async def scope_of(request: Request, state: State) -> Grant:
    """Dependency: the caller's grant from its bearer key."""
    return await authenticate(state, bearer(request.headers.get("authorization")))


def websocket_secret(websocket: WebSocket) -> str | None:
    """A WebSocket caller's key: bearer header, or `access_token` query parameter for browsers."""
    return bearer(websocket.headers.get("authorization")) or websocket.query_params.get("access_token")


async def websocket_scope(websocket: WebSocket, state: ServiceState) -> Grant:
    """A WebSocket caller's grant (see `websocket_secret`)."""
    return await authenticate(state, websocket_secret(websocket), count=False)  # each question counts instead


Caller = Annotated[Grant, Depends(scope_of)]
