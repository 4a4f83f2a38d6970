"""The service fixtures of tests/api (a real sample KB with a second tenant's document, keys, a live
uvicorn); coroutine tests here (LangChain's standard async tests) run under pytest-asyncio."""

from __future__ import annotations

import inspect
from collections.abc import Generator
from typing import Any

import pytest

from tests.api.conftest import api_home, app, keys, live, lore  # noqa: F401  (pytest fixtures)


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, Any, None]:
    """Mark `async def` tests for pytest-asyncio (strict mode) before it converts them; inherited standard
    tests cannot carry the mark themselves, and a class-wide mark would also land on the sync ones."""
    outcome = yield
    items = outcome.get_result()
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.add_marker(pytest.mark.asyncio)
