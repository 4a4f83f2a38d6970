"""Lexical indexes built by an older tokenizer (`TOKENIZER_VERSION`) re-tokenised in place on open:
BM25 tokens are recomputed from each stored chunk's own text; vectors are kept as they are."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from lore.lexical import TOKENIZER_VERSION, tokenize
from lore.schema import Chunk, index_text

log = logging.getLogger("lore.store")

BATCH = 1000  # chunks per transaction (embedded) or per read-and-upsert round (Milvus)
_KEY = "tokenizer"  # the embedded store's store_meta key, and the Milvus collection property
_MILVUS_PROPERTY = "lore.tokenizer"


def index_tokens(chunk: Chunk) -> list[str]:
    """The BM25 tokens of a chunk, as the ingest pipeline writes them."""
    return tokenize(index_text(chunk))


def joined_tokens(tokens: list[str]) -> str:
    """The embedded store's `tokens` column: tokens joined by spaces (a space inside one becomes _)."""
    return " ".join(t.replace(" ", "_") for t in tokens)


class Reporter:
    """Progress of one re-tokenisation, to the `lore.store` log (stderr when nothing is configured)."""

    def __init__(self, what: str, found: int, total: int) -> None:
        self.what, self.total, self.started, self.last = what, total, time.monotonic(), 0.0
        log.warning(
            "%s: BM25 index built by tokenizer %s, re-tokenising %d chunks for tokenizer %d "
            "(vectors kept)",
            what, found, total, TOKENIZER_VERSION,
        )  # fmt: skip

    def step(self, done: int) -> None:
        if time.monotonic() - self.last >= 5.0 and done < self.total:
            self.last = time.monotonic()
            log.warning("%s: re-tokenised %d/%d chunks", self.what, done, self.total)

    def finish(self, done: int) -> None:
        log.warning("%s: re-tokenised %d chunks in %.1f s", self.what, done, time.monotonic() - self.started)


def stamp_embedded(db: sqlite3.Connection) -> None:
    """Record the current tokenizer on a store with no rows yet (a new store needs no upgrade)."""
    db.execute(
        "INSERT OR IGNORE INTO store_meta SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM chunks)",
        (_KEY, str(TOKENIZER_VERSION)),
    )


def upgrade_embedded(db: sqlite3.Connection, what: str, chunk_of: Callable[[tuple[Any, ...]], Chunk]) -> int:
    """Re-tokenise an embedded store's rows if an older tokenizer wrote them; returns rows re-tokenised.

    One transaction per batch, resumable (the last rid done is recorded), and safe when two processes
    open the store at once: each batch re-reads the progress under the write lock. Every batch bumps
    the store generation, so open readers and the index snapshot reload.
    """
    stamp_embedded(db)
    if _embedded_version(db) == TOKENIZER_VERSION:
        return 0
    done_key = f"{_KEY}_{TOKENIZER_VERSION}_rid"
    total = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    reporter = Reporter(what, _embedded_version(db), total)
    done = 0
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            if _embedded_version(db) == TOKENIZER_VERSION:  # another process finished it
                db.execute("COMMIT")
                break
            after = db.execute("SELECT value FROM store_meta WHERE key = ?", (done_key,)).fetchone()
            rows = db.execute(
                "SELECT rid, meta, text, parent_text FROM chunks WHERE rid > ? ORDER BY rid LIMIT ?",
                (int(after[0]) if after else 0, BATCH),
            ).fetchall()
            if rows:
                db.executemany(
                    "UPDATE chunks SET tokens = ? WHERE rid = ?",
                    [(joined_tokens(index_tokens(chunk_of(tuple(r[1:])))), r[0]) for r in rows],
                )
                db.execute("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", (done_key, str(rows[-1][0])))
            else:
                db.execute("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", (_KEY, str(TOKENIZER_VERSION)))
                db.execute("DELETE FROM store_meta WHERE key = ?", (done_key,))
            db.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'generation'")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if not rows:
            break
        done += len(rows)
        reporter.step(done)
    reporter.finish(done)
    return done


def _embedded_version(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM store_meta WHERE key = ?", (_KEY,)).fetchone()
    return int(row[0]) if row else 1  # stores from before the version was recorded: tokenizer 1


def milvus_version(client: Any, name: str) -> int:
    """The tokenizer a Milvus collection's `lex` column was written with (1 when none is recorded)."""
    properties = client.describe_collection(name).get("properties") or {}
    return int(properties.get(_MILVUS_PROPERTY, 1))


def stamp_milvus(client: Any, name: str) -> None:
    """Record the current tokenizer on a Milvus collection."""
    client.alter_collection_properties(name, properties={_MILVUS_PROPERTY: str(TOKENIZER_VERSION)})
