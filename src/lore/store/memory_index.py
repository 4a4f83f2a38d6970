"""The in-memory side of the embedded store: exact dense scan, BM25 and filter masks in numpy.

Rows are append-only; a replaced or deleted row is marked dead. Every search is exact over the
rows that pass the filter, so a selective filter can never drop hits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, replace
from itertools import chain, count, islice
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from lore.schema import SearchFilter

if TYPE_CHECKING:
    from lore.store.ann_index import AnnIndex

SCALAR_FIELDS = ("tenant_id", "dataset_id", "visibility", "source_type", "source", "document_id")
BM25_K1 = 1.2
BM25_B = 0.75
# Below this share of rows passing the filter, gather the rows first; above it, scan all and mask.
_GATHER_BELOW = 0.25


@dataclass
class Columns:
    """Many rows column by column; ragged columns are flat values plus a count per row."""

    rids: np.ndarray
    chunk_ids: list[str]
    scalars: dict[str, list[str]]
    roles: list[str]
    role_counts: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    tokens: list[str]
    token_counts: np.ndarray
    vectors: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[Any, ...]], dim: int) -> Columns:
        """Parse rows laid out as the store keeps them: rid, chunk_id, *scalars, roles as JSON,
        valid_from, valid_to, tokens joined by spaces, float32 vector bytes."""
        rids, chunk_ids, *scalars, roles, valid_from, valid_to, tokens, blobs = zip(*rows, strict=True)
        with_roles = [i for i, r in enumerate(roles) if r and r != "[]"]
        parsed = json.loads(f"[{','.join(roles[i] for i in with_roles)}]")  # one parse for all rows
        role_counts = np.zeros(len(rows), dtype=np.int64)
        role_counts[with_roles] = [len(p) for p in parsed]
        token_counts = np.fromiter(
            (t.count(" ") + 1 if t else 0 for t in tokens), dtype=np.int64, count=len(rows)
        )
        return cls(
            np.array(rids, dtype=np.int64),
            list(chunk_ids),
            dict(zip(SCALAR_FIELDS, map(list, scalars), strict=True)),
            list(chain.from_iterable(parsed)),
            role_counts,
            np.array(valid_from, dtype=np.int64),
            np.array(valid_to, dtype=np.int64),
            " ".join(filter(None, tokens)).split(" ") if token_counts.any() else [],
            token_counts,
            np.concatenate([np.frombuffer(b, dtype=np.float32) for b in blobs]).reshape(len(rows), dim),
        )


class _Codes:
    """Interns strings to small ints, in first-seen order, so filters compare int arrays."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.ids: dict[str, int] = {v: i for i, v in enumerate(values)}

    def encode(self, values: list[str]) -> np.ndarray:
        """Codes of `values`, interning the new ones; one hash lookup per value."""
        base, n = len(self.ids), len(values)
        # A new value first seen at i is parked at base + i, then renumbered to base + its rank.
        raw = np.fromiter(map(self.ids.setdefault, values, count(base)), dtype=np.int64, count=n)
        fresh = list(islice(self.ids, base, None))
        lut = np.arange(base + n, dtype=np.int32)
        lut[[self.ids[v] for v in fresh]] = np.arange(base, base + len(fresh), dtype=np.int32)
        self.ids.update(zip(fresh, range(base, base + len(fresh)), strict=True))
        return lut[raw]

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
        self.roles = sparse.csc_matrix((0, 0), dtype=np.int8)  # row x role; only the pattern matters
        self.terms = _Codes()
        self.tf = sparse.csc_matrix((0, 0), dtype=np.float32)
        self.doc_len = np.zeros(0, dtype=np.float32)
        self.position: dict[str, int] = {}  # chunk_id -> row position of its live row
        # A key per row from its indexed words: ties at a top-k cut go the same way however (and into which
        # KB) the rows were added, as chunk ids and row order differ between builds of the same files.
        self.tiebreak = np.zeros(0, dtype=np.int64)
        self._open_rows = np.zeros(0, dtype=bool)  # rows with no allowed_roles (open to every role)
        # (rows, mean doc length) of the corpus BM25 statistics are taken over, per version (None = all
        # live rows), until rows change: a version scores as a from-scratch build of its files would.
        self._stats_cache: dict[int | None, tuple[np.ndarray, int, float]] = {}
        self.ann: AnnIndex | None = None  # the store's approximate graph over these rows, once large

    @property
    def vocab(self) -> dict[str, int]:
        return self.terms.ids

    def __len__(self) -> int:
        return self._stats(None)[1]

    def extend(self, c: Columns) -> None:
        """Add many rows in one pass (replacing live rows with the same chunk_id)."""
        n = len(c.chunk_ids)
        if not n:
            return
        self.kill(c.chunk_ids)
        start = len(self.rids)
        self.rids = _cat(self.rids, c.rids)
        self.alive = _cat(self.alive, np.ones(n, dtype=bool))
        self.vectors = _cat(self.vectors, np.asarray(c.vectors, dtype=np.float32).reshape(n, self.dim))
        self.valid_from = _cat(self.valid_from, np.asarray(c.valid_from, dtype=np.int64))
        self.valid_to = _cat(self.valid_to, np.asarray(c.valid_to, dtype=np.int64))
        for f in SCALAR_FIELDS:
            self.scalars[f] = _cat(self.scalars[f], self.codes[f].encode(c.scalars[f]))
        self.doc_len = _cat(self.doc_len, np.asarray(c.token_counts, dtype=np.float32))
        terms, roles = self.terms.encode(c.tokens), self.role_codes.encode(c.roles)
        self.tf = _grow(self.tf, c.token_counts, terms, len(self.terms.ids), np.float32).tocsc()
        self.roles = _grow(self.roles, c.role_counts, roles, len(self.role_codes.ids), np.int8).tocsc()
        self._open_rows = np.bincount(self.roles.indices, minlength=len(self.rids)) == 0
        self.position.update(zip(c.chunk_ids, range(start, start + n), strict=True))
        self.tiebreak = _cat(self.tiebreak, _keys(_row_words(c)))
        self._stats_cache.clear()

    def kill(self, chunk_ids: Sequence[str]) -> list[int]:
        """Mark the live rows of these chunk ids dead; returns their rids."""
        gone = [self.position.pop(c) for c in chunk_ids if c in self.position] if self.position else []
        self.alive[gone] = False
        self._stats_cache.clear()
        return [int(self.rids[p]) for p in gone]

    def set_valid_to(self, chunk_ids: Sequence[str], seq: int) -> None:
        """Record an expiry in memory (the caller wrote it to disk)."""
        pos = np.array([self.position[c] for c in chunk_ids if c in self.position], dtype=np.int64)
        current = self.valid_to[pos]
        self.valid_to[pos] = np.where((current == 0) | (current > seq), seq, current)
        self._stats_cache.clear()

    def mask(self, flt: SearchFilter) -> np.ndarray:
        """Boolean mask of live rows that pass the filter."""
        # The version's view is cached (BM25 statistics use it too); every other field narrows a copy.
        m = self._stats(flt.version_seq)[0].copy()
        wanted = (
            flt.tenant_ids,
            flt.dataset_ids,
            flt.visibility,
            flt.source_types,
            flt.sources,
            flt.document_ids,
        )
        for field, values in zip(SCALAR_FIELDS, wanted, strict=True):
            if values is not None:
                m &= np.isin(self.scalars[field], self.codes[field].codes(values))
        if flt.roles is not None:
            ok = self._open_rows.copy()
            for col in self.role_codes.codes(flt.roles):  # rows holding any wanted role, column by column
                ok[self.roles.indices[self.roles.indptr[col] : self.roles.indptr[col + 1]]] = True
            m &= ok
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
        return _top(idx, scores, k, self.tiebreak)

    def visible(self, flt: SearchFilter) -> np.ndarray | None:
        """The rows a caller's grant sees (tenant, dataset, visibility, roles; not a request's narrowing by
        source or document), or None when the filter restricts none of them."""
        if all(v is None for v in (flt.tenant_ids, flt.dataset_ids, flt.visibility, flt.roles)):
            return None
        return self.mask(replace(flt, source_types=None, sources=None, document_ids=None))

    def bm25(
        self,
        tokens: Sequence[str],
        mask: np.ndarray,
        k: int,
        version_seq: int | None = None,
        corpus: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Okapi BM25 top-k over masked rows: (positions, scores). idf and length norms come from
        `corpus` (the caller's visible rows: scores then say nothing about other tenants' documents),
        else from the version's view (all live rows when `version_seq` is None)."""
        terms = [self.vocab[t] for t in tokens if t in self.vocab]
        if not terms or not mask.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if corpus is None:
            corpus, n_live, avg_len = self._stats(version_seq)
        else:
            n_live = int(corpus.sum())
            avg_len = float(self.doc_len[corpus].mean()) if n_live else 1.0
        n_live = max(n_live, 1)
        scores = np.zeros(len(self.rids), dtype=np.float32)
        for term in terms:  # repeated query terms count again, as in Lucene
            lo, hi = self.tf.indptr[term], self.tf.indptr[term + 1]
            rows, tf = self.tf.indices[lo:hi], self.tf.data[lo:hi]
            live = corpus[rows]
            rows, tf = rows[live], tf[live]
            df = len(rows)
            if df == 0:
                continue
            idf = np.log1p((n_live - df + 0.5) / (df + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.doc_len[rows] / avg_len)
            scores[rows] += idf * tf * (BM25_K1 + 1) / (tf + norm)
        idx = np.flatnonzero(mask & (scores > 0))
        return _top(idx, scores[idx], k, self.tiebreak)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Everything this index holds, as plain arrays that later changes will not touch (for a snapshot)."""
        out = {
            "rids": self.rids,
            "alive": self.alive.copy(),
            "vectors": self.vectors,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to.copy(),
            "doc_len": self.doc_len,
            "tf_data": self.tf.data,
            "tf_indices": self.tf.indices,
            "tf_indptr": self.tf.indptr,
            "roles_indices": self.roles.indices,
            "roles_indptr": self.roles.indptr,
            "live_rows": np.fromiter(self.position.values(), dtype=np.int64, count=len(self.position)),
            "tiebreak": self.tiebreak,
            **_pack("live_ids", list(self.position)),
            **_pack("terms", list(self.terms.ids)),
            **_pack("role_names", list(self.role_codes.ids)),
        }
        for f in SCALAR_FIELDS:
            out.update({f"col_{f}": self.scalars[f], **_pack(f"codes_{f}", list(self.codes[f].ids))})
        return out

    @classmethod
    def from_arrays(cls, dim: int, a: Mapping[str, np.ndarray]) -> MemoryIndex:
        """Inverse of `to_arrays`; raises ValueError if the arrays do not fit together."""
        index = cls(dim)
        n = len(a["rids"])
        index.rids, index.vectors, index.valid_from, index.doc_len = (
            a["rids"],
            a["vectors"],
            a["valid_from"],
            a["doc_len"],
        )
        index.alive, index.valid_to = np.array(a["alive"]), np.array(a["valid_to"])  # changed in place later
        index.terms, index.role_codes = _Codes(_unpack(a, "terms")), _Codes(_unpack(a, "role_names"))
        for f in SCALAR_FIELDS:
            index.scalars[f], index.codes[f] = a[f"col_{f}"], _Codes(_unpack(a, f"codes_{f}"))
        index.tf = sparse.csc_matrix(
            (a["tf_data"], a["tf_indices"], a["tf_indptr"]), shape=(n, len(index.terms.ids))
        )
        roles = a["roles_indices"]
        index.roles = sparse.csc_matrix(
            (np.ones(len(roles), dtype=np.int8), roles, a["roles_indptr"]),
            shape=(n, len(index.role_codes.ids)),
        )
        index.tf.check_format(full_check=True)
        index.roles.check_format(full_check=True)
        index._open_rows = np.bincount(roles, minlength=n) == 0
        index.position = dict(zip(_unpack(a, "live_ids"), a["live_rows"].tolist(), strict=True))
        if "tiebreak" in a:
            index.tiebreak = a["tiebreak"]
        else:  # a snapshot from before tie keys: ties go by row order until the store is re-read
            index.tiebreak = np.zeros(n, dtype=np.int64)
        columns = [index.alive, index.valid_from, index.valid_to, index.doc_len, *index.scalars.values()]
        if (
            index.vectors.shape != (n, dim)
            or any(c.shape != (n,) for c in [*columns, index.tiebreak])
            or index.alive.dtype != bool
        ):
            raise ValueError("snapshot arrays do not fit together")
        return index

    def _stats(self, seq: int | None) -> tuple[np.ndarray, int, float]:
        """(corpus mask, row count, mean doc length) of live rows, or of version `seq`'s view."""
        if seq not in self._stats_cache:
            corpus = (
                self.alive
                if seq is None
                else (self.alive & (self.valid_from <= seq) & ((self.valid_to == 0) | (self.valid_to > seq)))
            )
            n = int(corpus.sum())
            self._stats_cache[seq] = (corpus, n, float(self.doc_len[corpus].mean()) if n else 1.0)
        return self._stats_cache[seq]


def _pack(name: str, strings: list[str]) -> dict[str, np.ndarray]:
    """Strings as one UTF-8 byte array plus their lengths (no pickle, no fixed width)."""
    blob = "".join(strings).encode("utf-8", "surrogatepass")
    return {f"{name}_blob": np.frombuffer(blob, dtype=np.uint8), f"{name}_len": _counts(strings)}


def _unpack(a: Mapping[str, np.ndarray], name: str) -> list[str]:
    text = a[f"{name}_blob"].tobytes().decode("utf-8", "surrogatepass")
    ends = np.cumsum(a[f"{name}_len"]).tolist()
    if (ends[-1] if ends else 0) != len(text):
        raise ValueError(f"snapshot strings {name!r} are damaged")
    return [text[i:j] for i, j in zip([0, *ends[:-1]], ends, strict=True)]


def _counts(lists: Iterable[Sized]) -> np.ndarray:
    return np.array([len(x) for x in lists], dtype=np.int64)


def _cat(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    return new if len(old) == 0 else np.concatenate([old, new])


def _grow(
    old: sparse.spmatrix, counts: np.ndarray, cols: np.ndarray, width: int, dtype: type
) -> sparse.spmatrix:
    """`old` plus rows holding `counts[i]` entries each from `cols` (duplicates summed), as CSR."""
    rows = np.repeat(np.arange(len(counts)), counts)
    new = sparse.csr_matrix((np.ones(len(cols), dtype=dtype), (rows, cols)), shape=(len(counts), width))
    if old.shape[0] == 0:
        return new
    old = sparse.csr_matrix(old)
    old.resize((old.shape[0], width))
    return sparse.vstack([old, new], format="csr")


def _top(idx: np.ndarray, scores: np.ndarray, k: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The k best (positions, scores); ties, also those at the cut, broken by the rows' chunk-id keys, so
    an incremental build and a from-scratch one return the same rows (row order breaks what is left)."""
    if len(idx) > k:
        kth = np.partition(-scores, k - 1)[k - 1]
        keep = -scores <= kth  # every row tied with the k-th best stays in until the keys decide
        idx, scores = idx[keep], scores[keep]
    order = np.lexsort((idx, keys[idx], -scores))[:k]
    return idx[order], scores[order]


def _row_words(c: Columns) -> list[str]:
    ends = np.cumsum(c.token_counts).tolist()
    return [" ".join(c.tokens[start:end]) for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def _keys(texts: Sequence[str]) -> np.ndarray:
    digests = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest() for t in texts)
    return np.frombuffer(digests, dtype=np.int64).copy()
