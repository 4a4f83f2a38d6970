"""BM25 of the pgvector store, scored as the embedded store scores it, reading few postings.

Statistics (row count, mean length, document frequencies) are the caller's: every live row, or a
version's rows, comes from `_stats` (kept on write); a grant's rows (tenant, dataset, visibility,
roles) are counted and kept per write generation. Scoring goes by MaxScore (exact): postings of the
commonest tokens are not read when their largest possible scores together cannot reach the top k;
the rows that could still reach it are scored on those tokens by index lookups.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np
import psycopg
from psycopg import sql

from lore.schema import SearchFilter
from lore.store.memory_index import BM25_B, BM25_K1
from lore.store.pgvector_sql import (
    ALL,
    LENGTH,
    ROWS,
    Tables,
    grant_free,
    is_empty,
    one,
    statistics_filter,
    where,
)

GATHER_ROWS = 3000  # a filter passing at most this many rows: score their postings directly
SCAN_PER_LOOKUP = 10  # reading a posting in order costs about a tenth of looking one up
VIEW_ROWS = 100_000  # a grant's rows are kept (for counting document frequencies) up to this many
SAMPLE_POSTINGS = 5_000  # postings of the rarest tokens read to find a floor under the k-th best score
SAMPLE_ROWS = 200  # rows of that sample scored on every token
FIRST_LOOKUPS = 100  # candidates scored first (the best partial scores), to raise the floor for the rest
_CACHED_FILTERS = 32


@dataclass
class Statistics:
    """BM25 statistics over the rows of one caller's view."""

    n: int
    avgdl: float
    df: dict[int, int] = field(default_factory=dict)
    rids: RowSet | None = None  # the view's rows, when few enough to keep


@dataclass(frozen=True)
class RowSet:
    """Row ids passed as one array literal, built once (adapting a long list of ints costs more)."""

    count: int
    literal: str

    @classmethod
    def of(cls, rids: list[int]) -> RowSet:
        return cls(len(rids), "{" + ",".join(map(str, rids)) + "}")


class StatisticsCache:
    """Statistics of grant views, per (view, write generation): counting a grant's rows costs a scan."""

    def __init__(self) -> None:
        self._views: OrderedDict[tuple[str, int], Statistics] = OrderedDict()

    def get(self, key: tuple[str, int]) -> Statistics | None:
        if key in self._views:
            self._views.move_to_end(key)
        return self._views.get(key)

    def put(self, key: tuple[str, int], value: Statistics) -> None:
        self._views[key] = value
        while len(self._views) > _CACHED_FILTERS:
            self._views.popitem(last=False)


def bm25(
    cur: psycopg.Cursor, t: Tables, tokens: list[str], flt: SearchFilter, k: int, cache: StatisticsCache
) -> list[tuple[int, float]]:
    """Top-k (rid, score), best first, ties broken as the embedded store breaks them."""
    found = sql.SQL("SELECT token, tid FROM {} WHERE token = ANY(%s::text[])").format(t.terms)
    tid_of: dict[str, int] = dict(cur.execute(found, (sorted(set(tokens)),)).fetchall())
    qn = Counter(tid_of[w] for w in tokens if w in tid_of)
    if not qn:
        return []
    stats = _statistics(cur, t, statistics_filter(flt), list(qn), cache)
    n = max(stats.n, 1)
    weights = {}
    for tid, times in qn.items():
        df = stats.df.get(tid, 0)
        if df > 0:  # repeated query tokens count again, as in the embedded store
            weights[tid] = times * math.log1p((n - df + 0.5) / (df + 0.5))
    if not weights:
        return []
    if not is_empty(flt):
        rids = stats.rids if stats.rids is not None and flt == statistics_filter(flt) else None
        if rids is None:
            cond, params = where(flt)
            few = sql.SQL("SELECT c.rid FROM {} c WHERE {} LIMIT %s").format(t.chunks, cond)
            rids = RowSet.of([r[0] for r in cur.execute(few, [*params, GATHER_ROWS + 1])])
        if rids.count <= GATHER_ROWS:
            return _rank(cur, t, _gather(cur, t, weights, stats.avgdl, rids), k)
    # MaxScore. A first pass scores a sample (the rows of the rarest tokens) on every token: its k-th best
    # score is a floor under the answer's. The commonest tokens whose largest possible scores sum below the
    # floor cannot lift a row holding nothing else into the top k: only the other tokens' postings are read.
    order = sorted(weights, key=lambda tid: (stats.df[tid], tid))  # rarest (largest weight) first
    sample: list[int] = []
    read = 0
    for tid in order:
        if sample and read + stats.df[tid] > SAMPLE_POSTINGS:
            break
        sample.append(tid)
        read += stats.df[tid]
    rows = stats.rids if not is_empty(flt) and flt == statistics_filter(flt) else None  # the view's, kept
    floor = _floor(cur, t, weights, sample, stats.avgdl, flt, k, rows) if len(sample) < len(order) else 0.0
    skipped, bound = [], 0.0
    for tid in reversed(order):
        most = weights[tid] * (BM25_K1 + 1)  # a posting's largest score: tf / (tf + norm) < 1
        if bound + most >= floor:
            break
        skipped.append(tid)
        bound += most
    essential = [tid for tid in order if tid not in skipped]
    scored = _round(cur, t, weights, essential, bound, floor, stats.avgdl, flt, k, rows)
    return _rank(cur, t, scored, k)


