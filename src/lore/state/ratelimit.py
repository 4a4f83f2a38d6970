"""Per-key rate limits: a token bucket in this process, or one in Redis that every replica shares."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from lore.config import Settings
from lore.state.redis import redis_client, redis_errors

log = logging.getLogger("lore.ratelimit")


class RateLimiter(Protocol):
    """`per_minute` requests a minute per key, with bursts of the same size; 0 = no limit."""

    per_minute: int

    def check(self, key_id: str) -> float:
        """0 if the request may go ahead (and count it), else the seconds until it may."""


class LocalRateLimiter:
    """A token bucket per key in this process (one replica, one worker)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, key_id: str) -> float:
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


# The same bucket, atomically in Redis: KEYS[1] = the key's bucket; ARGV = capacity, tokens per second.
# Redis's own clock (TIME) is used, so replicas with skewed clocks agree.
_BUCKET = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens < 1 then
  wait = (1 - tokens) / rate
else
  tokens = tokens - 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / rate) + 1)
return tostring(wait)
"""


class RedisRateLimiter:
    """The token bucket in Redis (`<prefix>:rate:<key id>`), one Lua call per request: global across
    replicas and workers. If Redis fails, requests go ahead (logged): a limit is not worth an outage."""

    def __init__(self, per_minute: int, client: Any, prefix: str) -> None:
        self.per_minute, self.prefix = per_minute, prefix
        self._script = client.register_script(_BUCKET)

    def check(self, key_id: str) -> float:
        if self.per_minute <= 0:
            return 0.0
        try:
            wait = self._script(
                keys=[f"{self.prefix}:rate:{key_id}"], args=[self.per_minute, self.per_minute / 60.0]
            )
        except redis_errors() as exc:
            log.warning("rate limit: Redis unavailable, request allowed: %s", exc)
            return 0.0
        return float(wait)


def make_rate_limiter(settings: Settings) -> RateLimiter:
    """Redis-backed when `[redis] url` is set, else in-process."""
    per_minute = settings.api.rate_limit_per_minute
    if settings.redis.url:
        return RedisRateLimiter(per_minute, redis_client(settings.redis.url), settings.redis.prefix)
    return LocalRateLimiter(per_minute)
