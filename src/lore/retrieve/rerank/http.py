"""A `/rerank` endpoint: the protocol Text Embeddings Inference, vLLM, Xinference, Jina and Cohere serve
(query + documents -> one relevance score per document), through the shared retry client."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from lore.errors import ConfigError
from lore.http_client import SNIPPET, EndpointClient
from lore.retrieve.rerank.base import RerankError, reorder
from lore.schema import Hit

_API_KEY_ENV = ("LORE_RERANK_API_KEY",)


def endpoint_url(base_url: str) -> str:
    """`.../rerank` as given, else the base URL with `/rerank` appended (`http://h:8080` -> TEI's
    `/rerank`, `http://h/v1` -> `/v1/rerank` of vLLM, Jina, Cohere and Xinference)."""
    url = base_url.rstrip("/")
    return url if url.endswith("/rerank") else url + "/rerank"


class HttpReranker(EndpointClient):
    """Client for a rerank endpoint; `api` picks the request shape ("cohere": documents/top_n, "tei": texts).
    Replies of either shape are read: `[{"index", "score"}]` or
    `{"results": [{"index", "relevance_score"}]}`."""

    name = "http"
    failure = RerankError
    max_wait_s = 5.0

    def __init__(
        self,
        base_url: str,
        model: str = "",
        api: str = "cohere",
        api_key: str | None = None,
        timeout_s: float = 10.0,
        max_retries: int = 1,
        backoff_s: float = 0.2,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"rerank.base_url: must start with http:// or https://, got {base_url!r}")
        if api not in ("cohere", "tei"):
            raise ConfigError(f"rerank.api: 'cohere' or 'tei', got {api!r}")
        self.url, self.model, self.api = endpoint_url(base_url), model, api
        self._where = f"rerank endpoint {self.url}"
        self.max_retries, self.backoff_s = max_retries, backoff_s
        super().__init__(api_key, _API_KEY_ENV, httpx.Timeout(timeout_s))

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        texts = [h.chunk.text for h in hits]
        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": texts, "raw_scores": False, "truncate": True}
        else:
            body = {"query": query, "documents": texts, "top_n": len(texts), "return_documents": False}
            if self.model:
                body["model"] = self.model
        payload = self.post_json(self.url, body, self._where)
        scores = self._parse(payload, len(hits))
        return reorder(hits, scores)

    def _parse(self, payload: Any, expected: int) -> list[float]:
        """One finite score per document, by index; anything else is a RerankError."""
        where = self._where
        items = payload.get("results", payload.get("data")) if isinstance(payload, dict) else payload
        if not isinstance(items, list):
            raise RerankError(f"{where}: reply has no result list: {str(payload)[:SNIPPET]}")
        scores: dict[int, float] = {}
        for item in items:
            try:
                index = item["index"]
                score = item["relevance_score"] if "relevance_score" in item else item["score"]
            except (KeyError, TypeError) as exc:
                raise RerankError(f"{where}: malformed result {str(item)[:100]} ({exc!r})") from exc
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < expected
                or not isinstance(score, int | float)
                or isinstance(score, bool)
                or not math.isfinite(score)
            ):
                raise RerankError(f"{where}: malformed result {str(item)[:100]}")
            if index in scores:
                raise RerankError(f"{where}: document {index} scored twice")
            scores[index] = float(score)
        if len(scores) != expected:
            raise RerankError(f"{where}: sent {expected} documents, {len(scores)} scored")
        return [scores[i] for i in range(expected)]


def from_settings(settings: Any, **_: Any) -> HttpReranker:
    """`[rerank] provider = "http"` with `base_url`, `model`, `api`, `timeout_s`, `max_retries`."""
    if not settings.base_url:
        raise ConfigError("rerank.base_url: required for the http provider")
    return HttpReranker(
        settings.base_url,
        settings.model,
        settings.api,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
    )
