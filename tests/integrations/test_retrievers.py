"""LangChain and LlamaIndex `LoreRetriever`s with the real libraries: in-process and against `lore serve`."""

from __future__ import annotations

import importlib
import sys

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from lore.client import LoreClient
from lore.engine import Lore
from lore.errors import MissingDependencyError
from lore.integrations import langchain as lc
from lore.integrations import llamaindex as li
from tests.api.conftest import Keys, LiveServer

QUESTION = "一线城市住宿上限是多少"


def test_langchain_in_process_and_remote_give_the_same_documents(
    lore: Lore, live: LiveServer, keys: Keys
) -> None:
    local = lc.LoreRetriever(kb="hb", lore=lore, top_k=4).invoke(QUESTION)
    remote = lc.LoreRetriever(kb="hb", server=live.url, api_key=keys.staff, top_k=4).invoke(QUESTION)
    assert all(isinstance(d, Document) for d in local + remote) and len(local) == 4
    assert [d.id for d in local] == [d.id for d in remote]
    top = local[0]
    assert top.metadata["file"].endswith("travel_policy.docx") and top.metadata["kb"] == "hb"
    assert top.metadata["chunk_id"] == top.id and top.metadata["score"] > 0 and "heading" in top.metadata
    assert "住宿" in top.page_content
    sheet = lc.LoreRetriever(kb="hb", lore=lore, top_k=10).invoke("LF-200 price")
    row = next(d for d in sheet if d.metadata["file"].endswith("price_list.xlsx"))
    assert row.metadata["sheet"] and row.metadata["row"] >= 1
    pdf = lc.LoreRetriever(kb="hb", lore=lore, top_k=10).invoke("LF-200 warranty")
    assert any(d.metadata.get("page") for d in pdf if d.metadata["file"].endswith("product_sheet.pdf"))


def test_langchain_remote_is_bounded_by_the_key(live: LiveServer, keys: Keys) -> None:
    query = "launch code NG-7731"
    staff = lc.LoreRetriever(kb="hb", client=LoreClient(live.url, keys.staff)).invoke(query)
    other = lc.LoreRetriever(kb="hb", client=LoreClient(live.url, keys.tenant_b)).invoke(query)
    assert not any("NG-7731" in d.page_content for d in staff)
    assert "NG-7731" in other[0].page_content


def test_langchain_retriever_in_a_chain(lore: Lore) -> None:
    from langchain_core.runnables import RunnableLambda

    retriever = lc.LoreRetriever(kb="hb", lore=lore, top_k=2)
    chain = retriever | RunnableLambda(lambda docs: [d.metadata["where"] for d in docs])
    assert len(chain.invoke("What is the refund window?")) == 2


def test_llamaindex_in_process_and_remote(lore: Lore, live: LiveServer, keys: Keys) -> None:
    local = li.LoreRetriever("hb", lore=lore, top_k=3).retrieve(QUESTION)
    remote = li.LoreRetriever("hb", server=live.url, api_key=keys.staff, top_k=3).retrieve(QUESTION)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in local + remote)
    assert [n.node.node_id for n in local] == [n.node.node_id for n in remote]
    assert local[0].score == pytest.approx(remote[0].score) and local[0].score > 0
    assert (
        local[0].node.metadata["file"].endswith("travel_policy.docx")
        and "住宿" in local[0].node.get_content()
    )


def test_missing_framework_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, hint, name in (
        ("langchain_core", "lore-kb[langchain]", "lore.integrations.langchain"),
        ("llama_index.core", "lore-kb[llamaindex]", "lore.integrations.llamaindex"),
    ):
        monkeypatch.setitem(sys.modules, module, None)
        monkeypatch.delitem(sys.modules, name)
        with pytest.raises(MissingDependencyError, match=hint.replace("[", r"\[").replace("]", r"\]")):
            importlib.import_module(name)


def test_both_lore_and_server_is_an_error(lore: Lore) -> None:
    with pytest.raises(Exception, match="either lore"):
        lc.LoreRetriever(kb="hb", lore=lore, server="http://x")
