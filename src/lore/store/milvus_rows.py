"""How a `Chunk` is laid out as a Milvus row (columns, the JSON `meta` field, encoded roles and tokens),
checked against the column sizes, and back; rows batched under gRPC's message limit."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from lore.errors import LoreError
from lore.schema import Chunk
from lore.store.milvus_expr import decode_roles, encode_roles, encode_tokens

# VARCHAR columns and their max_length; Milvus counts bytes, so we check UTF-8 length ourselves.
VARCHAR = {"chunk_id": 512, "document_id": 512, "file_path": 4096, "text": 65535, "parent_text": 65535}
VARCHAR |= dict.fromkeys(["tenant_id", "dataset_id", "visibility", "source_type", "source"], 256)
MAX_ROLES = 64
ROLE_LEN = 256
# allowed_roles is stored as "|hex1|hex2|" (see milvus_expr.encode_roles) next to a BOOL roles_open.
VARCHAR["roles_text"] = MAX_ROLES * (2 * ROLE_LEN + 1) + 1
VARCHAR["lex"] = 65535
INDEXED_SCALARS = ("tenant_id", "dataset_id", "document_id")

CHUNK_FIELDS = [f.name for f in dataclasses.fields(Chunk)]
# Chunk fields stored in columns of their own, as they are.
COLUMNS = [*(n for n in VARCHAR if n in CHUNK_FIELDS), "valid_from_seq", "valid_to_seq"]
META = [n for n in CHUNK_FIELDS if n not in (*COLUMNS, "allowed_roles")]  # stored in the JSON field `meta`
OUTPUT = [*COLUMNS, "roles_text", "meta"]  # enough to rebuild a Chunk
ROW = [*OUTPUT, "roles_open", "dense", "lex"]  # a full row minus the BM25 output, for re-upserting
FIELDS = {*ROW, "sparse"}  # every field of the current schema
BATCH_ROWS = 256
BATCH_BYTES = 8 << 20  # stays well under gRPC's 64 MB message limit


class ChunkTooLargeError(LoreError):
    """A chunk field is longer than the Milvus column can hold."""


def to_row(chunk: Chunk, vector: np.ndarray, tokens: list[str]) -> dict[str, Any]:
    data = dataclasses.asdict(chunk)
    row = {name: data[name] for name in COLUMNS}
    row["meta"] = {name: data[name] for name in META}
    row["dense"] = vector.tolist()
    row["lex"] = encode_tokens(tokens)
    roles = chunk.allowed_roles
    if len(roles) > MAX_ROLES or any(len(r.encode("utf-8")) > ROLE_LEN for r in roles):
        raise ChunkTooLargeError(
            f"chunk {chunk.chunk_id!r}: allowed_roles holds at most {MAX_ROLES} roles of {ROLE_LEN} bytes"
        )
    row["roles_open"] = not roles
    row["roles_text"] = encode_roles(roles)
    for name, limit in VARCHAR.items():
        size = len(row[name].encode("utf-8"))
        if size > limit:
            raise ChunkTooLargeError(
                f"chunk {chunk.chunk_id!r}: {name} is {size} bytes, the Milvus store holds at most {limit}; "
                "use smaller chunks"
            )
    return row


def to_chunk(entity: dict[str, Any]) -> Chunk:
    meta = entity.get("meta") or {}
    values = {name: entity[name] for name in COLUMNS}
    values["allowed_roles"] = decode_roles(entity.get("roles_text"))
    # Keys a newer or older Chunk does not know are ignored; missing ones take their defaults.
    values.update({name: meta[name] for name in META if name in meta})
    return Chunk(**values)


def batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        row_size = len(row["text"]) + len(row["parent_text"]) + len(row["lex"]) + 4 * len(row["dense"])
        if batch and (len(batch) >= BATCH_ROWS or size + row_size > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += row_size
    if batch:
        yield batch
