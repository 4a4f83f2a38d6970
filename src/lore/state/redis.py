"""One Redis client per process (connection-pooled, thread-safe), made from `[redis] url`."""

from __future__ import annotations

import threading
from typing import Any

from lore.errors import ConfigError, MissingDependencyError

_clients: dict[str, Any] = {}
_lock = threading.Lock()


def redis_client(url: str) -> Any:
    """The process's client for `url` (created on first use; a bad URL is a `ConfigError`)."""
    with _lock:
        if url not in _clients:
            try:
                import redis
            except ImportError as exc:
                raise MissingDependencyError(
                    '[redis] url is set but redis-py is missing: pip install "lore-kb[redis]"'
                ) from exc
            try:
                _clients[url] = redis.Redis.from_url(
                    url,
                    socket_timeout=5.0,
                    socket_connect_timeout=5.0,
                    health_check_interval=30,
                    retry_on_timeout=True,
                )
            except ValueError as exc:
                raise ConfigError(f"redis.url {url!r}: {exc}") from exc
        return _clients[url]


def redis_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a lost or failing Redis raises (caches treat them as a miss)."""
    import redis

    return (redis.RedisError, OSError)
