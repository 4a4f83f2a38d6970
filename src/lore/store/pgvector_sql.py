"""SQL for the pgvector store: table layout, filters as bound-parameter WHERE clauses."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql

from lore.schema import SearchFilter

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")
_COLUMN_OF = {
    "tenant_ids": "tenant_id",
    "dataset_ids": "dataset_id",
    "visibility": "visibility",
    "source_types": "source_type",
    "sources": "source",
    "document_ids": "document_id",
}
SCALARS = tuple(_COLUMN_OF.values())
# Statistics rows keyed by a negative "token id": the row count and the summed row lengths.
ROWS, LENGTH = -1, -2
ALL = -1  # the statistics bucket of every live row, whatever its versions


class Tables:
    """Identifiers of one collection's tables: `<collection>_chunks`, `_terms`, `_postings`, `_stats`,
    `_meta`.

    `_terms` numbers the tokens; `_postings` holds (token id, row id, tf, row length); `_stats` holds
    document frequencies (and row count and length, under the ids ROWS and LENGTH) as changes per version
    seq: a version's figure is the sum of the changes up to its seq, every live row's the bucket ALL."""

    def __init__(self, collection: str) -> None:
        if not _NAME.match(collection):
            raise ValueError("pgvector collection names are letters, digits and _ (at most 41)")
        self.chunks = sql.Identifier(f"{collection}_chunks")
        self.terms = sql.Identifier(f"{collection}_terms")
        self.postings = sql.Identifier(f"{collection}_postings")
        self.stats = sql.Identifier(f"{collection}_stats")
        self.meta = sql.Identifier(f"{collection}_meta")
        self.hnsw = sql.Identifier(f"{collection}_hnsw")
        self.prefix = collection

    def schema(self, dim: int) -> list[sql.Composed]:
        """CREATE statements (idempotent) for the collection."""
        c, name = self.chunks, self.prefix
        scalar_cols = sql.SQL(", ").join(
            sql.SQL("{} text NOT NULL").format(sql.Identifier(s)) for s in SCALARS
        )
        out = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (chunk_id text PRIMARY KEY, rid bigint NOT NULL UNIQUE, {}, "
                "allowed_roles text[] NOT NULL, "
                "valid_from_seq bigint NOT NULL, valid_to_seq bigint NOT NULL, meta jsonb NOT NULL, "
                "text text NOT NULL, parent_text text NOT NULL, doc_len integer NOT NULL, "
                "tiebreak bigint NOT NULL, tids integer[] NOT NULL, embedding vector({}) NOT NULL)"
            ).format(c, scalar_cols, sql.Literal(int(dim))),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (token text PRIMARY KEY, "
                "tid integer GENERATED ALWAYS AS IDENTITY UNIQUE)"
            ).format(self.terms),
            sql.SQL(
                # Written and deleted with the chunk row (through its tids); no foreign key (per-row checks).
                "CREATE TABLE IF NOT EXISTS {} (tid integer NOT NULL, rid bigint NOT NULL, "
                "tf integer NOT NULL, doc_len integer NOT NULL, "
                "PRIMARY KEY (tid, rid) INCLUDE (tf, doc_len))"  # a token's postings: one index range
            ).format(self.postings),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (tid integer NOT NULL, seq bigint NOT NULL, "
                "d bigint NOT NULL, PRIMARY KEY (tid, seq) INCLUDE (d))"
            ).format(self.stats),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id integer PRIMARY KEY CHECK (id = 1), "
                "next_rid bigint NOT NULL, gen bigint NOT NULL)"
            ).format(self.meta),
            sql.SQL("INSERT INTO {} VALUES (1, 1, 0) ON CONFLICT DO NOTHING").format(self.meta),
        ]
        for col in (*SCALARS, "valid_from_seq"):
            index = sql.Identifier(f"{name}_{col}")
            out.append(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({})").format(index, c, sql.Identifier(col))
            )
        return out

    def hnsw_index(self) -> sql.Composed:
        """The HNSW index; inner product, as the embedder's vectors are L2-normalised (= cosine, cheaper)."""
        return sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_ip_ops) "
            "WITH (m = 16, ef_construction = 64)"
        ).format(self.hnsw, self.chunks)

    def drop(self) -> list[sql.Composed]:
        return [
            sql.SQL("DROP TABLE IF EXISTS {}, {}, {}, {}, {}").format(
                self.postings, self.stats, self.terms, self.meta, self.chunks
            )
        ]


def where(flt: SearchFilter, alias: str = "c") -> tuple[sql.Composable, list[object]]:
    """The filter as a WHERE condition over `alias` plus its parameters (values are always bound)."""
    parts: list[sql.Composable] = [sql.SQL("TRUE")]
    params: list[object] = []
    a = sql.Identifier(alias)
    for attr, column in _COLUMN_OF.items():
        values = getattr(flt, attr)
        if values is not None:
            parts.append(sql.SQL("{}.{} = ANY(%s::text[])").format(a, sql.Identifier(column)))
            params.append([str(v) for v in values])
    if flt.roles is not None:
        parts.append(
            sql.SQL("(cardinality({a}.allowed_roles) = 0 OR {a}.allowed_roles && %s::text[])").format(a=a)
        )
        params.append([str(r) for r in flt.roles])
    if flt.version_seq is not None:
        parts.append(
            sql.SQL("{a}.valid_from_seq <= %s AND ({a}.valid_to_seq = 0 OR {a}.valid_to_seq > %s)").format(
                a=a
            )
        )
        params += [int(flt.version_seq)] * 2
    return sql.SQL(" AND ").join(parts), params


def is_empty(flt: SearchFilter) -> bool:
    """True when the filter restricts nothing."""
    return flt == SearchFilter()


def statistics_filter(flt: SearchFilter) -> SearchFilter:
    """The rows BM25 statistics cover: what the caller's grant and version see, not a request's narrowing."""
    return replace(flt, source_types=None, sources=None, document_ids=None)


def grant_free(flt: SearchFilter) -> bool:
    """True when the filter narrows by no grant field (its statistics are a version's, kept in `_stats`)."""
    return all(v is None for v in (flt.tenant_ids, flt.dataset_ids, flt.visibility, flt.roles))


def one(cur: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The row an aggregate, RETURNING or catalog lookup gives (such a query always gives one)."""
    row = cur.fetchone()
    if row is None:
        raise LookupError("the query gave no row")
    return tuple(row)
