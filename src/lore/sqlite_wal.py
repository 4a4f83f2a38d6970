"""Switching an SQLite file to WAL when other processes may be opening it at the same moment."""

from __future__ import annotations

import sqlite3
from typing import Protocol

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential


class _Executes(Protocol):
    def execute(self, sql: str, /) -> object: ...


def _busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.OperationalError)
        and code is not None
        and code & 0xFF
        in (
            sqlite3.SQLITE_BUSY,
            sqlite3.SQLITE_LOCKED,
        )
    )


def switch_to_wal(db: _Executes, timeout_s: float = 30.0) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the write lock.

    SQLite answers the switch with SQLITE_BUSY at once (its busy handler never waits) while another
    connection holds RESERVED — e.g. a server and a worker, or two test workers, creating one file together.
    """
    for attempt in Retrying(
        retry=retry_if_exception(_busy),
        wait=wait_exponential(multiplier=0.01, max=0.5),
        stop=stop_after_delay(timeout_s),
        reraise=True,
    ):
        with attempt:
            db.execute("PRAGMA journal_mode=WAL")
