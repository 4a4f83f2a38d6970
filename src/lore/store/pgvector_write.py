"""Writes of the pgvector store: rows and postings by binary COPY, BM25 statistics kept up to date."""

from __future__ import annotations

import hashlib
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from lore.schema import Chunk
from lore.store.pgvector_sql import ALL, LENGTH, ROWS, SCALARS, Tables
from lore.store.retokenise import joined_tokens

_TEXT_FIELDS = {"text", "parent_text"}
CHUNK_COLUMNS = ("chunk_id", "rid", *SCALARS, "allowed_roles", "valid_from_seq", "valid_to_seq", "meta")
CHUNK_COLUMNS += ("text", "parent_text", "doc_len", "tiebreak", "tids", "embedding")
_CHUNK_TYPES = ["text", "int8", *["text"] * len(SCALARS), "text[]", "int8", "int8", "jsonb"]
_CHUNK_TYPES += ["text", "text", "int4", "int8", "int4[]", "vector"]
_POSTING = np.dtype(
    [("n", ">i2"), ("l0", ">i4"), ("tid", ">i4"), ("l1", ">i4"), ("rid", ">i8")]
    + [("l2", ">i4"), ("tf", ">i4"), ("l3", ">i4"), ("dl", ">i4")]
)
_CHANGE = np.dtype(
    [("n", ">i2"), ("l0", ">i4"), ("tid", ">i4"), ("l1", ">i4"), ("seq", ">i8"), ("l2", ">i4"), ("d", ">i8")]
)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


class _VectorDumper(Dumper):
    """pgvector's binary input: dimension and a reserved int16, then big-endian float32s."""

    format = Format.BINARY

    def dump(self, obj: np.ndarray) -> bytes:
        return struct.pack(">HH", len(obj), 0) + np.asarray(obj, dtype=">f4").tobytes()


