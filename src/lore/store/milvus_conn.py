"""Milvus connections that survive a server restart: credentials, database and TLS from `[store]`,
and a client that reconnects and reloads a `released` collection, then retries the call (tenacity); and
the count of stores sharing one Milvus Lite file. Failures are told apart by type and error code."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NoReturn, cast

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from lore.errors import MissingDependencyError, UnavailableError

log = logging.getLogger("lore.store.milvus")
_INSTALL_HINT = 'pip install "pymilvus[milvus_lite]"'
# Milvus Lite runs one in-process server per file; it is stopped when the last store using it closes.
_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}
# What a caller is told (no address, no exception text: those go to the log).
UNAVAILABLE = "the vector store (Milvus) is unavailable; try again shortly"

# Milvus error codes (pkg/util/merr) a reconnect or a reload cures: 2 service unavailable (also pymilvus's
# own CONNECT_FAILED), 101/103 collection not (fully) loaded (a restarted server brings it back
# `released`), 106 collection recovering, 201/202 partition not (fully) loaded, 401 replica, 503 channel,
# 902/903/905 query node offline, lacking or not available.
TRANSIENT_CODES = frozenset({2, 101, 103, 106, 201, 202, 401, 503, 902, 903, 905})
# gRPC statuses of a lost, reset or stalled channel (raised as such, or as the code of a MilvusException).
_TRANSIENT_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "ABORTED"})
# "Not found": 100 collection, 700 index, 800 database (Milvus); pymilvus's ErrorCode has the first two.
NOT_FOUND_CODES = frozenset({100, 700, 800})


def import_pymilvus() -> ModuleType:
    """The pymilvus module, or MissingDependencyError saying how to install it."""
    try:
        import pymilvus
    except ImportError as exc:
        raise MissingDependencyError(f"the Milvus store needs pymilvus: {_INSTALL_HINT}") from exc
    return cast(ModuleType, pymilvus)  # untyped package: mypy sees Any


def connection_kwargs(settings: Any) -> dict[str, Any]:
    """MilvusClient keyword arguments from a `StoreSettings` (token/user/password, database, TLS)."""
    if settings is None:
        return {}
    out: dict[str, Any] = {"timeout": settings.timeout_s}
    token = settings.token or os.environ.get("LORE_MILVUS_TOKEN", "")
    password = settings.password or os.environ.get("LORE_MILVUS_PASSWORD", "")
    if token:
        out["token"] = token
    if settings.user:
        out["user"], out["password"] = settings.user, password
    if settings.db_name:
        out["db_name"] = settings.db_name
    if settings.secure:
        out["secure"] = True
        for name in ("server_pem_path", "server_name", "ca_pem_path", "client_pem_path", "client_key_path"):
            if value := getattr(settings, name):
                out[name] = value
    return out


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it was raised from (pymilvus wraps a gRPC error once its own retries run out)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def _grpc_status(exc: BaseException) -> str | None:
    """The gRPC status name of a `grpc.RpcError`, or None for any other exception."""
    try:
        import grpc
    except ImportError:
        return None
    if not isinstance(exc, grpc.RpcError) or not callable(getattr(exc, "code", None)):
        return None
    code = exc.code()
    return str(code.name) if isinstance(code, grpc.StatusCode) else None


def _milvus_code(exc: BaseException) -> int | str | None:
    """A MilvusException's code: a Milvus error number, or a gRPC status name; None for other errors."""
    pm = import_pymilvus()
    if not isinstance(exc, pm.MilvusException):
        return None
    code = exc.code
    if isinstance(code, int):  # a Milvus error number (pymilvus's ErrorCode is an IntEnum)
        return int(code)
    name = getattr(code, "name", None)  # a grpc.StatusCode, once pymilvus's own retries ran out
    return name if isinstance(name, str) else None


def is_transient(exc: BaseException) -> bool:
    """Whether a failed call may work after reconnecting or reloading the collection: a lost connection
    (gRPC status, pymilvus's connection errors, OS-level resets and timeouts) or a Milvus error code that
    a reconnect or reload cures, or one the server marks retriable."""
    pm = import_pymilvus()
    lost = (
        pm.exceptions.ConnectError,
        pm.exceptions.MilvusUnavailableException,
        ConnectionError,
        TimeoutError,
    )
    for cause in _causes(exc):
        if isinstance(cause, lost) or _grpc_status(cause) in _TRANSIENT_GRPC:
            return True
        code = _milvus_code(cause)
        if code in TRANSIENT_CODES or code in _TRANSIENT_GRPC or getattr(cause, "retriable", False) is True:
            return True
    return False


