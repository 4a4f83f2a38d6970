"""The `Embedder` protocol and the provider registry (built-ins register like plugins)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from lore.registry import Registry

InputKind = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    model_id: str  # recorded on the knowledge base; a different id is a different model
    dim: int
    batch_size: int

    def embed_batch(self, texts: Sequence[str], kind: InputKind) -> np.ndarray:
        """Embed one batch; returns an array of shape (len(texts), dim), rows L2-normalised."""


# Cosines an embedder gives unrelated (low) and closely related (high) texts. A provider declares its own
# `similarity_range`; one that does not is taken to use the whole positive range.
DEFAULT_SIMILARITY_RANGE = (0.0, 1.0)


def similarity_range(embedder: object | None) -> tuple[float, float]:
    """The (low, high) cosine band of `embedder`'s model."""
    declared = getattr(embedder, "similarity_range", None)
    return tuple(declared) if declared else DEFAULT_SIMILARITY_RANGE


def scaled_similarity(embedder: object | None, cosine: np.ndarray | float) -> np.ndarray | float:
    """Cosine mapped onto the embedder's band: 0 at its low end, 1 at its high end (not clipped)."""
    low, high = similarity_range(embedder)
    return (cosine - low) / (high - low)


EmbedderFactory = Callable[..., Embedder]
EMBEDDERS: Registry[EmbedderFactory] = Registry("embed.provider", "lore.embedders")


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Register a provider under `name` (used by built-ins and plugins alike)."""
    EMBEDDERS.register(name, factory)


def get_embedder(provider: str, **options: Any) -> Embedder:
    """Create the embedder for `provider` with provider-specific options."""
    return EMBEDDERS.get(provider)(**options)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation as float32 (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: np.ndarray = vectors / norms
    return normalised
