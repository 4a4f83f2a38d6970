"""What the store tests share: a base chunk to vary with `dataclasses.replace`, and unit vectors."""

from __future__ import annotations

import numpy as np

from lore.schema import Chunk

DIM = 4
BASE = Chunk(
    chunk_id="c0",
    text="正文",
    parent_id="p0",
    parent_text="父段",
    kb_id="kb",
    document_id="d0",
    file_path="a.md",
    file_sha256="0" * 64,
    chunk_index=0,
    chunk_schema="v1",
    embedding_model="m",
)


def unit_vectors(n: int, seed: int = 1) -> np.ndarray:
    """`n` random vectors of length 1 (DIM wide), the same for the same seed."""
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
