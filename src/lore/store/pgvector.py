"""The pgvector store: chunks, vectors (HNSW) and BM25 postings in PostgreSQL tables, one set per KB.

Each collection owns its tables (`<collection>_chunks`, `_terms`, `_postings`, `_stats`, `_meta`)
rather than sharing one table with a collection column: a KB's HNSW graph then holds only its own rows
(a shared graph would make every search a filtered one, which HNSW answers poorly), and dropping a KB is
a DROP TABLE.
Dense search is exact over at most `[store] pg_exact_rows` rows passing the filter, otherwise it goes
through the HNSW index with `hnsw.ef_search` widened by the filter's selectivity, and falls back to an
exact scan if that still finds fewer than k rows. BM25 is scored over Lore's own tokens (`pgvector_bm25`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from lore.config import StoreSettings, load_settings
from lore.errors import ConfigError, UnavailableError
from lore.schema import Chunk, Hit, SearchFilter
from lore.store.base import StoreQuery
from lore.store.fusion import fuse_hits
from lore.store.pgvector_bm25 import StatisticsCache, bm25
from lore.store.pgvector_sql import ALL, ROWS, Tables, is_empty, one, where
from lore.store.pgvector_write import apply_changes, delete_rows, expire_rows, insert_rows, register_vector

MIN_PGVECTOR = (0, 5, 0)  # HNSW indexes


def resolve_url(settings: StoreSettings, uri: str = "") -> str:
    """The libpq URL of the store database: `[store] pg_url`, else a PostgreSQL `uri`, else the catalog's."""
    url = settings.pg_url or (uri if uri.startswith(("postgres://", "postgresql")) else "")
    url = url or load_settings().catalog_url
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] not in ("postgresql", "postgres"):
        raise ConfigError(
            "the pgvector store needs a PostgreSQL database: set [store] pg_url or a postgresql catalog_url"
        )
    return f"postgresql://{rest}"


