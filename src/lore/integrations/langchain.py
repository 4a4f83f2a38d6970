"""LangChain: `LoreRetriever` returns `Document`s with Lore's citation metadata (`pip install
"lore-kb[langchain]"`).

from lore.integrations.langchain import LoreRetriever
docs = LoreRetriever(kb="handbook", lore=Lore(), k=3).invoke("What is the refund window?")  # in-process
docs = LoreRetriever(kb="handbook", server="http://127.0.0.1:8000", api_key=KEY).invoke("...", k=3)  # remote
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from lore.integrations.source import PassageSource, citation_metadata, require

require("langchain_core", "langchain")

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

Mode = Literal["dense", "bm25", "hybrid"]
# `k` is LangChain's usual name for the number of documents; `top_k` is Lore's (the HTTP API's and the CLI's).
K_NAMES = AliasChoices("k", "top_k")


def _one_count(data: Any) -> Any:
    if isinstance(data, dict) and "k" in data and "top_k" in data:
        raise ValueError("give k or top_k, not both")
    return data


class CallOptions(BaseModel):
    """What one `invoke(query, **options)` may override: `k` (or `top_k`), `mode`, `version`."""

    model_config = ConfigDict(extra="forbid")

    k: int | None = Field(default=None, ge=1, validation_alias=K_NAMES)
    mode: Mode | None = None
    version: int | None = Field(default=None, ge=1)

    _check_count = model_validator(mode="before")(_one_count)


class LoreRetriever(BaseRetriever):
    """Passages of one Lore knowledge base, best first, as LangChain documents; `k` (alias `top_k`), `mode`
    and `version` are set here and may be overridden per call: `invoke(query, k=1)`."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    kb: str
    k: int = Field(default=5, ge=1, validation_alias=K_NAMES)
    mode: Mode | None = None
    version: int | None = Field(default=None, ge=1)
    lore: Any = None  # a lore.engine.Lore: search in this process
    client: Any = None  # a lore.client.LoreClient: search a `lore serve`
    server: str | None = None  # or its URL (default: LORE_SERVER) ...
    api_key: str | None = None  # ... and key (default: LORE_API_KEY)
    _source: PassageSource = PrivateAttr()

    _check_count = model_validator(mode="before")(_one_count)

    @property
    def top_k(self) -> int:
        """The number of documents returned (Lore's name for `k`)."""
        return self.k

    def model_post_init(self, context: Any) -> None:
        options = ("lore", "client", "server", "api_key", "mode", "version")
        self._source = PassageSource.of(self.kb, top_k=self.k, **{n: getattr(self, n) for n in options})

    def _source_for(self, options: dict[str, Any]) -> PassageSource:
        """The source with this call's overrides (LangChain's own `verbose` is not one)."""
        options.pop("verbose", None)
        given = CallOptions.model_validate(options).model_dump(exclude_unset=True)
        if "k" in given:
            given["top_k"] = given.pop("k")
        return replace(self._source, **given) if given else self._source

    def _documents(self, source: PassageSource, query: str) -> list[Document]:
        hits, version = source.search(query)
        return [
            Document(page_content=h.text, metadata=citation_metadata(h, self.kb, version), id=h.chunk_id)
            for h in hits
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **options: Any
    ) -> list[Document]:
        return self._documents(self._source_for(options), query)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **options: Any
    ) -> list[Document]:
        source = self._source_for(options)
        return await run_in_executor(None, self._documents, source, query)
