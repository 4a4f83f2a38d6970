"""SQL for the pgvector store: table layout, filters as bound-parameter WHERE clauses, BM25 in SQL."""

from __future__ import annotations

import re
from dataclasses import replace

from psycopg import sql

from lore.schema import SearchFilter
from lore.store.memory_index import BM25_B, BM25_K1

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


class Tables:
    """Identifiers of one collection's tables and indexes: `<collection>_chunks`, `_postings`, `_meta`."""

    def __init__(self, collection: str) -> None:
        if not _NAME.match(collection):
            raise ValueError("pgvector collection names are letters, digits and _ (at most 41)")
        self.chunks = sql.Identifier(f"{collection}_chunks")
        self.postings = sql.Identifier(f"{collection}_postings")
        self.meta = sql.Identifier(f"{collection}_meta")
        self.hnsw = sql.Identifier(f"{collection}_hnsw")
        self.prefix = collection

    def schema(self, dim: int) -> list[sql.Composed]:
        """CREATE statements (idempotent) for the collection."""
        c, p, m, name = self.chunks, self.postings, self.meta, self.prefix
        scalar_cols = sql.SQL(", ").join(
            sql.SQL("{} text NOT NULL").format(sql.Identifier(s)) for s in SCALARS
        )
        out = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (chunk_id text PRIMARY KEY, {}, "
                "allowed_roles text[] NOT NULL, "
                "valid_from_seq bigint NOT NULL, valid_to_seq bigint NOT NULL, meta jsonb NOT NULL, "
                "text text NOT NULL, parent_text text NOT NULL, doc_len integer NOT NULL, "
                "tiebreak bigint NOT NULL, embedding vector({}) NOT NULL)"
            ).format(c, scalar_cols, sql.Literal(int(dim))),
            sql.SQL(
                # Written and deleted with the chunk row; no foreign key (its per-row checks slow inserts).
                # doc_len and tiebreak are repeated so an unfiltered BM25 query never reads the chunks table.
                "CREATE TABLE IF NOT EXISTS {} (token text NOT NULL, chunk_id text NOT NULL, "
                "tf integer NOT NULL, doc_len integer NOT NULL, tiebreak bigint NOT NULL, "
                "PRIMARY KEY (token, chunk_id) INCLUDE (tf, doc_len, tiebreak))"  # index-only BM25 reads
            ).format(p),
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (chunk_id)").format(
                sql.Identifier(f"{name}_postings_chunk"), p
            ),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id integer PRIMARY KEY CHECK (id = 1), "
                "n bigint NOT NULL, total_len bigint NOT NULL)"
            ).format(m),
            sql.SQL("INSERT INTO {} VALUES (1, 0, 0) ON CONFLICT DO NOTHING").format(m),
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
        return [sql.SQL("DROP TABLE IF EXISTS {}, {}, {}").format(self.postings, self.meta, self.chunks)]


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


def bm25_query(t: Tables, tokens: list[str], flt: SearchFilter, k: int) -> tuple[sql.Composed, list[object]]:
    """Okapi BM25 top-k, scored in SQL as the embedded store scores it. Statistics (row count, mean length,
    document frequencies) cover the rows the caller's grant and version see, not a request's narrowing."""
    stats = replace(flt, source_types=None, sources=None, document_ids=None)
    words = sorted(set(tokens))  # a literal array the planner sees: it knows how common each token is
    if is_empty(stats):  # all live rows: counts kept in the meta row, postings read alone
        corpus = sql.SQL(
            "corpus AS (SELECT n, CASE WHEN n > 0 THEN total_len::float8 / n ELSE 1 END AS avgdl FROM {}), "
            "p AS (SELECT p.* FROM {} p WHERE p.token = ANY(%s::text[])), "
        ).format(t.meta, t.postings)
        params: list[object] = [words]
    else:  # the caller's rows once (with their lengths), then their postings
        s_where, s_params = where(stats, "c")
        corpus = sql.SQL(
            "s AS MATERIALIZED (SELECT c.chunk_id, c.doc_len FROM {} c WHERE {}), "
            "corpus AS MATERIALIZED "
            "(SELECT count(*) AS n, coalesce(avg(s.doc_len)::float8, 1) AS avgdl FROM s), "
            "p AS (SELECT p.* FROM {} p JOIN s ON s.chunk_id = p.chunk_id WHERE p.token = ANY(%s::text[])), "
        ).format(t.chunks, s_where, t.postings)
        params = [*s_params, words]
    if flt == stats:  # the scored rows are the statistics' rows: one read gives both
        scored = sql.SQL("d AS (SELECT p.*, count(*) OVER (PARTITION BY p.token) AS df FROM p) ")
    else:  # a request's narrowing by source or document: df over the caller's rows, only narrowed rows scored
        hit_where, hit_params = where(flt, "c")
        scored = sql.SQL(
            "df AS MATERIALIZED (SELECT p.token, count(*) AS df FROM p GROUP BY p.token), "
            "h AS MATERIALIZED (SELECT c.chunk_id FROM {} c WHERE {}), "  # few rows: their postings by id
            "d AS (SELECT n.*, df.df FROM h JOIN {} n ON n.chunk_id = h.chunk_id "
            "JOIN df ON df.token = n.token WHERE n.token = ANY(%s::text[])) "
        ).format(t.chunks, hit_where, t.postings)
        params += [*hit_params, words]
    # Repeated query tokens count again (qn), as in the embedded store; idf = ln(1 + (N - df + .5)/(df + .5)).
    query = sql.SQL(
        "WITH q AS (SELECT tok AS token, count(*) AS qn FROM unnest(%s::text[]) tok GROUP BY tok), "
        "{corpus}{scored}"
        "SELECT d.chunk_id, "
        "sum(q.qn * ln(1 + (greatest(corpus.n, 1) - d.df + 0.5::float8) / (d.df + 0.5::float8)) "
        "* d.tf * {k1p} / (d.tf + {k1} * (1 - {b} + {b} * d.doc_len / corpus.avgdl))) AS score, "
        "min(d.tiebreak) AS tiebreak "
        "FROM d JOIN q ON q.token = d.token CROSS JOIN corpus "
        "GROUP BY d.chunk_id ORDER BY score DESC, tiebreak, d.chunk_id LIMIT %s"
    ).format(corpus=corpus, k1p=_float(BM25_K1 + 1), k1=_float(BM25_K1), b=_float(BM25_B), scored=scored)
    return query, [list(tokens), *params, int(k)]


def _float(x: float) -> sql.Composed:
    return sql.SQL("{}::float8").format(sql.Literal(repr(float(x))))
