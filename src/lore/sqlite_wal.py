"""Switching an SQLite file to WAL when other processes may be opening it at the same moment."""

from __future__ import annotations

import sqlite3
import time
from typing import Protocol


class _Executes(Protocol):
    def execute(self, sql: str, /) -> object: ...


def switch_to_wal(db: _Executes, timeout_s: float = 30.0) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the write lock.

    SQLite answers the switch with SQLITE_BUSY at once (its busy handler never waits) while another
    connection holds RESERVED — e.g. a server and a worker, or two test workers, creating one file together.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
