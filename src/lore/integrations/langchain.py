"""LangChain: `LoreRetriever` returns `Document`s with Lore's citation metadata (`pip install
"lore-kb[langchain]"`).

from lore.integrations.langchain import LoreRetriever
docs = LoreRetriever(kb="handbook", lore=Lore()).invoke("What is the refund window?")          # in-process
docs = LoreRetriever(kb="handbook", server="http://127.0.0.1:8000", api_key=KEY).invoke("...")  # lore serve
"""

from __future__ import annotations

from typing import Any

from lore.integrations.source import PassageSource, citation_metadata, require

require("langchain_core", "langchain")

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr


class LoreRetriever(BaseRetriever):
    """Passages of one Lore knowledge base, best first, as LangChain documents."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kb: str
    top_k: int = 5
    mode: str | None = None
    version: int | None = None
    lore: Any = None  # a lore.engine.Lore: search in this process
    client: Any = None  # a lore.client.LoreClient: search a `lore serve`
    server: str | None = None  # or its URL (default: LORE_SERVER) ...
    api_key: str | None = None  # ... and key (default: LORE_API_KEY)
    _source: PassageSource = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        options = ("lore", "client", "server", "api_key", "top_k", "mode", "version")
        self._source = PassageSource.of(self.kb, **{name: getattr(self, name) for name in options})

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits, version = self._source.search(query)
        return [
            Document(page_content=h.text, metadata=citation_metadata(h, self.kb, version), id=h.chunk_id)
            for h in hits
        ]
