"""The embedded default store: SQLite file for durability, numpy/scipy in memory for search.

Writes are SQLite transactions (a crash leaves the last committed state, and ids are
deterministic so a re-run is idempotent). Dense searches are exact below `[store] ann_min_rows` live
rows; above, an HNSW graph proposes candidates that are rescored exactly. Another process's commit is
noticed through a generation counter and triggers a reload. A rebuilt or changed in-memory index is saved
next to the file as a snapshot (its graph beside it, memory-mapped on open; above the switch-over the
float vectors too, until a write appends rows), reused only while the file is still at that generation.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from lore.config import StoreSettings
from lore.schema import Chunk, Hit, SearchFilter
from lore.sqlite_wal import switch_to_wal
from lore.store.ann_index import AnnIndex, AnnParams
from lore.store.base import StoreQuery
from lore.store.fusion import rrf
from lore.store.memory_index import SCALAR_FIELDS, Columns, MemoryIndex, _top
from lore.store.retokenise import joined_tokens, upgrade_embedded
from lore.store.snapshot import graph_files, read_snapshot, write_snapshot

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
  rid INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id TEXT NOT NULL UNIQUE,
  tenant_id TEXT, dataset_id TEXT, visibility TEXT, source_type TEXT, source TEXT, document_id TEXT,
  allowed_roles TEXT, valid_from_seq INTEGER, valid_to_seq INTEGER,
  meta TEXT, text TEXT, parent_text TEXT, tokens TEXT, vector BLOB
);
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT);
INSERT OR IGNORE INTO store_meta VALUES ('generation', '0');
INSERT OR IGNORE INTO store_meta VALUES ('store_id', lower(hex(randomblob(16))));
"""
_COLUMNS = ("chunk_id", *SCALAR_FIELDS, "allowed_roles", "valid_from_seq", "valid_to_seq")
_TEXT_FIELDS = {"text", "parent_text"}


