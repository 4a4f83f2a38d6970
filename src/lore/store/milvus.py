"""Milvus backend: dense vectors, BM25 and scalar filters in one collection (Milvus Lite file or server)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from lore.config import StoreSettings
from lore.errors import EmbeddingMismatchError, LoreError, MissingDependencyError
from lore.schema import Chunk, Hit, SearchFilter
from lore.store.base import StoreQuery
from lore.store.milvus_conn import ResilientClient, connection_kwargs
from lore.store.milvus_expr import decode_roles, encode_roles, encode_tokens, filter_expr, str_list

_INSTALL_HINT = 'pip install "pymilvus[milvus_lite]"'

# VARCHAR columns and their max_length; Milvus counts bytes, so we check UTF-8 length ourselves.
_VARCHAR = {"chunk_id": 512, "document_id": 512, "file_path": 4096, "text": 65535, "parent_text": 65535}
_VARCHAR |= dict.fromkeys(["tenant_id", "dataset_id", "visibility", "source_type", "source"], 256)
_MAX_ROLES = 64
_ROLE_LEN = 256
# allowed_roles is stored as "|hex1|hex2|" (see milvus_expr.encode_roles) next to a BOOL roles_open.
_VARCHAR["roles_text"] = _MAX_ROLES * (2 * _ROLE_LEN + 1) + 1
_VARCHAR["lex"] = 65535
_INDEXED_SCALARS = ("tenant_id", "dataset_id", "document_id")

_CHUNK_FIELDS = [f.name for f in dataclasses.fields(Chunk)]
# Chunk fields stored in columns of their own, as they are.
_COLUMNS = [*(n for n in _VARCHAR if n in _CHUNK_FIELDS), "valid_from_seq", "valid_to_seq"]
_META = [n for n in _CHUNK_FIELDS if n not in (*_COLUMNS, "allowed_roles")]  # stored in the JSON field `meta`
_OUTPUT = [*_COLUMNS, "roles_text", "meta"]  # enough to rebuild a Chunk
_ROW = [*_OUTPUT, "roles_open", "dense", "lex"]  # a full row minus the BM25 output, for re-upserting
_FIELDS = {*_ROW, "sparse"}  # every field of the current schema

# Lore tokenises text itself and writes each token as one hex run (milvus_expr.encode_token), which
# the whitespace tokenizer and jieba (Milvus Lite has no whitespace tokenizer) both keep whole.
_WHITESPACE = {"tokenizer": "whitespace"}
_JIEBA_EXACT = {"tokenizer": {"type": "jieba", "mode": "exact"}}

_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_BATCH_ROWS = 256
_BATCH_BYTES = 8 << 20  # stays well under gRPC's 64 MB message limit
_ID_BATCH = 1000

# Milvus Lite runs one in-process server per file; it is stopped when the last store using it closes.
_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}


class ChunkTooLargeError(LoreError):
    """A chunk field is longer than the Milvus column can hold."""


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


def _import_pymilvus() -> ModuleType:
    try:
        import pymilvus
    except ImportError as exc:
        raise MissingDependencyError(f"the Milvus store needs pymilvus: {_INSTALL_HINT}") from exc
    return pymilvus


class MilvusStore:
    """A `VectorStore` on one Milvus collection: FLAT cosine dense index plus BM25 sparse index."""

    def __init__(
        self,
        collection: str,
        data_dir: Path,
        dim: int,
        uri: str = "",
        connection: StoreSettings | None = None,
    ) -> None:
        self._pm = _import_pymilvus()
        self.name = collection_name(collection)
        self.dim = dim
        self._dirty = False
        self._closed = False
        self._lite_path = ""
        if not uri or uri.endswith(".db"):
            self._lite_path = os.path.abspath(uri or data_dir / "milvus.db")
            Path(self._lite_path).parent.mkdir(parents=True, exist_ok=True)
            _acquire_lite(self._lite_path)
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
            _release_lite(self._lite_path)
            if not isinstance(exc, self._pm.MilvusException):
                raise
            hint = " (Milvus Lite allows one process per file)" if self._lite_path else ""
            raise LoreError(f"cannot open Milvus at {target}{hint}: {exc}") from exc
        try:
            if self._client.has_collection(self.name):
                self._check_existing()
            else:
                self._create()
            # Milvus Lite reopens collections unloaded.
            self._client.load_collection(self.name)
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        analyzers = [_JIEBA_EXACT] if self._lite_path else [_WHITESPACE, _JIEBA_EXACT]
        for i, analyzer in enumerate(analyzers):
            try:
                schema = self._schema(analyzer)
                self._client.create_collection(self.name, schema=schema, consistency_level="Strong")
                break
            except self._pm.MilvusException as exc:
                # Older servers lack the whitespace tokenizer; fall back to jieba.
                if i == len(analyzers) - 1 or "tokenizer" not in str(exc):
                    raise
        # sync=False skips pymilvus' 0.5 s polling per index; an empty collection is indexed at once.
        self._client.create_index(self.name, self._index_params(), sync=False)

    def _schema(self, analyzer: dict[str, Any]) -> Any:
        dt = self._pm.DataType
        schema = self._pm.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", dt.VARCHAR, is_primary=True, max_length=_VARCHAR["chunk_id"])
        schema.add_field("dense", dt.FLOAT_VECTOR, dim=self.dim)
        schema.add_field(
            "lex", dt.VARCHAR, max_length=_VARCHAR["lex"], enable_analyzer=True, analyzer_params=analyzer
        )
        schema.add_field("sparse", dt.SPARSE_FLOAT_VECTOR)
        for name, length in _VARCHAR.items():
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

    def _index_params(self) -> Any:
        params = self._pm.MilvusClient.prepare_index_params()
        # FLAT keeps dense search exact: filtered HNSW can return fewer hits than asked.
        params.add_index("dense", index_type="FLAT", metric_type="COSINE")
        params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        for name in _INDEXED_SCALARS:
            params.add_index(name, index_type="INVERTED")
        return params

    def _check_existing(self) -> None:
        fields = self._client.describe_collection(self.name)["fields"]
        names = {f["name"] for f in fields}
        if names != _FIELDS:
            missing, extra = ", ".join(sorted(_FIELDS - names)), ", ".join(sorted(names - _FIELDS))
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
        rows = {c.chunk_id: _to_row(c, v, t) for c, v, t in zip(chunks, vecs, tokens, strict=True)}
        self._upsert_rows(list(rows.values()))

    def _upsert_rows(self, rows: list[dict[str, Any]]) -> None:
        for batch in _batches(rows):
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
        parts = [("dense", vector, "COSINE"), ("sparse", text, "BM25")]
        requests = [
            self._pm.AnnSearchRequest([data], field, {"metric_type": metric}, query.k, expr)
            for field, data, metric in parts
            if data
        ]
        if not requests:
            return []
        result = self._client.hybrid_search(
            self.name, requests, self._pm.RRFRanker(query.rrf_k), limit=query.k, output_fields=_OUTPUT
        )
        return [Hit(_to_chunk(hit["entity"]), float(hit["distance"])) for hit in result[0]]

    def _search_one(self, field: str, data: Any, k: int, expr: str) -> list[Hit]:
        dense = field == "dense"
        result = self._client.search(
            self.name,
            data=[data],
            anns_field=field,
            limit=k,
            filter=expr,
            output_fields=_OUTPUT,
            search_params={"metric_type": "COSINE" if dense else "BM25"},
        )
        hits = []
        for rank, hit in enumerate(result[0], start=1):
            # Milvus Lite reports BM25 as a negative distance, a server as a positive score.
            score = float(hit["distance"]) if dense else abs(float(hit["distance"]))
            chunk = _to_chunk(hit["entity"])
            if dense:
                hits.append(Hit(chunk, score, dense_score=score, dense_rank=rank))
            else:
                hits.append(Hit(chunk, score, bm25_score=score, bm25_rank=rank))
        return hits

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Fetch chunks by id, in the order asked; missing ids are skipped."""
        found = {row["chunk_id"]: _to_chunk(row) for row in self._rows(chunk_ids, _OUTPUT)}
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

    def _scan(self, expr: str, fields: list[str]) -> Iterator[dict]:
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
            r
            for r in self._rows(chunk_ids, _ROW)
            if r["valid_to_seq"] in (0, None) or r["valid_to_seq"] > seq
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
        if self._client.has_collection(self.name):
            self._client.drop_collection(self.name)
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
            _release_lite(self._lite_path)

    def _rows(self, chunk_ids: Sequence[str], fields: list[str]) -> list[dict[str, Any]]:
        ids = list(dict.fromkeys(chunk_ids))
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), _ID_BATCH):
            expr = f"chunk_id in {str_list(ids[start : start + _ID_BATCH])}"
            rows.extend(dict(r) for r in self._client.query(self.name, filter=expr, output_fields=fields))
        return rows