def _statistics(
    cur: psycopg.Cursor, t: Tables, view: SearchFilter, tids: list[int], cache: StatisticsCache
) -> Statistics:
    """N, mean row length and df of `tids` over the caller's view."""
    if grant_free(view):  # every live row, or a version's rows: sums of the kept changes
        seq = sql.SQL("seq = %s") if view.version_seq is None else sql.SQL("seq >= 0 AND seq <= %s")
        query = sql.SQL("SELECT tid, sum(d) FROM {} WHERE tid = ANY(%s::integer[]) AND {} GROUP BY tid")
        bucket = ALL if view.version_seq is None else int(view.version_seq)
        sums: dict[int, float] = dict(
            cur.execute(query.format(t.stats, seq), ([*tids, ROWS, LENGTH], bucket)).fetchall()
        )
        n = int(sums.get(ROWS, 0))
        avgdl = float(sums.get(LENGTH, 0)) / n if n else 1.0
        return Statistics(n, avgdl, {tid: int(sums.get(tid, 0)) for tid in tids})
    gen = one(cur.execute(sql.SQL("SELECT gen FROM {}").format(t.meta)))[0]
    key = (repr(view), int(gen))
    cond, params = where(view)
    stats = cache.get(key)
    if stats is None:
        query = sql.SQL("SELECT count(*), coalesce(avg(c.doc_len)::float8, 1) FROM {} c WHERE {}")
        n, avgdl = one(cur.execute(query.format(t.chunks, cond), params))
        stats = Statistics(int(n), float(avgdl))
        if n <= VIEW_ROWS:
            rows = cur.execute(sql.SQL("SELECT c.rid FROM {} c WHERE {}").format(t.chunks, cond), params)
            stats.rids = RowSet.of([r[0] for r in rows])
        cache.put(key, stats)
    missing = [tid for tid in tids if tid not in stats.df]
    if missing and stats.rids is not None:
        within, w_params = _within(t, missing, stats.rids, _df_all(cur, t, missing))
        counting = sql.SQL("SELECT p.tid, count(*) FROM ({}) p GROUP BY p.tid").format(within)
        counted: dict[int, int] = dict(cur.execute(counting, w_params).fetchall())
    elif missing:
        counting = sql.SQL(
            "SELECT p.tid, count(*) FROM {} p JOIN {} c ON c.rid = p.rid "
            "WHERE p.tid = ANY(%s::integer[]) AND {} GROUP BY p.tid"
        ).format(t.postings, t.chunks, cond)
        counted = dict(cur.execute(counting, [missing, *params]).fetchall())
    stats.df.update({tid: int(counted.get(tid, 0)) for tid in missing})
    return stats


def _df_all(cur: psycopg.Cursor, t: Tables, tids: list[int]) -> dict[int, int]:
    """How many postings each token has (every live row)."""
    query = sql.SQL("SELECT tid, sum(d) FROM {} WHERE tid = ANY(%s::integer[]) AND seq = %s GROUP BY tid")
    found: dict[int, int] = dict(cur.execute(query.format(t.stats), (tids, ALL)).fetchall())
    return {tid: int(found.get(tid, 0)) for tid in tids}