def register_vector(conn: psycopg.Connection) -> None:
    """Let COPY send numpy vectors to `vector` columns in binary."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        return
    info.register(conn)
    conn.adapters.register_dumper(np.ndarray, type("VectorDumper", (_VectorDumper,), {"oid": info.oid}))


@dataclass
class Removed:
    """What deleting rows took away: their count, and their statistics changes to undo."""

    count: int
    tid: np.ndarray
    seq: np.ndarray
    d: np.ndarray


def words(tokens: list[str]) -> list[str]:
    """Tokens as the embedded store keeps them (a space inside a token becomes _)."""
    return [t.replace(" ", "_") for t in tokens]


def length(tokens: list[str]) -> int:
    """The row length the embedded store counts for BM25."""
    return len(tokens) if joined_tokens(tokens) else 0


def tiebreak(tokens: list[str]) -> int:
    """The embedded store's tie key for a row: ties at a top-k cut go the same way on both stores."""
    digest = hashlib.blake2b(joined_tokens(tokens).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def term_ids(cur: psycopg.Cursor, t: Tables, tokens: list[str]) -> dict[str, int]:
    """Ids of these tokens, numbering the new ones (an id is never reused within a collection)."""
    missing = sql.SQL(
        "INSERT INTO {terms} (token) SELECT w FROM unnest(%s::text[]) w "
        "WHERE NOT EXISTS (SELECT 1 FROM {terms} x WHERE x.token = w) ORDER BY w ON CONFLICT DO NOTHING"
    ).format(terms=t.terms)
    cur.execute(missing, (tokens,))
    found = sql.SQL("SELECT token, tid FROM {} WHERE token = ANY(%s::text[])").format(t.terms)
    return dict(cur.execute(found, (tokens,)).fetchall())


def insert_rows(
    cur: psycopg.Cursor,
    t: Tables,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    tokens: Sequence[list[str]],
    first_rid: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COPY the chunks and their postings; returns the statistics changes (tid, seq, d) they make."""
    counts = [Counter(w for w in words(toks) if w) for toks in tokens]
    ids = term_ids(cur, t, sorted(set().union(*counts)))
    row_tids = [np.fromiter((ids[w] for w in c), dtype=np.int64, count=len(c)) for c in counts]
    lengths = np.array([length(toks) for toks in tokens], dtype=np.int64)
    rids = np.arange(first_rid, first_rid + len(chunks), dtype=np.int64)
    cols = sql.SQL(", ").join(map(sql.Identifier, CHUNK_COLUMNS))
    with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(t.chunks, cols)) as copy:
        copy.set_types(_CHUNK_TYPES)
        for i, chunk in enumerate(chunks):
            meta = {k: v for k, v in chunk.__dict__.items() if k not in _TEXT_FIELDS}
            copy.write_row(
                (
                    chunk.chunk_id,
                    int(rids[i]),
                    *(str(getattr(chunk, f)) for f in SCALARS),
                    [str(r) for r in chunk.allowed_roles],
                    int(chunk.valid_from_seq),
                    int(chunk.valid_to_seq),
                    meta,
                    chunk.text,
                    chunk.parent_text,
                    int(lengths[i]),
                    tiebreak(tokens[i]),
                    row_tids[i].tolist(),
                    np.asarray(vectors[i], dtype=np.float32),
                )
            )
    sizes = np.array([len(r) for r in row_tids], dtype=np.int64)
    flat = np.concatenate(row_tids) if len(row_tids) else np.zeros(0, dtype=np.int64)
    rows = np.zeros(len(flat), dtype=_POSTING)
    rows["n"], rows["l0"], rows["l1"], rows["l2"], rows["l3"] = 4, 4, 8, 4, 4
    rows["tid"], rows["rid"] = flat, np.repeat(rids, sizes)
    rows["tf"] = np.fromiter((n for c in counts for n in c.values()), dtype=np.int64, count=len(flat))
    rows["dl"] = np.repeat(lengths, sizes)
    postings = sql.SQL("COPY {} (tid, rid, tf, doc_len) FROM STDIN (FORMAT BINARY)").format(t.postings)
    with cur.copy(postings) as copy:
        copy.write(_COPY_HEADER + rows.tobytes() + struct.pack(">h", -1))
    valid = [(int(c.valid_from_seq), int(c.valid_to_seq)) for c in chunks]
    return changes(row_tids, lengths, valid, 1, everything=True)


def changes(
    row_tids: Sequence[np.ndarray],
    lengths: np.ndarray,
    valid: Sequence[tuple[int, int]],
    sign: int,
    everything: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Statistics changes (tid, seq, d) of rows entering (sign 1) or leaving (-1): each row counts in its
    tokens' df, ROWS and LENGTH from its valid_from seq, and no longer from its valid_to seq; `everything`
    adds the bucket ALL (every live row)."""
    tid_parts, seq_parts, d_parts = [], [], []
    for tids, n, (first, end) in zip(row_tids, lengths.tolist(), valid, strict=True):
        keys = np.concatenate([tids, [ROWS, LENGTH]])
        amount = np.ones(len(keys), dtype=np.int64)
        amount[-1] = n
        spans = ([(ALL, 1)] if everything else []) + ([(first, 1)] if end == 0 or end > first else [])
        spans += [(end, -1)] if end > first else []
        for seq, s in spans:
            tid_parts.append(keys)
            seq_parts.append(np.full(len(keys), seq, dtype=np.int64))
            d_parts.append(amount * s * sign)
    if not tid_parts:
        return (np.zeros(0, dtype=np.int64),) * 3
    return np.concatenate(tid_parts), np.concatenate(seq_parts), np.concatenate(d_parts)


def apply_changes(cur: psycopg.Cursor, t: Tables, parts: Sequence[tuple[np.ndarray, ...]]) -> None:
    """Add statistics changes to `_stats`, summed per (tid, seq) and written in key order."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return
    tid, seq, d = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((seq, tid))
    tid, seq, d = tid[order], seq[order], d[order]
    starts = np.flatnonzero(np.r_[True, (tid[1:] != tid[:-1]) | (seq[1:] != seq[:-1])])
    sums = np.add.reduceat(d, starts)
    keep = starts[sums != 0]
    rows = np.zeros(len(keep), dtype=_CHANGE)
    rows["n"], rows["l0"], rows["l1"], rows["l2"] = 3, 4, 8, 8
    rows["tid"], rows["seq"], rows["d"] = tid[keep], seq[keep], sums[sums != 0]
    cur.execute(
        "CREATE TEMP TABLE IF NOT EXISTS lore_stats_change (tid integer, seq bigint, d bigint) "
        "ON COMMIT DELETE ROWS"
    )
    with cur.copy("COPY lore_stats_change FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_COPY_HEADER + rows.tobytes() + struct.pack(">h", -1))
    upsert = sql.SQL(
        "INSERT INTO {s} (tid, seq, d) SELECT tid, seq, d FROM lore_stats_change ORDER BY tid, seq "
        "ON CONFLICT (tid, seq) DO UPDATE SET d = {s}.d + excluded.d"
    ).format(s=t.stats)
    cur.execute(upsert)
    cur.execute("DELETE FROM lore_stats_change")  # a later write in this transaction starts afresh


def delete_rows(cur: psycopg.Cursor, t: Tables, chunk_ids: list[str]) -> Removed:
    """Delete chunks by id with their postings; returns the statistics changes that undo them."""
    query = sql.SQL(
        "DELETE FROM {} WHERE chunk_id = ANY(%s::text[]) RETURNING rid, tids, doc_len, valid_from_seq, "
        "valid_to_seq"
    ).format(t.chunks)
    rows = cur.execute(query, (chunk_ids,)).fetchall()
    if not rows:
        return Removed(0, *(np.zeros(0, dtype=np.int64),) * 3)
    row_tids = [np.array(r[1], dtype=np.int64) for r in rows]
    rids = np.repeat([r[0] for r in rows], [len(x) for x in row_tids])
    postings = sql.SQL(
        "DELETE FROM {} p USING unnest(%s::integer[], %s::bigint[]) d(tid, rid) "
        "WHERE p.tid = d.tid AND p.rid = d.rid"
    ).format(t.postings)
    cur.execute(postings, (np.concatenate(row_tids).tolist(), rids.tolist()))
    lengths = np.array([r[2] for r in rows], dtype=np.int64)
    undo = changes(row_tids, lengths, [(r[3], r[4]) for r in rows], -1, everything=True)
    return Removed(len(rows), *undo)


def expire_rows(cur: psycopg.Cursor, t: Tables, chunk_ids: list[str], seq: int) -> int:
    """Set valid_to_seq (only ever shortening a window) and move the rows' version statistics with it."""
    # Only ever shorten a validity window: re-expiring must not revive versions in between.
    query = sql.SQL(
        "UPDATE {c} c SET valid_to_seq = %s, "
        "meta = jsonb_set(c.meta, '{{valid_to_seq}}', to_jsonb(%s::bigint)) "
        "FROM (SELECT rid, valid_to_seq FROM {c} WHERE chunk_id = ANY(%s::text[]) "
        "AND (valid_to_seq = 0 OR valid_to_seq > %s) FOR UPDATE) old WHERE c.rid = old.rid "
        "RETURNING c.tids, c.doc_len, c.valid_from_seq, old.valid_to_seq"
    ).format(c=t.chunks)
    rows = cur.execute(query, (seq, seq, chunk_ids, seq)).fetchall()
    if rows:
        row_tids = [np.array(r[0], dtype=np.int64) for r in rows]
        lengths = np.array([r[1] for r in rows], dtype=np.int64)
        before = changes(row_tids, lengths, [(r[2], r[3]) for r in rows], -1, everything=False)
        after = changes(row_tids, lengths, [(r[2], seq) for r in rows], 1, everything=False)
        apply_changes(cur, t, [before, after])
    return len(rows)