def is_not_found(exc: BaseException) -> bool:
    """Whether Milvus said the collection, index or database does not exist."""
    pm = import_pymilvus()
    missing = (pm.exceptions.CollectionNotExistException, pm.exceptions.IndexNotExistException)
    return isinstance(exc, missing) or _milvus_code(exc) in NOT_FOUND_CODES


class ResilientClient:
    """A MilvusClient stand-in: each call that fails transiently reconnects (once per outage, whichever
    thread sees it first), reloads the collection and is retried with backoff, for up to `patience_s`
    seconds (always once on a fresh connection); then `UnavailableError` (503)."""

    def __init__(
        self,
        pm: ModuleType,
        target: str,
        collection: str,
        kwargs: dict[str, Any],
        *,
        patience_s: float = 10.0,
    ) -> None:
        self.pm, self.target, self.collection, self.kwargs = pm, target, collection, kwargs
        self.patience_s = patience_s
        self._lock = threading.Lock()
        self._generation = 0
        self.client = self._connect()

    def _connect(self) -> Any:
        return self.pm.MilvusClient(self.target, dedicated=True, **self.kwargs)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        if not callable(method) or name in ("close", "create_schema", "prepare_index_params"):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(name, args, kwargs)

        return call

    def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """`client.<name>(*args, **kwargs)` on the current connection, retried while the failure is
        transient (or the connection it ran on was replaced meanwhile by another thread)."""
        seen = self._generation

        def attempt() -> Any:
            nonlocal seen
            seen = self._generation
            return getattr(self.client, name)(*args, **kwargs)

        def recover(state: RetryCallState) -> None:
            log.warning("milvus %s: %s failed (%s); reconnecting", self.collection, name, _failure(state))
            self._recover(seen)

        def give_up(state: RetryCallState) -> NoReturn:
            exc = _failure(state)
            log.error("milvus at %s: %s failed for %.0f s: %s", self.target, name, self.patience_s, exc)
            raise UnavailableError(UNAVAILABLE) from exc

        retrying = Retrying(
            retry=retry_if_exception(lambda exc: is_transient(exc) or seen != self._generation),
            # At least one retry on a fresh connection, then until `patience_s` has passed.
            stop=stop_after_attempt(2) & stop_after_delay(self.patience_s),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            before_sleep=recover,
            retry_error_callback=give_up,
        )
        return retrying(attempt)

    def _recover(self, seen: int) -> None:
        """Reopen the connection and load the collection, unless another thread already did."""
        with self._lock:
            if self._generation != seen:
                return
            try:
                fresh = self._connect()
                if fresh.has_collection(self.collection):
                    fresh.load_collection(self.collection)
            except Exception as exc:  # noqa: BLE001 - still down: the caller waits and tries again
                log.warning("milvus %s: reconnect failed: %s", self.collection, exc)
                return
            old, self.client = self.client, fresh
            self._generation += 1
            with contextlib.suppress(Exception):  # the old channel is dead anyway
                old.close()
            log.info("milvus %s: reconnected and collection loaded", self.collection)


def _failure(state: RetryCallState) -> BaseException:
    """The exception the last attempt raised."""
    exc = state.outcome.exception() if state.outcome is not None else None
    assert exc is not None  # tenacity retries and gives up on failed attempts only
    return exc


def acquire_lite(path: str) -> None:
    """Count one more store on the Milvus Lite file `path`."""
    with _lite_lock:
        _lite_users[path] = _lite_users.get(path, 0) + 1


def release_lite(path: str) -> None:
    """Count one store less on `path`; the last one stops its in-process server."""
    if not path:
        return
    with _lite_lock:
        users = _lite_users.get(path, 0) - 1
        if users > 0:
            _lite_users[path] = users
            return
        _lite_users.pop(path, None)
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:
            return
        # Stopping the in-process server frees the file lock for other processes.
        server_manager_instance.release_server(path)