def _to_row(chunk: Chunk, vector: np.ndarray, tokens: list[str]) -> dict[str, Any]:
    data = dataclasses.asdict(chunk)
    row = {name: data[name] for name in _COLUMNS}
    row["meta"] = {name: data[name] for name in _META}
    row["dense"] = vector.tolist()
    row["lex"] = encode_tokens(tokens)
    roles = chunk.allowed_roles
    if len(roles) > _MAX_ROLES or any(len(r.encode("utf-8")) > _ROLE_LEN for r in roles):
        raise ChunkTooLargeError(
            f"chunk {chunk.chunk_id!r}: allowed_roles holds at most {_MAX_ROLES} roles of {_ROLE_LEN} bytes"
        )
    row["roles_open"] = not roles
    row["roles_text"] = encode_roles(roles)
    for name, limit in _VARCHAR.items():
        size = len(row[name].encode("utf-8"))
        if size > limit:
            raise ChunkTooLargeError(
                f"chunk {chunk.chunk_id!r}: {name} is {size} bytes, the Milvus store holds at most {limit}; "
                "use smaller chunks"
            )
    return row


def _to_chunk(entity: dict[str, Any]) -> Chunk:
    meta = entity.get("meta") or {}
    values = {name: entity[name] for name in _COLUMNS}
    values["allowed_roles"] = decode_roles(entity.get("roles_text"))
    # Keys a newer or older Chunk does not know are ignored; missing ones take their defaults.
    values.update({name: meta[name] for name in _META if name in meta})
    return Chunk(**values)


def _batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        row_size = len(row["text"]) + len(row["parent_text"]) + len(row["lex"]) + 4 * len(row["dense"])
        if batch and (len(batch) >= _BATCH_ROWS or size + row_size > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += row_size
    if batch:
        yield batch


def _acquire_lite(path: str) -> None:
    with _lite_lock:
        _lite_users[path] = _lite_users.get(path, 0) + 1


def _release_lite(path: str) -> None:
    if not path:
        return
    with _lite_lock:
        users = _lite_users.get(path, 0) - 1
        if users > 0:
            _lite_users[path] = users
            return
        _lite_users.pop(path, None)
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:
            return
        # Stopping the in-process server frees the file lock for other processes.
        server_manager_instance.release_server(path)
