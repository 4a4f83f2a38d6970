"""Every shared-state test runs on the in-process backend and on the real Redis at 127.0.0.1:6379."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.config import Settings, load_settings
from tests.servers import REDIS_URL, redis_available, redis_prefix


@pytest.fixture(params=["local", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """ "local", or "redis" with a key prefix of this test's own (deleted afterwards)."""
    if request.param == "local":
        yield "local"
        return
    if not redis_available():
        pytest.skip(f"no Redis server at {REDIS_URL} on this machine")
    with redis_prefix() as prefix:
        yield prefix


def settings_for(backend: str, **overrides: object) -> Settings:
    """Settings using Redis under the test's prefix, or none."""
    redis = {} if backend == "local" else {"url": REDIS_URL, "prefix": backend}
    return load_settings(redis=redis, **overrides)


@pytest.fixture
def redis_only() -> Iterator[str]:
    """A key prefix of this test's own on the real Redis (deleted afterwards)."""
    if not redis_available():
        pytest.skip(f"no Redis server at {REDIS_URL} on this machine")
    with redis_prefix() as prefix:
        yield prefix
