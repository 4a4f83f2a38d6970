"""The in-memory side of the embedded store: exact dense scan, BM25 and filter masks in numpy.

Rows are append-only; a replaced or deleted row is marked dead. Every search is exact over the
rows that pass the filter, so a selective filter can never drop hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from lore.schema import SearchFilter

SCALAR_FIELDS = ("tenant_id", "dataset_id", "visibility", "source_type", "source", "document_id")
BM25_K1 = 1.2
BM25_B = 0.75
# Below this share of rows passing the filter, gather the rows first; above it, scan all and mask.
_GATHER_BELOW = 0.25


@dataclass
class Row:
    """What the index needs of one chunk."""

    rid: int
    chunk_id: str
    scalars: dict[str, str]
    roles: list[str]
    valid_from: int
    valid_to: int
    tokens: list[str]


class _Codes:
    """Interns strings to small ints so filters become `np.isin` over int arrays."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def code(self, value: str) -> int:
        return self.ids.setdefault(value, len(self.ids))

    def codes(self, values: Sequence[str]) -> np.ndarray:
        return np.array([self.ids[v] for v in values if v in self.ids], dtype=np.int32)


class MemoryIndex:
    """Vectors, term frequencies and filter columns for every row, aligned by position."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rids = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.valid_from = np.zeros(0, dtype=np.int64)
        self.valid_to = np.zeros(0, dtype=np.int64)
        self.scalars = {f: np.zeros(0, dtype=np.int32) for f in SCALAR_FIELDS}
        self.codes = {f: _Codes() for f in SCALAR_FIELDS}
        self.role_codes = _Codes()
        self.roles = sparse.csr_matrix((0, 0), dtype=np.int8)
        self.vocab: dict[str, int] = {}
        self.tf = sparse.csc_matrix((0, 0), dtype=np.float32)
        self.doc_len = np.zeros(0, dtype=np.float32)
        self.position: dict[str, int] = {}  # chunk_id -> row position of its live row

    def __len__(self) -> int:
        return int(self.alive.sum())

    def append(self, rows: Sequence[Row], vectors: np.ndarray) -> None:
        """Add rows (replacing live rows with the same chunk_id)."""
        if not rows:
            return
        self.kill([r.chunk_id for r in rows])
        start = len(self.rids)
        tf_rows, role_rows = self._sparse_rows(rows)
        n = len(rows)
        self.rids = np.concatenate([self.rids, [r.rid for r in rows]])
        self.alive = np.concatenate([self.alive, np.ones(n, dtype=bool)])
        self.vectors = np.vstack([self.vectors, np.asarray(vectors, dtype=np.float32).reshape(n, self.dim)])
        self.valid_from = np.concatenate([self.valid_from, [r.valid_from for r in rows]])
        self.valid_to = np.concatenate([self.valid_to, [r.valid_to for r in rows]])
        for f in SCALAR_FIELDS:
            new = np.array([self.codes[f].code(r.scalars[f]) for r in rows], dtype=np.int32)
            self.scalars[f] = np.concatenate([self.scalars[f], new])
        self.doc_len = np.concatenate([self.doc_len, [len(r.tokens) for r in rows]]).astype(np.float32)
        self.tf = _vstack(self.tf, tf_rows, len(self.vocab)).tocsc()
        self.roles = _vstack(self.roles, role_rows, len(self.role_codes.ids)).tocsr()
        for i, r in enumerate(rows):
            self.position[r.chunk_id] = start + i

    def kill(self, chunk_ids: Sequence[str]) -> list[int]:
        """Mark the live rows of these chunk ids dead; returns their rids."""
        gone = [self.position.pop(c) for c in chunk_ids if c in self.position]
        self.alive[gone] = False
        return [int(self.rids[p]) for p in gone]

    def set_valid_to(self, chunk_ids: Sequence[str], seq: int) -> None:
        """Record an expiry in memory (the caller wrote it to disk)."""
        pos = np.array([self.position[c] for c in chunk_ids if c in self.position], dtype=np.int64)
        current = self.valid_to[pos]
        self.valid_to[pos] = np.where((current == 0) | (current > seq), seq, current)

    def mask(self, flt: SearchFilter) -> np.ndarray:
        """Boolean mask of live rows that pass the filter."""
        m = self.alive.copy()
        wanted = {
            "tenant_id": flt.tenant_ids,
            "dataset_id": flt.dataset_ids,
            "visibility": flt.visibility,
            "source_type": flt.source_types,
            "source": flt.sources,
            "document_id": flt.document_ids,
        }
        for field, values in wanted.items():
            if values is not None:
                m &= np.isin(self.scalars[field], self.codes[field].codes(values))
        if flt.roles is not None:
            cols = self.role_codes.codes(flt.roles)
            open_rows = np.asarray(self.roles.getnnz(axis=1) == 0).ravel()
            has_role = np.asarray(self.roles[:, cols].getnnz(axis=1) > 0).ravel() if len(cols) else False
            m &= open_rows | has_role
        if flt.version_seq is not None:
            s = flt.version_seq
            m &= (self.valid_from <= s) & ((self.valid_to == 0) | (self.valid_to > s))
        return m

    def dense(self, query: np.ndarray, mask: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine top-k over masked rows: (positions, scores), best first."""
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            return idx, np.zeros(0, dtype=np.float32)
        if len(idx) < _GATHER_BELOW * len(mask):
            scores = self.vectors[idx] @ query
        else:
            scores = (self.vectors @ query)[idx]
        return _top(idx, scores, k)

    def bm25(self, tokens: Sequence[str], mask: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Okapi BM25 top-k over masked rows (idf over live rows): (positions, scores)."""
        terms = [self.vocab[t] for t in tokens if t in self.vocab]
        if not terms or not mask.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        n_live = max(len(self), 1)
        avg_len = float(self.doc_len[self.alive].mean()) if n_live else 1.0
        scores = np.zeros(len(self.rids), dtype=np.float32)
        for term in terms:  # repeated query terms count again, as in Lucene
            lo, hi = self.tf.indptr[term], self.tf.indptr[term + 1]
            rows, tf = self.tf.indices[lo:hi], self.tf.data[lo:hi]
            live = self.alive[rows]
            rows, tf = rows[live], tf[live]
            df = len(rows)
            if df == 0:
                continue
            idf = np.log1p((n_live - df + 0.5) / (df + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.doc_len[rows] / avg_len)
            scores[rows] += idf * tf * (BM25_K1 + 1) / (tf + norm)
        idx = np.flatnonzero(mask & (scores > 0))
        return _top(idx, scores[idx], k)

    def _sparse_rows(self, rows: Sequence[Row]) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
        data, cols, indptr = [], [], [0]
        rdata, rcols, rindptr = [], [], [0]
        for r in rows:
            counts: dict[int, int] = {}
            for t in r.tokens:
                tid = self.vocab.setdefault(t, len(self.vocab))
                counts[tid] = counts.get(tid, 0) + 1
            cols.extend(counts)
            data.extend(counts.values())
            indptr.append(len(cols))
            for role in set(r.roles):
                rcols.append(self.role_codes.code(role))
                rdata.append(1)
            rindptr.append(len(rcols))
        tf = sparse.csr_matrix(
            (np.array(data, dtype=np.float32), np.array(cols, dtype=np.int32), indptr),
            shape=(len(rows), len(self.vocab)),
        )
        roles = sparse.csr_matrix(
            (np.array(rdata, dtype=np.int8), np.array(rcols, dtype=np.int32), rindptr),
            shape=(len(rows), len(self.role_codes.ids)),
        )
        return tf, roles


def _vstack(old: sparse.spmatrix, new: sparse.csr_matrix, width: int) -> sparse.csr_matrix:
    old = sparse.csr_matrix(old)
    old.resize((old.shape[0], width))
    new.resize((new.shape[0], width))
    return sparse.vstack([old, new], format="csr")


def _top(idx: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if len(idx) > k:
        part = np.argpartition(-scores, k - 1)[:k]
        idx, scores = idx[part], scores[part]
    order = np.lexsort((idx, -scores))  # ties broken by insertion order, for repeatable results
    return idx[order], scores[order]