def _within(
    t: Tables, tids: list[int], rids: RowSet, df_all: dict[int, int]
) -> tuple[sql.Composed, list[object]]:
    """SQL for the postings (tid, rid, tf, doc_len) of tokens `tids` in rows `rids`: a token's postings read
    and kept if their row is one of them, or (a common token) looked up row by row, whichever reads less."""
    scan = [tid for tid in tids if df_all[tid] <= SCAN_PER_LOOKUP * rids.count]
    probe = [tid for tid in tids if tid not in scan]
    parts: list[sql.Composable] = []
    params: list[object] = []
    if scan:  # rid + 0: not an index condition (one descent per row), a hashed test per posting
        parts.append(
            sql.SQL(
                "SELECT p.tid, p.rid, p.tf, p.doc_len FROM unnest(%s::integer[]) w(tid) "
                "JOIN {} p ON p.tid = w.tid WHERE p.rid + 0 = ANY(%s::bigint[])"
            ).format(t.postings)
        )
        params += [scan, rids.literal]
    if probe:
        parts.append(
            sql.SQL(
                "SELECT w.tid, h.rid, p.tf, p.doc_len FROM unnest(%s::bigint[]) h(rid) "
                "CROSS JOIN unnest(%s::integer[]) w(tid) CROSS JOIN LATERAL "
                "(SELECT p.tf, p.doc_len FROM {} p WHERE p.tid = w.tid AND p.rid = h.rid LIMIT 1) p"
            ).format(t.postings)
        )
        params += [rids.literal, probe]
    return sql.SQL(" UNION ALL ").join(parts), params


def _score(alias: str, avgdl: float) -> sql.Composed:
    """One posting's contribution: w.w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl))."""
    return sql.SQL("w.w * {p}.tf * {k1p} / ({p}.tf + {k1} * (1 - {b} + {b} * {p}.doc_len / {avgdl}))").format(
        p=sql.Identifier(alias),
        k1p=_float(BM25_K1 + 1),
        k1=_float(BM25_K1),
        b=_float(BM25_B),
        avgdl=_float(avgdl),
    )


def _weights(weights: dict[int, float], tids: list[int]) -> tuple[sql.Composed, list[object]]:
    return sql.Composed([sql.SQL("unnest(%s::integer[], %s::float8[]) AS w(tid, w)")]), [
        tids,
        [weights[x] for x in tids],
    ]


def _gather(
    cur: psycopg.Cursor, t: Tables, weights: dict[int, float], avgdl: float, rids: RowSet
) -> dict[int, float]:
    """Scores of the few rows a filter passes."""
    if not rids.count:
        return {}
    within, params = _within(t, list(weights), rids, _df_all(cur, t, list(weights)))
    source, w_params = _weights(weights, list(weights))
    template = sql.SQL("SELECT p.rid, sum({score}) FROM ({}) p JOIN {w} ON w.tid = p.tid GROUP BY p.rid")
    query = template.format(within, score=_score("p", avgdl), w=source)
    return dict(cur.execute(query, [*params, *w_params]).fetchall())


def _floor(
    cur: psycopg.Cursor,
    t: Tables,
    weights: dict[int, float],
    sample: list[int],
    avgdl: float,
    flt: SearchFilter,
    k: int,
    rows: RowSet | None,
) -> float:
    """The k-th best full score of the rows the `sample` tokens score best (0 with fewer than k rows)."""
    source, w_params = _weights(weights, sample)
    keep, params = _keep(t, flt, rows)
    query = sql.SQL(
        "SELECT p.rid FROM {w} JOIN {p} p ON p.tid = w.tid {keep}GROUP BY p.rid ORDER BY sum({score}) DESC "
        "LIMIT %s"
    ).format(w=source, p=t.postings, keep=keep, score=_score("p", avgdl))
    rids = [r[0] for r in cur.execute(query, [*w_params, *params, max(SAMPLE_ROWS, k)])]
    if len(rids) < k:
        return 0.0
    return sorted(_lookup(cur, t, weights, list(weights), rids, avgdl).values(), reverse=True)[k - 1]


