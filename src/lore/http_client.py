"""What Lore's HTTP clients (embedding, rerank and chat endpoints) share: the client itself with its
API key, what is transient, how long to wait before retrying, and a retried JSON POST."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

import httpx
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt

from lore.errors import LoreError

SNIPPET = 300  # characters of an error body quoted in messages
T = TypeVar("T")


class TransientError(LoreError):
    """A failure worth retrying: connection error, timeout, HTTP 429 or 5xx."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after(response: httpx.Response, cap_s: float) -> float | None:
    """The server's Retry-After in seconds (capped), or None when absent or not a number."""
    try:
        return max(0.0, min(float(response.headers.get("retry-after", "")), cap_s))
    except ValueError:
        return None


def transport_failure(where: str, exc: httpx.TransportError) -> TransientError:
    """A timeout or connection failure, as the retryable error that names the endpoint."""
    if isinstance(exc, httpx.TimeoutException):
        return TransientError(f"{where}: timed out ({type(exc).__name__})")
    return TransientError(f"{where}: connection failed: {exc or type(exc).__name__}")


def status_failure(
    where: str, response: httpx.Response, body: str, error: type[LoreError], cap_s: float
) -> LoreError:
    """A non-200 reply: 429 and 5xx are transient (retried, honouring Retry-After), the rest `error`."""
    message = f"{where}: HTTP {response.status_code}: {body[:SNIPPET].strip() or response.reason_phrase}"
    if response.status_code == 429 or response.status_code >= 500:
        return TransientError(message, retry_after(response, cap_s))
    return error(message)


def with_retries(
    fn: Callable[[Any], T],
    arg: Any,
    *,
    max_retries: int,
    backoff_s: float,
    cap_s: float,
    error: type[LoreError],
) -> T:
    """Call `fn(arg)`, retrying TransientError with exponential backoff (or Retry-After);
    when attempts run out, raise `error` with the last reason."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return exc.retry_after
        delay: float = backoff_s * 2 ** (state.attempt_number - 1)
        return min(delay, cap_s)

    retrying = Retrying(
        retry=retry_if_exception_type(TransientError), stop=stop_after_attempt(max_retries + 1), wait=wait
    )
    try:
        return retrying(fn, arg)
    except RetryError as exc:
        last = exc.last_attempt.exception()
        raise error(f"{last} (gave up after {max_retries + 1} attempts)") from last


class EndpointClient:
    """An httpx client with a bearer key from the argument or the first set env variable, and its endpoint's
    retries: `max_retries` and `backoff_s` (set by the subclass), waits capped at `max_wait_s`; what is not
    retried (or no longer) raises `failure`."""

    failure: type[LoreError] = LoreError
    max_wait_s = 20.0
    max_retries: int
    backoff_s: float

    def __init__(self, api_key: str | None, key_env: Sequence[str], timeout: httpx.Timeout) -> None:
        key = api_key or next((os.environ[v] for v in key_env if os.environ.get(v)), None)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout)

    def retrying(self, fn: Callable[[Any], T], arg: Any) -> T:
        """`fn(arg)` with this endpoint's retries (see `with_retries`)."""
        return with_retries(
            fn,
            arg,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            cap_s=self.max_wait_s,
            error=self.failure,
        )

    def post_json(self, url: str, body: Any, where: str) -> Any:
        """POST `body` to `url` and return its JSON reply, retried; `where` names the endpoint in errors."""
        return self.retrying(lambda b: self._post_json_once(url, b, where), body)

    def _post_json_once(self, url: str, body: Any, where: str) -> Any:
        try:
            response = self._client.post(url, json=body)
        except httpx.TransportError as exc:
            raise transport_failure(where, exc) from exc
        if response.status_code != 200:
            raise status_failure(where, response, response.text, self.failure, self.max_wait_s)
        try:
            return response.json()
        except ValueError as exc:
            raise self.failure(f"{where}: response is not JSON: {response.text[:SNIPPET]!r}") from exc

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
