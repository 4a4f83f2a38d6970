"""Milvus connections that survive a server restart: credentials, database and TLS from `[store]`,
and a client that reconnects and reloads a `released` collection, then retries the call once; and the
count of stores sharing one Milvus Lite file."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from types import ModuleType
from typing import Any, cast

from lore.errors import MissingDependencyError, UnavailableError

log = logging.getLogger("lore.store.milvus")
_INSTALL_HINT = 'pip install "pymilvus[milvus_lite]"'
# Milvus Lite runs one in-process server per file; it is stopped when the last store using it closes.
_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}
# What a caller is told (no address, no exception text: those go to the log).
UNAVAILABLE = "the vector store (Milvus) is unavailable; try again shortly"

# Messages of failures a reconnect or a reload cures (lost channel, server restarted, collection released).
_TRANSIENT = (
    "connect",
    "unavailable",
    "released",
    "not loaded",
    "not load",
    "deadline",
    "channel",
    "socket",
    "closed",
    "reset",
    "refused",
    "timeout",
    "server is not ready",
    "broken pipe",
)


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


def is_transient(exc: BaseException) -> bool:
    """Whether a failed call may work after reconnecting or reloading the collection."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in _TRANSIENT)


class ResilientClient:
    """A MilvusClient stand-in: each call that fails transiently reconnects (once per outage, whichever
    thread sees it first), reloads the collection and is retried, for up to `patience_s` seconds; then
    `UnavailableError` (503)."""

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
            deadline = time.monotonic() + self.patience_s
            delay, retried = 0.2, False
            while True:
                generation = self._generation
                try:
                    return getattr(self.client, name)(*args, **kwargs)
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    if retried and time.monotonic() >= deadline:  # always one retry on a fresh connection
                        log.error(
                            "milvus at %s: %s failed for %.0f s: %s", self.target, name, self.patience_s, exc
                        )
                        raise UnavailableError(UNAVAILABLE) from exc
                    log.warning("milvus %s: %s failed (%s); reconnecting", self.collection, name, exc)
                    self._recover(generation)
                    retried = True
                    time.sleep(delay)
                    delay = min(delay * 2, 2.0)

        return call

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
