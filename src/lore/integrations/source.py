"""Where a retriever's passages come from: a `Lore` engine in this process, or a `lore serve` URL through
`LoreClient`; and the citation metadata every framework's document carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lore.client import Hit, LoreClient
from lore.errors import LoreError, MissingDependencyError

if TYPE_CHECKING:
    from lore.schema import SearchMode


def require(module: str, extra: str) -> None:
    """An install hint instead of a bare ImportError when an optional framework is missing."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        found = False
    if not found:
        raise MissingDependencyError(f'{module} is not installed: pip install "lore-kb[{extra}]"')


@dataclass
class PassageSource:
    """Searches one knowledge base (its active version, or `version`) in-process or over HTTP."""

    kb: str
    top_k: int = 5
    mode: SearchMode | None = None  # default: configured
    version: int | None = None
    lore: Any = None  # a lore.engine.Lore
    client: LoreClient | None = None

    @classmethod
    def of(
        cls,
        kb: str,
        *,
        lore: Any = None,
        client: LoreClient | None = None,
        server: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> PassageSource:
        """In-process with `lore`, else remote with `client` or `server` (+ `api_key`, or
        LORE_SERVER/LORE_API_KEY)."""
        if lore is not None and (client is not None or server is not None):
            raise LoreError("give either lore (in-process) or client/server (remote), not both")
        if lore is None and client is None:
            client = LoreClient(server, api_key)
        return cls(kb, lore=lore, client=client, **options)

    def search(self, query: str) -> tuple[list[Hit], int | None]:
        """Hits best first and the version they were read from (None: an unversioned KB)."""
        if self.client is not None:
            result = self.client.search(
                self.kb, query, top_k=self.top_k, mode=self.mode, version=self.version
            )
            return result.hits, result.version
        from lore.app import searching  # in-process: the same use case the API runs
        from lore.app.requests import SearchRequest

        request = SearchRequest(
            kb=self.kb, query=query, top_k=self.top_k, mode=self.mode, version=self.version
        )
        found = searching.search(self.lore, None, request)
        return [Hit.from_json(h.model_dump()) for h in found.hits], found.version


def citation_metadata(hit: Hit, kb: str, version: int | None) -> dict[str, Any]:
    """Lore's citation fields: file, page, slide, sheet/row, heading, version, ids and score (no Nones)."""
    meta = {
        "kb": kb,
        "file": hit.file,
        "page": hit.page,
        "slide": hit.slide,
        "sheet": hit.sheet,
        "row": hit.row,
        "heading": " > ".join(hit.heading_path) or None,
        "heading_path": hit.heading_path or None,
        "version": version,
        "chunk_id": hit.chunk_id,
        "document_id": hit.document_id,
        "score": hit.score,
        "source_type": hit.source_type,
        "where": hit.where(),
    }
    return {k: v for k, v in meta.items() if v is not None}
