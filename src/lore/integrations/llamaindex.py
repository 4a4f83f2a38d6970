"""LlamaIndex: `LoreRetriever` returns `NodeWithScore`s with Lore's citation metadata
(`pip install "lore-kb[llamaindex]"`).

    from lore.integrations.llamaindex import LoreRetriever
    nodes = LoreRetriever("handbook", lore=Lore()).retrieve("What is the refund window?")  # in-process
    remote = LoreRetriever("handbook", server="http://127.0.0.1:8000", api_key=KEY)  # lore serve
    nodes = remote.retrieve("...")
"""

from __future__ import annotations

from typing import Any

from lore.client import LoreClient
from lore.integrations.source import PassageSource, citation_metadata, require

require("llama_index.core", "llamaindex")

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode


class LoreRetriever(BaseRetriever):
    """Passages of one Lore knowledge base, best first, as LlamaIndex nodes with scores."""

    def __init__(
        self,
        kb: str,
        *,
        top_k: int = 5,
        mode: str | None = None,
        version: int | None = None,
        lore: Any = None,
        client: LoreClient | None = None,
        server: str | None = None,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.kb = kb
        self._source = PassageSource.of(
            kb,
            lore=lore,
            client=client,
            server=server,
            api_key=api_key,
            top_k=top_k,
            mode=mode,
            version=version,
        )
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits, version = self._source.search(query_bundle.query_str)
        return [
            NodeWithScore(
                node=TextNode(id_=h.chunk_id, text=h.text, metadata=citation_metadata(h, self.kb, version)),
                score=h.score,
            )
            for h in hits
        ]
