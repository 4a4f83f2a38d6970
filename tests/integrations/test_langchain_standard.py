"""LangChain's own standard retriever tests (`langchain-tests`), sync and async, against `LoreRetriever`
in-process and against a live service; then the per-call options those tests do not cover."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from lore.engine import Lore
from lore.integrations.langchain import LoreRetriever
from tests.api.conftest import Keys, LiveServer

QUERY = "What is the refund window?"


class TestInProcess(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _engine(self, lore: Lore) -> None:
        self.engine = lore

    @property
    def retriever_constructor(self) -> type[LoreRetriever]:
        return LoreRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"kb": "hb", "lore": self.engine}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestRemote(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _service(self, live: LiveServer, keys: Keys) -> None:
        self.url, self.key = live.url, keys.staff

    @property
    def retriever_constructor(self) -> type[LoreRetriever]:
        return LoreRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"kb": "hb", "server": self.url, "api_key": self.key}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_top_k_is_k_and_per_call_options_override(lore: Lore, live: LiveServer, keys: Keys) -> None:
    for retriever in (
        LoreRetriever(kb="hb", lore=lore, top_k=4),
        LoreRetriever(kb="hb", server=live.url, api_key=keys.staff, top_k=4),
    ):
        assert retriever.k == retriever.top_k == 4
        four = retriever.invoke(QUERY)
        assert len(four) == 4
        assert [d.id for d in retriever.invoke(QUERY, top_k=2)] == [d.id for d in four[:2]]
        assert [d.id for d in asyncio.run(retriever.ainvoke(QUERY, k=1))] == [four[0].id]
        assert len(retriever.invoke(QUERY)) == 4  # an override lasts one call
        bm25 = retriever.invoke("LF-200 warranty", mode="bm25", k=10)
        dense = retriever.invoke("LF-200 warranty", mode="dense", k=10)
        assert [d.metadata["score"] for d in bm25] != [d.metadata["score"] for d in dense]


@pytest.mark.parametrize(
    "options", [{"k": 0}, {"top_k": -1}, {"k": 1, "top_k": 2}, {"kk": 3}, {"mode": "fuzzy"}, {"version": 0}]
)
def test_bad_options_are_refused_not_ignored(lore: Lore, options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LoreRetriever(kb="hb", lore=lore, **options)
    with pytest.raises(ValidationError):
        LoreRetriever(kb="hb", lore=lore).invoke(QUERY, **options)
