"""`lore mcp`: serve the knowledge bases as MCP tools over stdio (for desktop agents) or streamable HTTP."""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer
from rich.console import Console

from lore.cli.common import new_lore
from lore.cli.render import fail
from lore.errors import LoreError

err = Console(stderr=True)  # stdout belongs to the protocol on stdio


def mcp(
    transport: Annotated[str, typer.Option(help="stdio | http (streamable HTTP at /mcp).")] = "stdio",
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="LORE_API_KEY",
            show_envvar=True,
            help="stdio: the API key whose grant bounds every call.",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="http: bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: port.")] = 8001,
) -> None:
    """Serve search, ask, list_knowledge_bases, get_passage and get_document as MCP tools.

    Every call is bounded by an API key's grant exactly as the HTTP API is: on stdio the key from --key or
    LORE_API_KEY; on HTTP each request's `Authorization: Bearer <key>` header.
    """
    from lore.cli import remote
    from lore.integrations.mcp_server import build_server, http_app, service_state

    key = key or remote.connection.key  # `lore --key KEY mcp` too

    if transport not in ("stdio", "http"):
        fail(LoreError(f"--transport: stdio or http, not {transport!r}"))
    lore = new_lore()
    try:
        if transport == "stdio":
            if not key:
                fail(
                    LoreError(
                        "lore mcp (stdio) needs an API key: --key KEY or LORE_API_KEY (lore keys create)"
                    )
                )
            if lore.catalog.authenticate(key) is None:
                fail(LoreError("lore mcp: invalid or revoked API key"))
            logging.basicConfig(level=os.environ.get("LORE_MCP_LOG", "WARNING"), force=True)  # to stderr
            build_server(service_state(lore), key).run("stdio")
            return
        import uvicorn

        err.print(f"MCP (streamable HTTP) on http://{host}:{port}/mcp; send 'Authorization: Bearer <key>'")
        uvicorn.run(http_app(lore, host), host=host, port=port, log_level="warning")
    finally:
        lore.close()