class EmbeddedStore:
    """One SQLite file per collection under `<data_dir>/embedded/`, searched in memory."""

    bm25_scores_are_scoped = True  # BM25 statistics over the caller's visible chunks

    def __init__(
        self, collection: str, data_dir: Path, dim: int, uri: str = "", connection: object = None
    ) -> None:
        folder = Path(uri) if uri else Path(data_dir) / "embedded"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{collection}.sqlite"
        self.snapshot = folder / f"{collection}.index"  # a cache of the in-memory index
        self.dim = dim
        self.ann_params = AnnParams.from_settings(
            connection if isinstance(connection, StoreSettings) else None
        )
        self._db: sqlite3.Connection | None = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None
        )
        switch_to_wal(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        # A store whose BM25 tokens an older tokenizer wrote is re-tokenised before its first search.
        upgrade_embedded(self._db, f"embedded store {collection!r}", _chunk_from_row)
        self._index: MemoryIndex | None = None
        self._generation = -1
        self._saved_generation = -1  # the generation the snapshot on disk holds, as far as we know
        self._ann_lock = threading.Lock()  # one graph per index, also when searches race to build it
        self._saver: threading.Thread | None = None  # writing the snapshot after a rebuild
        self._loading = threading.Lock()  # one (re)load at a time: it holds a read transaction

    @property
    def _conn(self) -> sqlite3.Connection:
        """The open connection (set from `__init__` until `close` or `drop`)."""
        assert self._db is not None, "the store is closed"
        return self._db

    # --- writes -----------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[list[str]]) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(chunks), self.dim):
            raise ValueError(f"vectors shape {vectors.shape} != ({len(chunks)}, {self.dim})")
        self._memory()  # held in memory while writing, so the graph grows with the rows
        with self._write():
            ids = [c.chunk_id for c in chunks]
            self._conn.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(i,) for i in ids])
            sql = (
                f"INSERT INTO chunks ({', '.join(_COLUMNS)}, meta, text, parent_text, tokens, vector) "
                f"VALUES ({', '.join('?' * (len(_COLUMNS) + 5))}) RETURNING rid"
            )
            rows = []  # the same layout `_load` reads, so memory matches a reload exactly
            for chunk, vec, toks in zip(chunks, vectors, tokens, strict=True):
                row = _db_row(chunk, vec, toks)
                rows.append((self._conn.execute(sql, row).fetchone()[0], *row[: len(_COLUMNS)], *row[-2:]))
        if self._index is not None and rows:
            self._index.extend(Columns.from_rows(rows, self.dim))
            self._ann(self._index)

    def delete(self, chunk_ids: Sequence[str]) -> int:
        with self._write():
            cur = self._conn.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(i,) for i in chunk_ids])
            removed = cur.rowcount
        if self._index is not None:
            self._index.kill(chunk_ids)
        return removed

    def expire(self, chunk_ids: Sequence[str], seq: int) -> int:
        with self._write():
            # Only ever shorten a validity window: re-expiring must not revive versions in between.
            cur = self._conn.executemany(
                "UPDATE chunks SET valid_to_seq = ?1, meta = json_set(meta, '$.valid_to_seq', ?1) "
                "WHERE chunk_id = ?2 AND (valid_to_seq = 0 OR valid_to_seq > ?1)",
                [(seq, i) for i in chunk_ids],
            )
            changed = cur.rowcount
        if self._index is not None:
            self._index.set_valid_to(chunk_ids, seq)
        return changed

    def drop(self) -> None:
        self._close(save=False)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.snapshot.unlink(missing_ok=True)
        for graph in graph_files(self.snapshot):
            graph.unlink(missing_ok=True)

    def close(self) -> None:
        self._close(save=True)

    def _close(self, save: bool) -> None:
        with self._loading:  # never while another thread (a health check's count) loads the index
            self._close_loaded(save)

    def _close_loaded(self, save: bool) -> None:
        if self._saver is not None:
            self._saver.join()
        if (
            save
            and self._db is not None
            and self._index is not None
            and self._generation != self._saved_generation
        ):
            # Rows written since the last snapshot: save them, so the next open need not rebuild.
            meta = dict(self._db.execute("SELECT key, value FROM store_meta"))
            if int(meta["generation"]) == self._generation:
                self._save(self._index, self._key(meta))
                if self._saver is not None:
                    self._saver.join()
        if self._db is not None:
            self._db.close()
            self._db = None
        self._index = None

    # --- reads ------------------------------------------------------------------------------

    def count(self, filter: SearchFilter | None = None) -> int:
        return int(self._memory().mask(filter or SearchFilter()).sum())

    def ids_valid_from(self, seq: int) -> list[str]:
        rows = self._conn.execute("SELECT chunk_id FROM chunks WHERE valid_from_seq = ?", (seq,))
        return [r[0] for r in rows]

    def expired(self) -> list[tuple[str, int, int]]:
        rows = self._conn.execute(
            "SELECT chunk_id, valid_from_seq, valid_to_seq FROM chunks WHERE valid_to_seq != 0"
        )
        return [(r[0], int(r[1]), int(r[2])) for r in rows]

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        marks = ",".join("?" * len(chunk_ids))
        found = (
            {
                c.chunk_id: c
                for c in map(
                    _chunk_from_row,
                    self._conn.execute(
                        f"SELECT meta, text, parent_text FROM chunks WHERE chunk_id IN ({marks})",
                        list(chunk_ids),
                    ),
                )
            }
            if chunk_ids
            else {}
        )
        return [found[i] for i in chunk_ids if i in found]

    def search(self, query: StoreQuery) -> list[Hit]:
        index = self._memory()
        mask = index.mask(query.filter)
        dense = bm25 = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        if query.mode in ("dense", "hybrid") and query.vector is not None:
            dense = self._dense(index, np.asarray(query.vector, dtype=np.float32), mask, query.k)
        if query.mode in ("bm25", "hybrid"):
            bm25 = index.bm25(
                query.tokens, mask, query.k, query.filter.version_seq, corpus=index.visible(query.filter)
            )
        if query.mode == "dense":
            fused = [(int(p), float(s)) for p, s in zip(*dense, strict=True)]
        elif query.mode == "bm25":
            fused = [(int(p), float(s)) for p, s in zip(*bm25, strict=True)]
        else:
            fused = [(int(p), s) for p, s in rrf([dense[0].tolist(), bm25[0].tolist()], query.rrf_k)]
        fused = fused[: query.k]
        d_rank = {int(p): (r, float(s)) for r, (p, s) in enumerate(zip(*dense, strict=True), start=1)}
        b_rank = {int(p): (r, float(s)) for r, (p, s) in enumerate(zip(*bm25, strict=True), start=1)}
        chunks = self._chunks_by_rid([int(index.rids[p]) for p, _ in fused])
        hits = []
        for pos, score in fused:
            dr, ds = d_rank.get(pos, (None, None))
            br, bs = b_rank.get(pos, (None, None))
            fused_score = score if query.mode == "hybrid" else None
            hits.append(Hit(chunks[int(index.rids[pos])], score, ds, bs, dr, br, fused_score=fused_score))
        return hits

    # --- internals --------------------------------------------------------------------------

    def _dense(
        self, index: MemoryIndex, query: np.ndarray, mask: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Dense top-k: exact below the switch-over or under a selective filter, else graph + rescore."""
        ann = self._ann(index)
        allowed = int(np.count_nonzero(mask)) if ann is not None else 0
        if ann is None or allowed < self.ann_params.filter_min_share * len(mask):
            return index.dense(query, mask, k)
        found, scores = ann.search(query, mask, allowed, k, index.vectors)
        if len(found) < min(k, allowed):  # the graph lost its way inside a filter: never return fewer hits
            return index.dense(query, mask, k)
        return _top(found, scores, k, index.tiebreak)

    def _ann(self, index: MemoryIndex) -> AnnIndex | None:
        """The index's graph, brought up to its rows; None while the index is under the switch-over."""
        if len(index) < self.ann_params.min_rows:
            return None
        with self._ann_lock:
            if index.ann is None:
                index.ann = AnnIndex(self.dim, self.ann_params)
        index.ann.sync(index.vectors)
        return index.ann

    @contextmanager
    def _write(self) -> Iterator[None]:
        self._memory_if_current()
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'generation'")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._generation += 1

    def _disk_generation(self) -> int:
        return int(self._conn.execute("SELECT value FROM store_meta WHERE key='generation'").fetchone()[0])

    def _memory_if_current(self) -> None:
        # Before writing: drop the in-memory index if another process changed the file meanwhile.
        if self._index is not None and self._disk_generation() != self._generation:
            self._index = None

    def _memory(self) -> MemoryIndex:
        with self._loading:
            if self._index is None or self._disk_generation() != self._generation:
                self._index, self._generation = self._load()
            return self._index

    def _load(self) -> tuple[MemoryIndex, int]:
        """The index at the file's current generation: the snapshot if it matches, else rebuilt from rows."""
        self._conn.execute("BEGIN")  # one read snapshot for the generation and the rows
        try:
            meta = dict(self._conn.execute("SELECT key, value FROM store_meta"))
            key = self._key(meta)
            if (index := read_snapshot(self.snapshot, key, self.ann_params)) is not None:
                self._saved_generation = key["generation"]
                return index, key["generation"]
            rows = self._conn.execute(
                f"SELECT rid, {', '.join(_COLUMNS)}, tokens, vector FROM chunks ORDER BY rid"
            ).fetchall()
        finally:
            self._conn.execute("COMMIT")
        index = MemoryIndex(self.dim)
        if rows:
            index.extend(Columns.from_rows(rows, self.dim))
            self._ann(index)
            self._save(index, key)
        return index, key["generation"]

    def _key(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {"store_id": meta["store_id"], "generation": int(meta["generation"]), "dim": self.dim}

    def _save(self, index: MemoryIndex, key: dict[str, Any]) -> None:
        """Write the snapshot in a thread, so the first search does not wait for it."""
        if self._saver is not None:
            self._saver.join()
        try:
            arrays = index.to_arrays()
        except TypeError:  # a NULL scalar or token column: such a store is not snapshotted
            return
        self._saved_generation = key["generation"]
        ann = index.ann if index.ann is not None and index.ann.ntotal == len(index.rids) else None
        saver = threading.Thread(target=write_snapshot, args=(self.snapshot, arrays, key, ann))
        saver.start()  # started before it is published: `close` may join it from another thread
        self._saver = saver

    def _chunks_by_rid(self, rids: list[int]) -> dict[int, Chunk]:
        if not rids:
            return {}
        marks = ",".join("?" * len(rids))
        rows = self._conn.execute(
            f"SELECT rid, meta, text, parent_text FROM chunks WHERE rid IN ({marks})", rids
        )
        return {rid: _chunk_from_row(rest) for rid, *rest in rows}


def _db_row(chunk: Chunk, vec: np.ndarray, tokens: list[str]) -> tuple[Any, ...]:
    meta = {k: v for k, v in chunk.__dict__.items() if k not in _TEXT_FIELDS}
    return (
        chunk.chunk_id,
        *(getattr(chunk, f) for f in SCALAR_FIELDS),
        json.dumps(chunk.allowed_roles),
        chunk.valid_from_seq,
        chunk.valid_to_seq,
        json.dumps(meta, ensure_ascii=False),
        chunk.text,
        chunk.parent_text,
        joined_tokens(tokens),
        np.asarray(vec, dtype=np.float32).tobytes(),
    )


def _chunk_from_row(row: tuple[Any, ...]) -> Chunk:
    meta, text, parent_text = row
    return Chunk(text=text, parent_text=parent_text, **json.loads(meta))
