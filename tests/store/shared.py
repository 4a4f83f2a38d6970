"""What the store tests share besides the base chunk (`tests.chunks`): unit vectors."""

from __future__ import annotations

import numpy as np

DIM = 4


def unit_vectors(n: int, seed: int = 1) -> np.ndarray:
    """`n` random vectors of length 1 (DIM wide), the same for the same seed."""
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