class PgVectorStore:
    """One KB collection in PostgreSQL with the pgvector extension (0.5 or later)."""

    bm25_scores_are_scoped = True  # df and avgdl over the caller's rows

    def __init__(
        self, collection: str, data_dir: Path, dim: int, uri: str = "", connection: object = None
    ) -> None:
        self.settings = connection if isinstance(connection, StoreSettings) else load_settings().store
        self.dim = dim
        self.tables = Tables(collection)
        self._url = resolve_url(self.settings, uri)
        self._lock = threading.RLock()  # one connection: calls from several threads take turns
        self._conn: psycopg.Connection | None = None
        self._ready = False
        self._indexed = False  # the HNSW index is known to exist
        self._statistics = StatisticsCache()

    # --- writes -----------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[list[str]]) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(chunks), self.dim):
            raise ValueError(f"vectors shape {vectors.shape} != ({len(chunks)}, {self.dim})")
        latest = {c.chunk_id: i for i, c in enumerate(chunks)}  # a repeated id: the last one wins
        rows = [i for i, c in enumerate(chunks) if latest[c.chunk_id] == i]
        if not rows:
            return
        with self._tx() as cur:
            first = self._begin_write(cur, len(rows))
            removed = delete_rows(cur, self.tables, [chunks[i].chunk_id for i in rows])
            added = insert_rows(
                cur, self.tables, [chunks[i] for i in rows], vectors[rows], [tokens[i] for i in rows], first
            )
            apply_changes(cur, self.tables, [(removed.tid, removed.seq, removed.d), added])

    def delete(self, chunk_ids: Sequence[str]) -> int:
        if not chunk_ids:
            return 0
        with self._tx() as cur:
            self._begin_write(cur, 0)
            removed = delete_rows(cur, self.tables, list(chunk_ids))
            apply_changes(cur, self.tables, [(removed.tid, removed.seq, removed.d)])
        return removed.count

    def expire(self, chunk_ids: Sequence[str], seq: int) -> int:
        with self._tx() as cur:
            self._begin_write(cur, 0)
            return expire_rows(cur, self.tables, list(chunk_ids), int(seq))

    def drop(self) -> None:
        with self._tx() as cur:
            for statement in self.tables.drop():
                cur.execute(statement)
        self._ready = self._indexed = False

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._ready = self._indexed = False

    # --- reads ------------------------------------------------------------------------------

    def count(self, filter: SearchFilter | None = None) -> int:
        cond, params = where(filter or SearchFilter())
        with self._tx() as cur:
            cur.execute(
                sql.SQL("SELECT count(*) FROM {} c WHERE {}").format(self.tables.chunks, cond), params
            )
            return int(one(cur)[0])

    def ids_valid_from(self, seq: int) -> list[str]:
        with self._tx() as cur:
            query = sql.SQL("SELECT chunk_id FROM {} WHERE valid_from_seq = %s").format(self.tables.chunks)
            return [r[0] for r in cur.execute(query, (int(seq),))]

    def expired(self) -> list[tuple[str, int, int]]:
        query = sql.SQL("SELECT chunk_id, valid_from_seq, valid_to_seq FROM {} WHERE valid_to_seq != 0")
        with self._tx() as cur:
            return [(r[0], int(r[1]), int(r[2])) for r in cur.execute(query.format(self.tables.chunks))]

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        query = sql.SQL("SELECT chunk_id, meta, text, parent_text FROM {} WHERE chunk_id = ANY(%s::text[])")
        with self._tx() as cur:
            found = {
                r[0]: _chunk(r[1:]) for r in cur.execute(query.format(self.tables.chunks), (list(chunk_ids),))
            }
        return [found[i] for i in chunk_ids if i in found]

    def search(self, query: StoreQuery) -> list[Hit]:
        dense: list[Hit] = []
        bm25: list[Hit] = []
        with self._tx() as cur:
            if query.mode in ("dense", "hybrid") and query.vector is not None:
                dense = self._dense(cur, np.asarray(query.vector, dtype=np.float32), query.filter, query.k)
            if query.mode in ("bm25", "hybrid") and query.tokens:
                bm25 = self._bm25(cur, query.tokens, query.filter, query.k)
        if query.mode == "dense":
            return dense
        if query.mode == "bm25":
            return bm25
        return fuse_hits(dense, bm25, query.k, query.rrf_k)

    # --- internals --------------------------------------------------------------------------

    def _dense(self, cur: psycopg.Cursor, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        t, cap = self.tables, self.settings.pg_exact_rows
        cond, params = where(flt)
        counting = sql.SQL("SELECT coalesce(sum(d), 0) FROM {} WHERE tid = %s AND seq = %s").format(t.stats)
        total = int(one(cur.execute(counting, (ROWS, ALL)))[0])
        matching = total
        if not is_empty(flt) and total > cap:  # count at most cap + 1 rows: enough to choose the plan
            bounded = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} c WHERE {} LIMIT %s) m")
            matching = int(one(cur.execute(bounded.format(t.chunks, cond), [*params, cap + 1]))[0])
        text = "[" + ",".join(map(str, vector.tolist())) + "]"
        head = sql.SQL(
            "SELECT c.meta, c.text, c.parent_text, -(c.embedding <#> %s::vector) AS score FROM {} c WHERE {} "
        ).format(t.chunks, cond)
        rows: list[tuple[Any, ...]] = []
        if matching > cap:
            self._index(cur)
            # A filter keeping a share s of the rows leaves about ef_search * s of the graph's candidates.
            ef = max(self.settings.pg_ef_search, k, math.ceil(self.settings.pg_ef_search * total / matching))
            cur.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(min(ef, 1000))))
            ann = head + sql.SQL("ORDER BY c.embedding <#> %s::vector LIMIT %s")
            rows = cur.execute(ann, [text, *params, text, k]).fetchall()
        if len(rows) < min(k, matching):  # small or selective: scan the matching rows exactly
            exact = head + sql.SQL("ORDER BY score DESC, c.tiebreak, c.chunk_id LIMIT %s")
            rows = cur.execute(exact, [text, *params, k]).fetchall()
        return [Hit(_chunk(r[:3]), float(r[3]), float(r[3]), None, n, None) for n, r in enumerate(rows, 1)]

    def _bm25(self, cur: psycopg.Cursor, tokens: list[str], flt: SearchFilter, k: int) -> list[Hit]:
        memory = sql.Literal(f"{self.settings.pg_work_mem_mb}MB")  # long posting lists sort in memory
        cur.execute(sql.SQL("SET LOCAL work_mem = {}").format(memory))
        # Each step reads few index entries: starting parallel workers would cost more than they save.
        cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        scored = bm25(cur, self.tables, tokens, flt, k, self._statistics)
        if not scored:
            return []
        query = sql.SQL("SELECT rid, meta, text, parent_text FROM {} WHERE rid = ANY(%s::bigint[])")
        found = {
            r[0]: _chunk(r[1:])
            for r in cur.execute(query.format(self.tables.chunks), ([r for r, _ in scored],))
        }
        return [Hit(found[rid], float(s), None, float(s), None, n) for n, (rid, s) in enumerate(scored, 1)]

    def _index(self, cur: psycopg.Cursor) -> None:
        """Build the HNSW index if it is missing: once, by the first search past `pg_exact_rows` rows.

        Built over the loaded rows it costs a small part of keeping it up to date row by row during a
        bulk load; later upserts then add to it."""
        if self._indexed:
            return
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"lore.pgvector.index.{self.tables.prefix}",)
        )
        name = f"{self.tables.prefix}_hnsw"
        if one(cur.execute("SELECT to_regclass(%s)", (name,)))[0] is None:
            memory = sql.Literal(f"{self.settings.pg_index_memory_mb}MB")
            cur.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(memory))
            cur.execute(self.tables.hnsw_index())
        self._indexed = True

    def _begin_write(self, cur: psycopg.Cursor, rows: int) -> int:
        """Start a write: a new generation (cached statistics go stale) and `rows` fresh row ids (returns
        the first). The meta row's lock orders writers, so statistics rows are never locked crosswise."""
        query = sql.SQL(
            "UPDATE {} SET gen = gen + 1, next_rid = next_rid + %s RETURNING next_rid - %s"
        ).format(self.tables.meta)
        return int(one(cur.execute(query, (rows, rows)))[0])

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor]:
        """One transaction on the store's connection (reopened if the server dropped it)."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed or self._conn.broken:
                    timeout = max(1, math.ceil(self.settings.timeout_s))
                    self._conn = psycopg.connect(
                        # prepare_threshold=None: never a generic plan, the planner sees each query's values
                        self._url,
                        autocommit=True,
                        connect_timeout=timeout,
                        prepare_threshold=None,
                    )
                    self._ready = self._indexed = False
                conn = self._conn
                if not self._ready:
                    self._create(conn)
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            except psycopg.OperationalError as exc:  # the next call reconnects
                raise UnavailableError("the pgvector store's database is unavailable") from exc

    def _create(self, conn: psycopg.Connection[Any]) -> None:
        """Check the extension and create the collection's tables (once per connection)."""
        with conn.transaction(), conn.cursor() as cur:
            # Serialise schema creation across processes: concurrent CREATE ... IF NOT EXISTS can collide.
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('lore.pgvector.schema'))")
            try:
                with conn.transaction():
                    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise ConfigError(
                    "the pgvector store needs the PostgreSQL extension `vector` (pgvector 0.5 or later) "
                    "installed in the store database"
                ) from exc
            row = one(cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
            if _version(row[0]) < MIN_PGVECTOR:
                raise ConfigError(f"pgvector {row[0]} is too old: HNSW indexes need pgvector 0.5 or later")
            chunks = f"{self.tables.prefix}_chunks"
            if one(cur.execute("SELECT to_regclass(%s)", (chunks,)))[0] is not None:
                tids = "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'tids'"
                if cur.execute(tids, (chunks,)).fetchone() is None:
                    raise ConfigError(
                        f"pgvector collection {self.tables.prefix!r} has an older layout: "
                        "drop and re-ingest it"
                    )
            for statement in self.tables.schema(self.dim):
                cur.execute(statement)
        register_vector(conn)
        self._ready = True


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:3] if p.isdigit())


def _chunk(row: Sequence[Any]) -> Chunk:
    meta, text, parent_text = row
    return Chunk(text=text, parent_text=parent_text, **meta)
