"""`AsyncLoreClient`: the Lore HTTP API from Python, for asyncio (httpx); methods in base.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import aclosing
from typing import Any, Self, TypeVar

import httpx

from lore.client.base import BaseClient
from lore.client.models import AskEvent
from lore.client.wire import Call, Flow, Steps, ask_event, event_source, raise_for, sending

T = TypeVar("T")


class AsyncLoreClient(BaseClient[httpx.AsyncClient, httpx.AsyncBaseTransport]):
    """The Lore API for asyncio: `AsyncLoreClient("http://127.0.0.1:8000", api_key=KEY)` (or LORE_SERVER /
    LORE_API_KEY); every method (awaited) raises `LoreAPIError` when the server refuses."""

    _connect = httpx.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @staticmethod
    def _method(build: Callable[..., Call[T] | Flow[T]]) -> Callable[..., Coroutine[Any, Any, T]]:
        async def method(client: AsyncLoreClient, /, *args: Any, **kwargs: Any) -> T:
            return await client._run(build(*args, **kwargs))

        return method

    async def _run(self, step: Call[T] | Flow[T]) -> T:
        steps = Steps(step)
        while steps.call is not None:
            steps.give(await self._execute(steps.call))
        value: T = steps.value
        return value

    async def _execute(self, call: Call[T]) -> T:
        if call.events is None:
            with sending(call, self.base_url) as request:
                return call.read(await self._http.request(**request))
        seen: list[AskEvent] = []
        async with aclosing(self._events(call)) as events:
            async for event in events:
                if call.events.take(event, seen):
                    break
        return call.parse(seen)

    async def _events(self, call: Call[Any]) -> AsyncGenerator[AskEvent, None]:
        with sending(call, self.base_url) as request:
            async with self._http.stream(**request) as response:
                raise_for(response, None if response.is_success else await response.aread())
                async with aclosing(event_source(response).aiter_sse()) as events:
                    async for sse in events:
                        if (event := ask_event(sse)) is not None:
                            yield event
