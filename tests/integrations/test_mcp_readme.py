"""README's MCP tool table, called as written through the MCP SDK's client on the `make demo` handbook KB:
every tool the server has, with exactly the arguments README gives (its `<...>` values taken from a hit)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from lore.config import load_settings
from lore.engine import Lore
from lore.integrations.mcp_server import build_server, service_state
from tests.conftest import EXAMPLES, REPO
from tests.integrations.test_mcp import error, result


def readme_calls() -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) from the code block after README's **MCP** paragraph."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^\*\*MCP\*\*.*?^```\n(.*?)^```", text, re.S | re.M)
    assert block, "README has no MCP tool block"
    calls = []
    for line in block.group(1).splitlines():
        name, args = line.split(None, 1)
        calls.append((name, json.loads(args)))
    return calls


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lore, str]]:
    """What `make demo` builds: the sample handbook as KB `handbook`; and a staff key of its tenant."""
    lore = Lore(load_settings(home=tmp_path_factory.mktemp("demo_home")))
    lore.create_kb("handbook", "sample handbook")
    assert lore.ingest("handbook", [EXAMPLES]).count("ingested") == 5
    _, secret = lore.catalog.create_api_key("default", ["staff"])
    yield lore, secret
    lore.close()


def test_every_tool_takes_readme_arguments(handbook: tuple[Lore, str]) -> None:
    lore, secret = handbook
    calls = readme_calls()

    async def run() -> None:
        async with Client(build_server(service_state(lore), secret)) as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert sorted(tools) == sorted(name for name, _ in calls)
            hit: dict[str, Any] = {}
            for name, args in calls:
                schema = tools[name]
                assert set(schema.get("required", [])) <= set(args) <= set(schema["properties"]), name
                filled = {
                    k: hit[re.sub(r".*'s ", "", v[1:-1])] if str(v).startswith("<") else v
                    for k, v in args.items()
                }
                out = result(await client.call_tool(name, filled))
                if name == "list_knowledge_bases":
                    assert [kb["name"] for kb in out] == ["handbook"]
                elif name == "search":
                    assert len(out["hits"]) == args["top_k"]
                    hit = out["hits"][0]
                elif name == "ask":
                    assert not out["refused"] and "30" in out["answer"] and out["citations"]
                elif name == "get_passage":
                    assert out["chunk_id"] == hit["chunk_id"] and out["text"] == hit["text"]
                    assert out["kb"] == "handbook"
                elif name == "get_document":
                    assert out["file"] == args["file"] and "refund" in out["text"].lower()

    asyncio.run(run())


def test_get_passage_without_kb_stays_in_the_keys_knowledge_bases(
    handbook: tuple[Lore, str], tmp_path: Path
) -> None:
    lore, secret = handbook
    lore.create_kb("private", "another tenant's", owner_tenant="tenant-x")
    note = tmp_path / "note.md"
    note.write_text("# Vault\n\nThe vault combination is 4-8-15-16.\n", encoding="utf-8")
    stamped = lore.ingest("private", [note], chunk_metadata=lambda _src: {"tenant_id": "tenant-x"})
    assert stamped.count("ingested") == 1
    foreign = lore.search("private", "vault combination")[0].chunk.chunk_id
    _, other = lore.catalog.create_api_key("tenant-x", ["staff"])

    async def run() -> None:
        async with Client(build_server(service_state(lore), secret)) as client:
            hit = result(await client.call_tool("search", {"kb": "handbook", "query": "refund", "top_k": 1}))
            mine = result(await client.call_tool("get_passage", {"chunk_id": hit["hits"][0]["chunk_id"]}))
            assert mine["kb"] == "handbook" and mine["text"] == hit["hits"][0]["text"]
            assert error(await client.call_tool("get_passage", {"chunk_id": foreign})).startswith("404:")
            versioned = {"chunk_id": hit["hits"][0]["chunk_id"], "version": 1}
            assert error(await client.call_tool("get_passage", versioned)).startswith("400: version needs kb")
        async with Client(build_server(service_state(lore), other)) as client:
            theirs = result(await client.call_tool("get_passage", {"chunk_id": foreign}))
            assert theirs["kb"] == "private" and "4-8-15-16" in theirs["text"]

    asyncio.run(run())
