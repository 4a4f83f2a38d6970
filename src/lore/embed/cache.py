"""A persistent embedding cache (SQLite) and `embed_texts`, which embeds each distinct text only once."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from lore.embed.base import Embedder, InputKind
from lore.errors import LoreError
from lore.sqlite_wal import switch_to_wal
from lore.state.redis import redis_errors

log = logging.getLogger("lore.embed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, kind, text_sha256)
) WITHOUT ROWID
"""
_CHUNK = 500  # keys per SELECT, below SQLite's bound-parameter limit
_DTYPE = np.dtype("<f4")


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors keyed by (model_id, kind, sha256 of the text) in one SQLite file; safe across threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            switch_to_wal(self._db, timeout_s=30.0)
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise LoreError(f"{self.path}: cannot open embedding cache: {exc}") from exc
        self._lock = threading.Lock()

    def get_many(self, model_id: str, kind: InputKind, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """Return {index in `texts`: vector} for the texts already cached."""
        positions: dict[bytes, list[int]] = {}
        for i, text in enumerate(texts):
            positions.setdefault(_digest(text), []).append(i)
        keys = list(positions)
        found: dict[int, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    "SELECT text_sha256, vector FROM embeddings WHERE model_id = ? AND kind = ?"
                    f" AND text_sha256 IN ({marks})",
                    (model_id, kind, *chunk),
                ).fetchall()
                for digest, blob in rows:
                    vector = np.frombuffer(blob, dtype=_DTYPE).astype(np.float32)
                    for i in positions[digest]:
                        found[i] = vector
        return found

    def put_many(
        self, model_id: str, kind: InputKind, texts: Sequence[str], vectors: np.ndarray | Sequence[np.ndarray]
    ) -> None:
        """Store one vector per text (replacing any cached one)."""
        if len(texts) != len(vectors):
            raise ValueError(f"put_many: {len(texts)} texts but {len(vectors)} vectors")
        rows = [
            (model_id, kind, _digest(text), np.asarray(vector, dtype=_DTYPE).tobytes())
            for text, vector in zip(texts, vectors, strict=True)
        ]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors (for one model, or all)."""
        sql = "SELECT COUNT(*) FROM embeddings"
        args: tuple[str, ...] = ()
        if model_id is not None:
            sql, args = sql + " WHERE model_id = ?", (model_id,)
        with self._lock:
            return int(self._db.execute(sql, args).fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisEmbeddingCache(EmbeddingCache):
    """The same cache in Redis (`<prefix>:emb:<model>:<kind>:<sha256>`), shared by every replica and worker.

    Entries are content-addressed, so they never go stale; they expire after `ttl_s` (and under Redis's
    maxmemory policy). A failing Redis is a miss, never an error.
    """

    def __init__(self, client: Any, prefix: str, ttl_s: int) -> None:
        self.client, self.prefix, self.ttl_s = client, prefix, ttl_s
        self.path = Path(f"redis:{prefix}")

    def _key(self, model_id: str, kind: str, text: str) -> str:
        return f"{self.prefix}:emb:{model_id}:{kind}:{_digest(text).hex()}"

    def get_many(self, model_id: str, kind: InputKind, texts: Sequence[str]) -> dict[int, np.ndarray]:
        if not texts:
            return {}
        try:
            blobs = self.client.mget([self._key(model_id, kind, t) for t in texts])
        except redis_errors() as exc:
            log.warning("embedding cache: Redis unavailable, embedding again: %s", exc)
            return {}
        return {i: np.frombuffer(b, dtype=_DTYPE).astype(np.float32) for i, b in enumerate(blobs) if b}

    def put_many(
        self, model_id: str, kind: InputKind, texts: Sequence[str], vectors: np.ndarray | Sequence[np.ndarray]
    ) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"put_many: {len(texts)} texts but {len(vectors)} vectors")
        try:
            pipe = self.client.pipeline(transaction=False)
            for text, vector in zip(texts, vectors, strict=True):
                pipe.set(
                    self._key(model_id, kind, text), np.asarray(vector, dtype=_DTYPE).tobytes(), ex=self.ttl_s
                )
            pipe.execute()
        except redis_errors() as exc:
            log.warning("embedding cache: Redis unavailable, vectors not stored: %s", exc)

    def count(self, model_id: str | None = None) -> int:
        pattern = f"{self.prefix}:emb:{model_id or '*'}:*"
        return sum(1 for _ in self.client.scan_iter(match=pattern, count=1000))

    def close(self) -> None:
        """Nothing to close: the process's Redis client is shared."""


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    kind: InputKind,
    cache: EmbeddingCache | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Embed `texts` in input order, embedding each distinct uncached text once, in `batch_size` batches.

    `on_batch(n_done)` gets the cumulative number of input texts ready (cache hits count at once).
    """
    dim = embedder.dim
    slots: dict[str, int] = {}  # distinct text -> row in `unique`
    where = [slots.setdefault(text, len(slots)) for text in texts]
    distinct = list(slots)
    weight = np.bincount(np.asarray(where, dtype=np.int64), minlength=len(distinct))
    unique = np.zeros((len(distinct), dim), dtype=np.float32)
    hits = cache.get_many(embedder.model_id, kind, distinct) if cache is not None else {}
    hits = {i: v for i, v in hits.items() if v.shape == (dim,)}  # another dim: stale, embed again
    for i, vector in hits.items():
        unique[i] = vector
    done = int(weight[list(hits)].sum()) if hits else 0
    if on_batch is not None and done:
        on_batch(done)
    misses = [i for i in range(len(distinct)) if i not in hits]
    step = max(1, embedder.batch_size)
    for start in range(0, len(misses), step):
        batch = misses[start : start + step]
        batch_texts = [distinct[i] for i in batch]
        vectors = np.asarray(embedder.embed_batch(batch_texts, kind), dtype=np.float32)
        if vectors.shape != (len(batch), dim):
            raise LoreError(
                f"embedder {embedder.model_id}: returned shape {vectors.shape} for {len(batch)} texts, "
                f"expected ({len(batch)}, {dim})"
            )
        unique[batch] = vectors
        if cache is not None:
            cache.put_many(embedder.model_id, kind, batch_texts, vectors)
        done += int(weight[batch].sum())
        if on_batch is not None:
            on_batch(done)
    return unique[np.asarray(where, dtype=np.int64)] if where else np.empty((0, dim), dtype=np.float32)
