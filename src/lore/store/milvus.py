"""Milvus backend: dense vectors, BM25 and scalar filters in one collection (Milvus Lite file or server)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lore.config import StoreSettings
from lore.errors import EmbeddingMismatchError, LoreError, UnavailableError
from lore.lexical import TOKENIZER_VERSION
from lore.schema import Chunk, Hit, SearchFilter
from lore.store.base import StoreQuery
from lore.store.fusion import fuse_hits
from lore.store.milvus_conn import (
    UNAVAILABLE,
    ResilientClient,
    acquire_lite,
    connection_kwargs,
    import_pymilvus,
    is_not_found,
    release_lite,
)
from lore.store.milvus_expr import encode_tokens, filter_expr, str_list
from lore.store.milvus_gate import require_supported
from lore.store.milvus_rows import (
    FIELDS,
    INDEXED_SCALARS,
    OUTPUT,
    ROW,
    VARCHAR,
    batches,
    to_chunk,
    to_row,
)
from lore.store.retokenise import BATCH, Reporter, index_tokens, milvus_version, stamp_milvus

log = logging.getLogger("lore.store.milvus")

# Lore tokenises text itself and writes each token as one hex run (milvus_expr.encode_token), which
# the whitespace tokenizer and jieba (Milvus Lite has no whitespace tokenizer) both keep whole. So
# accents are folded by Lore's tokenizer, not by an analyzer filter: `asciifolding` would see only
# hex (and Milvus Lite accepts it in `filter` but does not apply it).
_WHITESPACE: dict[str, Any] = {"tokenizer": "whitespace"}
_JIEBA_EXACT: dict[str, Any] = {"tokenizer": {"type": "jieba", "mode": "exact"}}

_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_ID_BATCH = 1000
_INDEXED = ("dense", "sparse", *INDEXED_SCALARS)


class OutdatedCollectionError(LoreError):
    """A collection was created with another schema (an older Lore) and must be rebuilt."""


def collection_name(name: str) -> str:
    """Map a knowledge-base name to a valid Milvus collection name, keeping distinct names distinct."""
    if _VALID_NAME.fullmatch(name):
        return name
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not safe or safe[0].isdigit():
        safe = "_" + safe
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{safe[:240]}_{digest}"


class MilvusStore:
    """A `VectorStore` on one Milvus collection: FLAT cosine dense index plus BM25 sparse index."""

    bm25_scores_are_scoped = False  # Milvus's BM25 counts every tenant's chunks

    def __init__(
        self,
        collection: str,
        data_dir: Path,
        dim: int,
        uri: str = "",
        connection: StoreSettings | None = None,
    ) -> None:
        self._pm = import_pymilvus()
        self.name = collection_name(collection)
        self.dim = dim
        self._dirty = False
        self._closed = False
        self._lite_path = ""
        if not uri or uri.endswith(".db"):
            self._lite_path = os.path.abspath(uri or data_dir / "milvus.db")
            Path(self._lite_path).parent.mkdir(parents=True, exist_ok=True)
            acquire_lite(self._lite_path)
        target = self._lite_path or uri
        try:
            if self._lite_path:
                self._client = self._pm.MilvusClient(target, dedicated=True)
            else:  # a server: credentials, database and TLS; reconnects after a restart
                patience = connection.timeout_s if connection is not None else 10.0
                self._client = ResilientClient(
                    self._pm, target, self.name, connection_kwargs(connection), patience_s=patience
                )
        except Exception as exc:
            release_lite(self._lite_path)
            if not isinstance(exc, self._pm.MilvusException):
                raise
            log.error("cannot open Milvus at %s: %s", target, exc)
            if self._lite_path:
                raise LoreError(
                    "cannot open this knowledge base's Milvus Lite file: one process may use it at a time "
                    "(stop the other one); details are in the log"
                ) from exc
            raise UnavailableError(UNAVAILABLE) from exc
        created = False
        try:
            require_supported(self._client)  # before anything is read or written
            if self._client.has_collection(self.name):
                self._check_existing()
                self._ensure_indexes()  # a creator that stopped (or is still) between collection and index
            else:
                created = self._create()
            # Milvus Lite reopens collections unloaded.
            self._client.load_collection(self.name)
            self._upgrade_tokens()
        except BaseException:
            if created:
                self._discard()
            self.close()
            raise

    def _create(self) -> bool:
        """Create the collection, its indexes and tokenizer stamp; True if this process created the
        collection, False if another one (a replica starting at the same moment) did first: success too."""
        analyzers = [_JIEBA_EXACT] if self._lite_path else [_WHITESPACE, _JIEBA_EXACT]
        for i, analyzer in enumerate(analyzers):
            try:
                schema = self._schema(analyzer)
                self._client.create_collection(self.name, schema=schema, consistency_level="Strong")
                break
            except self._pm.MilvusException as exc:
                # What exists decides, not the error text: a server's "already exists" has no code of its own.
                if self._client.has_collection(self.name):  # lost the race: use the winner's collection
                    log.info("milvus %s: created by another process meanwhile", self.name)
                    self._check_existing()
                    self._ensure_indexes()
                    return False
                if i == len(analyzers) - 1:
                    raise
                # Servers without the whitespace tokenizer refuse the schema; jieba is everywhere.
                log.info("milvus %s: schema refused (%s); trying the jieba tokenizer", self.name, exc)
        try:
            self._ensure_indexes()
            stamp_milvus(self._client, self.name)
        except BaseException:
            self._discard()
            raise
        return True

    def _ensure_indexes(self) -> None:
        """Create whichever of the indexes is missing; one another process created meanwhile is success."""
        missing = [f for f in _INDEXED if not self._client.list_indexes(self.name, field_name=f)]
        if not missing:
            return
        try:
            # sync=False skips pymilvus' 0.5 s polling per index; an empty collection is indexed at once.
            self._client.create_index(self.name, self._index_params(missing), sync=False)
        except self._pm.MilvusException:
            if any(not self._client.list_indexes(self.name, field_name=f) for f in missing):
                raise

    def _discard(self) -> None:
        """Drop a collection this process created but could not finish (index or load refused)."""
        try:
            self._client.drop_collection(self.name)
            log.warning("milvus %s: dropped the collection it could not finish creating", self.name)
        except Exception as exc:  # noqa: BLE001 - the original failure is the one to report
            log.error("milvus %s: could not drop the half-made collection: %s", self.name, exc)

    def _upgrade_tokens(self) -> None:
        """Re-write `lex` of every row from its chunk's text if an older tokenizer wrote it (whole rows are
        upserted back, vectors as they were), then record the current tokenizer on the collection."""
        found = milvus_version(self._client, self.name)
        if found == TOKENIZER_VERSION:
            return
        ids = [r["chunk_id"] for r in self._scan("chunk_id != ''", ["chunk_id"])]
        reporter = Reporter(f"Milvus collection {self.name!r}", found, len(ids))
        for start in range(0, len(ids), BATCH):
            rows = self._rows(ids[start : start + BATCH], ROW)
            for row in rows:
                row["lex"] = encode_tokens(index_tokens(to_chunk(row)))
                row["dense"] = [float(x) for x in row["dense"]]
            self._upsert_rows(rows)
            reporter.step(start + len(rows))
        stamp_milvus(self._client, self.name)
        reporter.finish(len(ids))

    def _schema(self, analyzer: dict[str, Any]) -> Any:
        dt = self._pm.DataType
        schema = self._pm.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", dt.VARCHAR, is_primary=True, max_length=VARCHAR["chunk_id"])
        schema.add_field("dense", dt.FLOAT_VECTOR, dim=self.dim)
        schema.add_field(
            "lex", dt.VARCHAR, max_length=VARCHAR["lex"], enable_analyzer=True, analyzer_params=analyzer
        )
        schema.add_field("sparse", dt.SPARSE_FLOAT_VECTOR)
        for name, length in VARCHAR.items():
            if name not in ("chunk_id", "lex"):
                schema.add_field(name, dt.VARCHAR, max_length=length)
        schema.add_field("roles_open", dt.BOOL)
        schema.add_field("valid_from_seq", dt.INT64)
        schema.add_field("valid_to_seq", dt.INT64)
        schema.add_field("meta", dt.JSON)
        bm25 = self._pm.FunctionType.BM25
        schema.add_function(
            self._pm.Function("lex_bm25", bm25, input_field_names="lex", output_field_names="sparse")
        )
        return schema

    def _index_params(self, fields: Sequence[str] = ()) -> Any:
        params = self._pm.MilvusClient.prepare_index_params()
        wanted = set(fields or _INDEXED)
        # FLAT keeps dense search exact: filtered HNSW can return fewer hits than asked.
        if "dense" in wanted:
            params.add_index("dense", index_type="FLAT", metric_type="COSINE")
        if "sparse" in wanted:
            params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        for name in INDEXED_SCALARS:
            if name in wanted:
                params.add_index(name, index_type="INVERTED")
        return params

    def _check_existing(self) -> None:
        fields = self._client.describe_collection(self.name)["fields"]
        names = {f["name"] for f in fields}
        if names != FIELDS:
            missing, extra = ", ".join(sorted(FIELDS - names)), ", ".join(sorted(names - FIELDS))
            raise OutdatedCollectionError(
                f"Milvus collection {self.name!r} was created by an older Lore with another schema "
                f"(missing fields: {missing or '-'}; unknown fields: {extra or '-'}); rebuild it: "
                "drop the collection (or delete its knowledge base) and ingest the documents again"
            )
        dense = next(f for f in fields if f["name"] == "dense")
        found = int(dense["params"]["dim"])
        if found != self.dim:
            raise EmbeddingMismatchError(
                f"Milvus collection {self.name!r} holds {found}-d vectors, the embedding model gives "
                f"{self.dim}-d"
            )

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[list[str]]) -> None:
        """Insert or replace chunks by `chunk_id`, in batches."""
        if not len(chunks) == len(vectors) == len(tokens):
            raise ValueError("upsert: chunks, vectors and tokens must have the same length")
        if not chunks:
            return
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[1] != self.dim:
            raise EmbeddingMismatchError(f"upsert: vectors of shape {vecs.shape}, collection dim {self.dim}")
        # One request must not carry the same primary key twice; the last one wins.
        rows = {c.chunk_id: to_row(c, v, t) for c, v, t in zip(chunks, vecs, tokens, strict=True)}
        self._upsert_rows(list(rows.values()))

    def _upsert_rows(self, rows: list[dict[str, Any]]) -> None:
        for batch in batches(rows):
            self._client.upsert(self.name, batch)
        self._dirty = True

    def search(self, query: StoreQuery) -> list[Hit]:
        """Dense, BM25 or RRF-fused hybrid search with the filter applied inside Milvus."""
        if query.k <= 0:
            return []
        expr = filter_expr(query.filter)
        text = encode_tokens(query.tokens)
        vector = None if query.vector is None else np.asarray(query.vector, dtype=np.float32).ravel().tolist()
        if vector is not None and len(vector) != self.dim:
            raise EmbeddingMismatchError(f"query vector has {len(vector)} dimensions, collection {self.dim}")
        if query.mode == "dense":
            if vector is None:
                raise ValueError("dense search needs a query vector")
            return self._search_one("dense", vector, query.k, expr)
        if query.mode == "bm25":
            return self._search_one("sparse", text, query.k, expr) if text else []
        if query.mode != "hybrid":
            raise ValueError(f"unknown search mode {query.mode!r}")
        # Two searches fused here rather than Milvus's hybrid_search: its RRF returns only the fused
        # score, and the evidence judgement and the reranker need each component's score and rank.
        dense = self._search_one("dense", vector, query.k, expr) if vector is not None else []
        bm25 = self._search_one("sparse", text, query.k, expr) if text else []
        return fuse_hits(dense, bm25, query.k, query.rrf_k)

    def _search_one(self, field: str, data: Any, k: int, expr: str) -> list[Hit]:
        dense = field == "dense"
        result = self._client.search(
            self.name,
            data=[data],
            anns_field=field,
            limit=k,
            filter=expr,
            output_fields=OUTPUT,
            search_params={"metric_type": "COSINE" if dense else "BM25"},
        )
        hits = []
        for rank, hit in enumerate(result[0], start=1):
            # Milvus Lite reports BM25 as a negative distance, a server as a positive score.
            score = float(hit["distance"]) if dense else abs(float(hit["distance"]))
            chunk = to_chunk(hit["entity"])
            if dense:
                hits.append(Hit(chunk, score, dense_score=score, dense_rank=rank))
            else:
                hits.append(Hit(chunk, score, bm25_score=score, bm25_rank=rank))
        return hits

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Fetch chunks by id, in the order asked; missing ids are skipped."""
        found = {row["chunk_id"]: to_chunk(row) for row in self._rows(chunk_ids, OUTPUT)}
        return [found[i] for i in dict.fromkeys(chunk_ids) if i in found]

    def ids_valid_from(self, seq: int) -> list[str]:
        """Ids of every chunk whose `valid_from_seq` is `seq`, read in pages (no query size cap)."""
        return [r["chunk_id"] for r in self._scan(f"valid_from_seq == {int(seq)}", ["chunk_id"])]

    def expired(self) -> list[tuple[str, int, int]]:
        """(chunk_id, valid_from_seq, valid_to_seq) of every expired chunk, read in pages."""
        return [
            (r["chunk_id"], int(r["valid_from_seq"]), int(r["valid_to_seq"]))
            for r in self._scan("valid_to_seq != 0", ["chunk_id", "valid_from_seq", "valid_to_seq"])
        ]

    def _scan(self, expr: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row matching `expr`, in pages of 1,000 (query() caps its result size)."""
        it = self._client.query_iterator(self.name, batch_size=1000, filter=expr, output_fields=fields)
        try:
            while page := it.next():
                yield from page
        finally:
            it.close()

    def delete(self, chunk_ids: Sequence[str]) -> int:
        """Remove chunks by id; returns how many existed."""
        # Milvus deletes by key without saying which keys existed, so look them up first.
        existing = [row["chunk_id"] for row in self._rows(chunk_ids, ["chunk_id"])]
        for start in range(0, len(existing), _ID_BATCH):
            self._client.delete(self.name, ids=existing[start : start + _ID_BATCH])
        self._dirty = self._dirty or bool(existing)
        return len(existing)

    def expire(self, chunk_ids: Sequence[str], seq: int) -> int:
        """Set `valid_to_seq = seq` on still-valid chunks; returns how many were updated."""
        # No partial update in Milvus Lite: read whole rows (vector included) and upsert them back.
        # Only ever shorten a validity window: re-expiring must not revive versions in between.
        rows = [
            r for r in self._rows(chunk_ids, ROW) if r["valid_to_seq"] in (0, None) or r["valid_to_seq"] > seq
        ]
        for row in rows:
            row["valid_to_seq"] = int(seq)
            row["dense"] = [float(x) for x in row["dense"]]
        if rows:
            self._upsert_rows(rows)
        return len(rows)

    def count(self, filter: SearchFilter | None = None) -> int:
        """Number of chunks matching the filter."""
        expr = filter_expr(filter) if filter else ""
        result = self._client.query(self.name, filter=expr, output_fields=["count(*)"])
        return int(result[0]["count(*)"])

    def drop(self) -> None:
        """Delete the whole collection."""
        try:
            if self._client.has_collection(self.name):
                self._client.drop_collection(self.name)
        except self._pm.MilvusException as exc:
            if not is_not_found(exc):  # another process dropped it meanwhile: done too
                raise
        self._dirty = False

    def close(self) -> None:
        """Flush pending writes, close the connection and stop an unused Milvus Lite server."""
        if self._closed:
            return
        self._closed = True
        try:
            # Only Milvus Lite needs it; servers persist by themselves and rate-limit flushes.
            if self._dirty and self._lite_path and self._client.has_collection(self.name):
                self._client.flush(self.name)
        finally:
            self._client.close()
            release_lite(self._lite_path)

    def _rows(self, chunk_ids: Sequence[str], fields: list[str]) -> list[dict[str, Any]]:
        ids = list(dict.fromkeys(chunk_ids))
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), _ID_BATCH):
            expr = f"chunk_id in {str_list(ids[start : start + _ID_BATCH])}"
            rows.extend(dict(r) for r in self._client.query(self.name, filter=expr, output_fields=fields))
        return rows
