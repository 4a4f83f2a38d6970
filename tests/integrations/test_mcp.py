"""`lore mcp` with the MCP SDK's own client: stdio (a `lore mcp` subprocess) and streamable HTTP (a free
port)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from lore.engine import Lore
from lore.integrations.mcp_server import http_app
from tests.api.conftest import Keys, LiveServer

TOOLS = {"search", "ask", "list_knowledge_bases", "get_passage", "get_document"}
LORE = str(Path(sys.executable).with_name("lore"))


def result(r: Any) -> Any:
    """A tool's result: its structured content (a list comes wrapped in {"result": ...}), else None."""
    assert not r.is_error, r.content
    data = r.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


def error(r: Any) -> str:
    """A tool error's message without the SDK's "Error executing tool X: " prefix: "<status>: <reason>"."""
    assert r.is_error
    return " ".join(c.text for c in r.content).split(": ", 1)[1]


async def exercise(
    client: Client, other_tenant: Callable[[], Awaitable[Client]] | None = None
) -> dict[str, Any]:
    """The checks both transports share, run as the `staff` key of tenant `default`."""
    assert {t.name for t in (await client.list_tools()).tools} >= TOOLS
    kbs = result(await client.call_tool("list_knowledge_bases", {}))
    assert "hb" in [k["name"] for k in kbs]
    hits = result(
        await client.call_tool("search", {"kb": "hb", "query": "What is the refund window?", "top_k": 3})
    )
    top = hits["hits"][0]
    assert len(hits["hits"]) == 3 and top["file"] and top["chunk_id"]
    passage = result(await client.call_tool("get_passage", {"kb": "hb", "chunk_id": top["chunk_id"]}))
    assert passage["text"] == top["text"] and passage["file"] == top["file"]
    document = result(await client.call_tool("get_document", {"kb": "hb", "file": top["file"]}))
    assert top["text"][:20] in document["text"]
    answer = result(await client.call_tool("ask", {"kb": "hb", "question": "What is the refund window?"}))
    assert not answer["refused"] and answer["citations"] and "[1]" in answer["answer"]
    assert answer["citations"][0]["file"] and answer["citations"][0]["chunk_id"]
    refusal = await client.call_tool("ask", {"kb": "hb", "question": "Who won the 1998 World Cup?"})
    assert not refusal.is_error and result(refusal)["refused"] and not result(refusal)["citations"]
    # bounded by the key's grant: another tenant's passage is not there, a named version needs admin
    secret = result(await client.call_tool("search", {"kb": "hb", "query": "launch code NG-7731"}))["hits"]
    assert not any("NG-7731" in h["text"] for h in secret)
    assert error(await client.call_tool("search", {"kb": "hb", "query": "x", "version": 1})).startswith(
        "403:"
    )
    assert error(await client.call_tool("search", {"kb": "nope", "query": "x"})).startswith("404:")
    return answer


def test_mcp_stdio_subprocess(api_home: Path, keys: Keys, lore: Lore) -> None:
    tenant_b_chunk = lore.search("hb", "launch code NG-7731")[0].chunk.chunk_id

    def params(key: str) -> StdioServerParameters:
        env = {
            **os.environ,
            "LORE_HOME": str(api_home),
            "LORE_API_KEY": key,
            "LORE_CONFIG": str(api_home / "x.toml"),
        }
        return StdioServerParameters(command=LORE, args=["mcp"], env=env)

    async def run() -> None:
        async with Client(params(keys.staff)) as client:
            await exercise(client)
            denied = await client.call_tool("get_passage", {"kb": "hb", "chunk_id": tenant_b_chunk})
            assert error(denied).startswith("404:")
        async with Client(params(keys.tenant_b)) as client:
            mine = result(await client.call_tool("get_passage", {"kb": "hb", "chunk_id": tenant_b_chunk}))
            assert "NG-7731" in mine["text"]

    asyncio.run(run())


def test_mcp_stdio_refuses_to_start_without_a_live_key(api_home: Path, keys: Keys) -> None:
    import subprocess

    env = {**os.environ, "LORE_HOME": str(api_home), "LORE_CONFIG": str(api_home / "x.toml")}
    env.pop("LORE_API_KEY", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [LORE, "mcp", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    out = run()
    assert out.returncode == 2 and "needs an API key" in out.stderr
    out = run("--key", keys.revoked)
    assert out.returncode == 2 and "invalid or revoked" in out.stderr


@pytest.fixture(scope="module")
def mcp_http(lore: Lore) -> Iterator[LiveServer]:
    with LiveServer(http_app(lore)) as server:  # type: ignore[arg-type]
        yield server


def test_mcp_streamable_http(mcp_http: LiveServer, keys: Keys) -> None:
    url = f"{mcp_http.url}/mcp"

    def client(key: str) -> Client:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        return Client(streamable_http_client(url, http_client=http))

    async def run() -> None:
        async with client(keys.staff) as c:
            answer = await exercise(c)
            assert answer["kb_version"] is None
        async with client(keys.tenant_b) as c:
            hits = result(
                await c.call_tool("search", {"kb": "hb", "query": "launch code NG-7731", "top_k": 1})
            )
            assert "NG-7731" in hits["hits"][0]["text"]

    asyncio.run(run())
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    for headers in ({}, {"Authorization": f"Bearer {keys.revoked}"}, {"Authorization": "Bearer nope"}):
        r = httpx.post(url, json=init, headers={**headers, "Accept": "application/json, text/event-stream"})
        assert r.status_code == 401 and json.loads(r.text)["detail"]


def test_mcp_calls_count_against_the_rate_limit_and_see_revocation(api_home: Path, keys: Keys) -> None:
    from lore.config import load_settings
    from lore.integrations.mcp_server import build_server, service_state

    limited = Lore(load_settings(home=api_home, api={"rate_limit_per_minute": 3}))
    _, secret = limited.catalog.create_api_key("default", ["staff"])
    server = build_server(service_state(limited), secret)

    async def run() -> None:
        async with Client(server) as c:  # the SDK's in-process transport: the stdio key path
            for _ in range(3):
                result(await c.call_tool("list_knowledge_bases", {}))
            assert error(await c.call_tool("list_knowledge_bases", {})).startswith("429: rate limit of 3")
        other = build_server(service_state(limited), keys.revoked)
        async with Client(other) as c:
            assert (
                error(await c.call_tool("search", {"kb": "hb", "query": "x"}))
                == "401: invalid or revoked API key"
            )

    try:
        asyncio.run(run())
    finally:
        limited.close()
