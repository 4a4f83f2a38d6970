"""`LoreClient`: the Lore HTTP API from Python, blocking (httpx); methods in base.py."""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import closing
from typing import Any, Self, TypeVar

import httpx

from lore.client.base import BaseClient
from lore.client.models import AskEvent
from lore.client.wire import Call, Flow, Steps, ask_event, event_source, raise_for, sending

T = TypeVar("T")


class LoreClient(BaseClient[httpx.Client, httpx.BaseTransport]):
    """The Lore API, blocking: `LoreClient("http://127.0.0.1:8000", api_key=KEY)` (or LORE_SERVER /
    LORE_API_KEY); every method raises `LoreAPIError` when the server refuses."""

    _connect = httpx.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _method(build: Callable[..., Call[T] | Flow[T]]) -> Callable[..., T]:
        def method(client: LoreClient, /, *args: Any, **kwargs: Any) -> T:
            return client._run(build(*args, **kwargs))

        return method

    def _run(self, step: Call[T] | Flow[T]) -> T:
        steps = Steps(step)
        while steps.call is not None:
            steps.give(self._execute(steps.call))
        value: T = steps.value
        return value

    def _execute(self, call: Call[T]) -> T:
        if call.events is None:
            with sending(call, self.base_url) as request:
                return call.read(self._http.request(**request))
        seen: list[AskEvent] = []
        with closing(self._events(call)) as events:
            for event in events:
                if call.events.take(event, seen):
                    break
        return call.parse(seen)

    def _events(self, call: Call[Any]) -> Generator[AskEvent, None, None]:
        with sending(call, self.base_url) as request, self._http.stream(**request) as response:
            raise_for(response, None if response.is_success else response.read())
            for sse in event_source(response).iter_sse():
                if (event := ask_event(sse)) is not None:
                    yield event
