"""What each integration adds to a search: in-process `Lore.search` (baseline) vs LoreClient over HTTP, the
LangChain retriever (in-process and remote) and the MCP `search` tool over streamable HTTP.

    python benchmarks/clients.py [--rounds 3]

Builds the sample handbook in a temporary home, serves it with uvicorn on free ports, and times the same
questions through every path (p50/p95 ms per query). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lore.api import create_app
from lore.client import LoreClient
from lore.config import load_settings
from lore.engine import Lore
from lore.integrations.langchain import LoreRetriever
from lore.integrations.mcp_server import http_app
from lore.retrieve.search import SearchOptions
from tests.api.conftest import LiveServer

QUESTIONS = [
    "What is the refund window?",
    "报销需要什么材料",
    "LF-200 的保修期多久",
    "一线城市住宿上限是多少",
    "How many days per week can I work remotely?",
    "年假有几天",
    "LF-500 price",
    "VPN password reset",
    "Who approves travel?",
    "What does the warranty cover?",
]


Path_ = Callable[[str], object]  # a search path: blocking, or async (awaited)


async def timed(paths: dict[str, Path_], rounds: int) -> dict[str, list[float]]:
    """Every path on every question, interleaved (the machine's noise falls on all of them alike)."""

    async def call(fn: Path_, q: str) -> None:
        result = fn(q)
        if asyncio.iscoroutine(result):
            await result

    out: dict[str, list[float]] = {name: [] for name in paths}
    for fn in paths.values():
        await call(fn, QUESTIONS[0])  # warm-up: connections, sessions
    for _ in range(rounds):
        for q in QUESTIONS:
            for name, fn in paths.items():
                t = time.perf_counter()
                await call(fn, q)
                out[name].append((time.perf_counter() - t) * 1000)
    return out


async def with_mcp(url: str, key: str, paths: dict[str, Path_], rounds: int) -> dict[str, list[float]]:
    """The paths plus the MCP `search` tool over one streamable-HTTP session."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with Client(streamable_http_client(url, http_client=http)) as mcp:

        async def search(query: str) -> None:
            result = await mcp.call_tool("search", {"kb": "hb", "query": query, "top_k": 5})
            assert not result.is_error

        return await timed({**paths, "MCP search tool (streamable HTTP)": search}, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lore-bench-clients-"))
    lore = Lore(load_settings(home=home, api={"rate_limit_per_minute": 0}))
    lore.create_kb("hb")
    lore.ingest("hb", [REPO / "examples" / "handbook"])
    key = lore.catalog.create_api_key("default", ["staff"])[1]
    options = SearchOptions.from_settings(lore.settings.retrieve, 5)
    for q in QUESTIONS:  # query embeddings cached for every path alike
        lore.search("hb", q, options)
    with LiveServer(create_app(lore)) as api, LiveServer(http_app(lore)) as mcp:  # type: ignore[arg-type]
        client = LoreClient(api.url, key)
        rows = asyncio.run(
            with_mcp(
                f"{mcp.url}/mcp",
                key,
                {
                    "baseline: Lore.search in-process": lambda q: lore.search("hb", q, options),
                    "LoreClient.search (HTTP)": lambda q: client.search("hb", q, top_k=5),
                    "LangChain LoreRetriever in-process": LoreRetriever(kb="hb", lore=lore, top_k=5).invoke,
                    "LangChain LoreRetriever remote": LoreRetriever(kb="hb", client=client, top_k=5).invoke,
                },
                args.rounds,
            )
        )
        client.close()
    lore.close()
    print(f"| path ({len(QUESTIONS)} questions x {args.rounds}, top 5) | p50 ms | p95 ms |\n|---|---|---|")
    for name, times in rows.items():
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
