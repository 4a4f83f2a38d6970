"""Remote mode: `lore --server URL --key KEY …` (or LORE_SERVER / LORE_API_KEY) runs the commands in
`COMMANDS` against a `lore serve`; those that run both ways go through `lore.cli.backend`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lore.errors import LoreError

if TYPE_CHECKING:  # loaded by the functions that use them: `lore --help` imports none of this
    from lore.client import LoreClient


@dataclass
class Connection:
    """The server and key given to `lore` (None: run locally)."""

    server: str | None = None
    key: str | None = None


connection = Connection()
# What runs against a server; `serve`, `mcp` and `keys` run where the service's data is, the rest only
# locally.
COMMANDS = {
    "kb",
    "files",
    "ingest",
    "build",
    "search",
    "ask",
    "versions",
    "activate",
    "rollback",
    "serve",
    "mcp",
    "keys",
}


def client() -> LoreClient | None:
    """A client for the configured server, or None in local mode."""
    if not connection.server:
        return None
    from lore.client import LoreClient

    return LoreClient(connection.server, connection.key)


def local_only(option: str) -> LoreError:
    return LoreError(
        f"{option}: not available against a server (the API key sets tenant, roles and datasets)"
    )
