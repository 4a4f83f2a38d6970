"""Shared service state, the caller's scope from its API key, and the per-key rate limit."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Annotated

from fastapi import Depends, HTTPException, Request, WebSocket
from starlette.concurrency import run_in_threadpool

from lore.catalog.service import ApiKey
from lore.engine import Lore
from lore.errors import ConflictError, LoreError, NotFoundError
from lore.retrieve.search import SearchOptions
from lore.schema import SearchFilter

ADMIN_ROLE = "admin"
PLATFORM_ADMIN_ROLE = "platform-admin"  # may write to knowledge bases that also hold other tenants' chunks
OPEN_VISIBILITY = ["public", "internal"]  # what every key reads; `restricted` needs the admin role


@dataclass
class Scope:
    """Who is calling: tenant, datasets and roles, all taken from the API key, never from the body."""

    key: ApiKey

    @property
    def tenant_id(self) -> str:
        return self.key.tenant_id

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.key.roles

    @property
    def is_platform_admin(self) -> bool:
        return PLATFORM_ADMIN_ROLE in self.key.roles

    @property
    def owner_key(self) -> str | None:
        """The key whose own sessions and traces this caller sees; None for the tenant's admins (all of them)."""
        return None if self.is_admin else self.key.id

    def chunk_stamp(self, dataset: str | None = None) -> dict[str, str]:
        """Chunk fields this caller's writes carry: its tenant, and its dataset.

        A key with several datasets must name one of them (`dataset`), else 400; a key with one uses it.
        """
        stamp = {"tenant_id": self.key.tenant_id}
        allowed = self.key.datasets
        if dataset is not None:
            if allowed is not None and dataset not in allowed:
                raise HTTPException(400, f"dataset {dataset!r} is not one of this key's datasets: {allowed}")
            stamp["dataset_id"] = dataset
        elif allowed and len(allowed) == 1:
            stamp["dataset_id"] = allowed[0]
        elif allowed:
            raise HTTPException(400, f"dataset: this key has several datasets {allowed}; name the one to write to")
        return stamp

    def visibility(self) -> list[str]:
        """Visibility levels this caller reads: public and internal; restricted only with the admin role."""
        return [*OPEN_VISIBILITY, "restricted"] if self.is_admin else list(OPEN_VISIBILITY)

    def search_filter(self) -> SearchFilter:
        """The filter every search of this caller runs with (applied inside the store)."""
        return SearchFilter(tenant_ids=[self.key.tenant_id], dataset_ids=self.key.datasets,
                            visibility=self.visibility(), roles=list(self.key.roles))

    def options(self, lore: Lore, top_k: int | None = None, rerank: bool | None = None) -> SearchOptions:
        """Configured search options bounded to this caller's scope; `rerank` True/False overrides
        whether the configured reranker runs (True with none configured is a 400)."""
        opts = SearchOptions.from_settings(lore.settings.retrieve, top_k, self.search_filter(),
                                           rerank=lore.settings.rerank)
        if rerank and lore.settings.rerank.provider == "none":
            raise HTTPException(400, "rerank: no reranker is configured ([rerank] provider = \"none\")")
        return opts if rerank is None else replace(opts, rerank=rerank)


def error_status(exc: LoreError) -> int:
    """The HTTP status of a Lore error: unknown thing 404, refused by the KB's state 409, else 400."""
    if isinstance(exc, NotFoundError):
        return 404
    return 409 if isinstance(exc, ConflictError) else 400


class RateLimiter:
    """A token bucket per key: `per_minute` requests a minute with bursts of the same size."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, key_id: str) -> float:
        """0 if the request may go ahead, else the seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        rate = self.per_minute / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[key_id] = (tokens, now)
                return (1.0 - tokens) / rate
            self._buckets[key_id] = (tokens - 1.0, now)
            return 0.0


@dataclass
class ServiceState:
    """What every request handler shares."""

    lore: Lore
    limiter: RateLimiter
    streams: set[object] = field(default_factory=set)  # live answer streams (for shutdown and tests)
    builds: set[object] = field(default_factory=set)  # builds running for a progress stream


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


async def authenticate(state: ServiceState, secret: str | None, *, count: bool = True) -> Scope:
    """The scope of a live key; 401 without one, 429 over the rate limit (when `count`: a request)."""
    if not secret:
        raise _unauthorized("missing API key: send 'Authorization: Bearer <key>'")
    key = await run_in_threadpool(state.lore.catalog.authenticate, secret)
    if key is None:
        raise _unauthorized("invalid or revoked API key")
    wait = state.limiter.check(key.id) if count else 0.0
    if wait > 0:
        raise HTTPException(429, f"rate limit of {state.limiter.per_minute} requests/minute exceeded for this key",
                            headers={"Retry-After": str(max(1, round(wait)))})
    return Scope(key)


async def scope_of(request: Request, state: State) -> Scope:
    """Dependency: the caller's scope from its bearer key."""
    return await authenticate(state, bearer(request.headers.get("authorization")))


async def admin_scope_of(scope: Annotated[Scope, Depends(scope_of)]) -> Scope:
    """Dependency: a caller whose key has the `admin` role (changes to knowledge bases)."""
    if not scope.is_admin:
        raise HTTPException(403, f"this needs an API key with the '{ADMIN_ROLE}' role")
    return scope


async def websocket_scope(websocket: WebSocket, state: ServiceState) -> Scope:
    """A WebSocket caller's scope: bearer header, or `access_token` query parameter for browsers."""
    secret = bearer(websocket.headers.get("authorization")) or websocket.query_params.get("access_token")
    return await authenticate(state, secret, count=False)  # each question on the socket counts instead


Caller = Annotated[Scope, Depends(scope_of)]
Admin = Annotated[Scope, Depends(admin_scope_of)]