def _round(
    cur: psycopg.Cursor,
    t: Tables,
    weights: dict[int, float],
    essential: list[int],
    bound: float,
    floor: float,
    avgdl: float,
    flt: SearchFilter,
    k: int,
    rows: RowSet | None,
) -> dict[int, float]:
    """Full scores of every row that can reach the top k: rows holding an essential token whose partial
    score plus `bound` (the other tokens' largest) reaches both the k-th best partial score and `floor`."""
    rest = [tid for tid in weights if tid not in essential]
    source, w_params = _weights(weights, essential)
    keep, params = _keep(t, flt, rows) if rest or rows is not None else _join(t, flt)
    query = sql.SQL(
        "WITH part AS MATERIALIZED (SELECT p.rid, sum({score}) AS s FROM {w} JOIN {p} p ON p.tid = w.tid "
        "{keep}GROUP BY p.rid), "
        "cut AS MATERIALIZED "
        "(SELECT coalesce((SELECT s FROM part ORDER BY s DESC OFFSET %s LIMIT 1), 0) AS s) "
        "SELECT part.rid, part.s FROM part, cut WHERE part.s + %s >= greatest(cut.s, %s)"
    ).format(score=_score("p", avgdl), w=source, p=t.postings, keep=keep)
    partial: dict[int, float] = dict(cur.execute(query, [*w_params, *params, k - 1, bound, floor]).fetchall())
    if not rest or not partial:
        return partial
    # The best partial scores first: their full scores raise the floor, which then drops more candidates.
    ranked = sorted(partial, key=partial.__getitem__, reverse=True)
    first = ranked[: max(2 * k, FIRST_LOOKUPS)]
    full = {rid: partial[rid] + s for rid, s in _lookup(cur, t, weights, rest, first, avgdl).items()}
    full.update({rid: partial[rid] for rid in first if rid not in full})
    if len(full) >= k:
        floor = max(floor, sorted(full.values(), reverse=True)[k - 1])
    later = [rid for rid in ranked[len(first) :] if partial[rid] + bound >= floor]
    extra = _lookup(cur, t, weights, rest, later, avgdl) if later else {}
    full.update({rid: partial[rid] + extra.get(rid, 0.0) for rid in later})
    return full


def _lookup(
    cur: psycopg.Cursor, t: Tables, weights: dict[int, float], tids: list[int], rids: list[int], avgdl: float
) -> dict[int, float]:
    """Scores of rows `rids` on tokens `tids`, their postings looked up one by one."""
    source, w_params = _weights(weights, tids)
    query = sql.SQL(
        "SELECT r.rid, sum({score}) FROM unnest(%s::bigint[]) r(rid) CROSS JOIN {w} CROSS JOIN LATERAL "
        "(SELECT p.tf, p.doc_len FROM {p} p WHERE p.tid = w.tid AND p.rid = r.rid LIMIT 1) p GROUP BY r.rid"
    ).format(score=_score("p", avgdl), w=source, p=t.postings)
    return dict(cur.execute(query, [rids, *w_params]).fetchall())


def _keep(t: Tables, flt: SearchFilter, rows: RowSet | None) -> tuple[sql.Composable, list[object]]:
    """Keep postings of rows passing the filter: one of `rows` (a hashed test), else looking each row up."""
    if is_empty(flt):
        return sql.SQL(""), []
    if rows is not None:
        return sql.SQL("WHERE p.rid + 0 = ANY(%s::bigint[]) "), [rows.literal]
    cond, params = where(flt)
    # LIMIT 1 keeps the planner from turning the lookup into a join over every row the filter passes.
    keep = sql.SQL("CROSS JOIN LATERAL (SELECT 1 FROM {} c WHERE c.rid = p.rid AND {} LIMIT 1) c ")
    return keep.format(t.chunks, cond), params


def _join(t: Tables, flt: SearchFilter) -> tuple[sql.Composable, list[object]]:
    """Keep postings of rows passing the filter, joined as the planner sees fit (many postings)."""
    if is_empty(flt):
        return sql.SQL(""), []
    cond, params = where(flt)
    return sql.SQL("JOIN {} c ON c.rid = p.rid AND {} ").format(t.chunks, cond), params


def _rank(cur: psycopg.Cursor, t: Tables, scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The k best rows by score, then the embedded store's tie key, then chunk id. Scores compare as float32,
    as the embedded store's do: rows it ties (the same words) tie here whatever order the sums ran in."""
    if not scores:
        return []
    coarse = {rid: float(np.float32(s)) for rid, s in scores.items()}
    ordered = sorted(coarse.items(), key=lambda kv: -kv[1])
    kth = ordered[min(k, len(ordered)) - 1][1]
    near = [rid for rid, s in ordered if s >= kth]  # rows tied with the k-th best need their keys
    query = sql.SQL("SELECT rid, tiebreak, chunk_id FROM {} WHERE rid = ANY(%s::bigint[])").format(t.chunks)
    keys = {r[0]: r[1:] for r in cur.execute(query, (near,))}
    best = sorted(near, key=lambda rid: (-coarse[rid], *keys[rid]))[:k]
    return [(rid, scores[rid]) for rid in best]


def _float(x: float) -> sql.Composed:
    return sql.SQL("{}::float8").format(sql.Literal(repr(float(x))))
