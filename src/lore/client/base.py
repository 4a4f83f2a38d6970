"""What `LoreClient` and `AsyncLoreClient` share: their settings, and every API method, made once from its
call in calls.py (same name, arguments and docstring on both clients)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Generic, ParamSpec, Self, TypeVar, overload

import httpx

from lore.client import calls
from lore.client.models import AskEvent
from lore.client.wire import Call, Flow, headers, settings_from_env

P = ParamSpec("P")
T = TypeVar("T")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)
X = TypeVar("X", httpx.BaseTransport, httpx.AsyncBaseTransport)


class _Declared:
    """A client method declared by its call's builder; each client class gets it as a real method (its
    name, arguments and docstring the builder's) from `method_for`."""

    build: Callable[..., Any]

    def method_for(self, cls: type[BaseClient[Any, Any]]) -> Callable[..., Any]:
        method = functools.update_wrapper(self._make(cls), self.build)
        method.__qualname__ = f"{cls.__name__}.{self.build.__name__}"
        signature = inspect.signature(self.build)
        this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        method.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[this, *signature.parameters.values()], return_annotation=inspect.Signature.empty
        )
        return method

    def _make(self, cls: type[BaseClient[Any, Any]]) -> Callable[..., Any]:
        raise NotImplementedError

    def __get__(self, client: BaseClient[Any, Any] | None, owner: type) -> Any:
        return self  # only on BaseClient itself: its subclasses have the methods


class Method(_Declared, Generic[P, T]):
    """An API method from its call: on `LoreClient` it returns the result, on `AsyncLoreClient` it is a
    coroutine function."""

    def __init__(self, build: Callable[P, Call[T] | Flow[T]]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: BaseClient[httpx.Client, Any], owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, client: BaseClient[httpx.AsyncClient, Any], owner: type
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: BaseClient[Any, Any] | None, owner: type) -> Any:
        return super().__get__(client, owner)

    def _make(self, cls: type[BaseClient[Any, Any]]) -> Callable[..., Any]:
        return cls._method(self.build)


class EventStream(_Declared, Generic[P]):
    """An API method that yields its call's server-sent events as they arrive (an async iterator on
    `AsyncLoreClient`)."""

    def __init__(self, build: Callable[P, Call[Any]]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(
        self, client: BaseClient[httpx.Client, Any], owner: type
    ) -> Callable[P, Iterator[AskEvent]]: ...
    @overload
    def __get__(
        self, client: BaseClient[httpx.AsyncClient, Any], owner: type
    ) -> Callable[P, AsyncIterator[AskEvent]]: ...
    def __get__(self, client: BaseClient[Any, Any] | None, owner: type) -> Any:
        return super().__get__(client, owner)

    def _make(self, cls: type[BaseClient[Any, Any]]) -> Callable[..., Any]:
        build = self.build

        def method(client: BaseClient[Any, Any], /, *args: Any, **kwargs: Any) -> Any:
            return client._events(build(*args, **kwargs))

        return method


class BaseClient(Generic[H, X]):
    """A `lore serve` service at `base_url` with `api_key` (or LORE_SERVER / LORE_API_KEY).

    Every method raises `LoreAPIError` (with the server's status and message) when the server refuses.
    """

    _connect: Callable[..., H]  # httpx.Client or httpx.AsyncClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: X | None = None,
    ) -> None:
        self.base_url, key = settings_from_env(base_url, api_key)
        self._http: H = self._connect(
            base_url=self.base_url,
            headers=headers(key),
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, declared in vars(BaseClient).items():  # a client's own subclass keeps its overrides
            if isinstance(declared, _Declared) and isinstance(getattr(cls, name), _Declared):
                setattr(cls, name, declared.method_for(cls))

    @staticmethod
    def _method(build: Callable[..., Call[Any] | Flow[Any]]) -> Callable[..., Any]:
        """A method that builds the call from its arguments and runs it (a coroutine on the async client)."""
        raise NotImplementedError

    def _events(self, call: Call[Any]) -> Any:
        """The call's server-sent events as they arrive."""
        raise NotImplementedError

    # --- knowledge bases and files ------------------------------------------------------------

    me = Method(calls.me)
    list_kbs = Method(calls.list_kbs)
    get_kb = Method(calls.get_kb)
    create_kb = Method(calls.create_kb)
    delete_kb = Method(calls.delete_kb)
    upload = Method(calls.upload)
    list_files = Method(calls.list_files)
    delete_file = Method(calls.delete_file)
    ingest = Method(calls.ingest)
    ingest_url = Method(calls.ingest_url)
    upload_and_ingest = Method(calls.upload_and_ingest)

    # --- builds and versions ------------------------------------------------------------------

    build = Method(calls.build)
    versions = Method(calls.versions)
    activate = Method(calls.activate)
    rollback = Method(calls.rollback)
    report = Method(calls.report)

    # --- search and answers -------------------------------------------------------------------

    search = Method(calls.search)
    ask_stream = EventStream(calls.ask_stream)
    ask = Method(calls.ask)
    get_passage = Method(calls.get_passage)
    get_document = Method(calls.get_document)

    # --- sessions and feedback ----------------------------------------------------------------

    sessions = Method(calls.sessions)
    session = Method(calls.session)
    delete_session = Method(calls.delete_session)
    feedback = Method(calls.feedback)
