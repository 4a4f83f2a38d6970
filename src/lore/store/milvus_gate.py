"""The Milvus version gate: a server (or Milvus Lite) older than 2.5 is refused before anything is written,
since the schema needs sparse vectors filled by the BM25 function, both new in Milvus 2.5."""

from __future__ import annotations

import contextlib
import logging
import re
from importlib import metadata
from typing import Any

from lore.errors import ConfigError, UnavailableError
from lore.store.milvus_conn import UNAVAILABLE, connection_kwargs, import_pymilvus

log = logging.getLogger("lore.store.milvus")

MINIMUM = (2, 5)
# Milvus Lite reports its own package version ("milvus_lite-3.2.2"); its BM25 function arrived in 2.5 too.
_NUMBERS = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class UnsupportedMilvusError(ConfigError):
    """The Milvus server (or Milvus Lite) is too old for Lore's collection schema."""


def parse_version(reported: str) -> tuple[int, ...] | None:
    """(major, minor[, patch]) from what a server reports ("v2.3.5", "milvus_lite-3.2.2",
    "... Compatible with Milvus 2.5"); None when it holds no version number."""
    found = _NUMBERS.search(reported)
    return tuple(int(n) for n in found.groups() if n is not None) if found else None


def check_version(reported: str) -> tuple[int, ...] | None:
    """Refuse a version below `MINIMUM`; an unreadable one (a development build) passes with a warning."""
    version = parse_version(reported)
    if version is None:
        log.warning(
            "milvus: cannot read a version from %r; assuming it is %d.%d or newer", reported, *MINIMUM
        )
        return None
    if version[:2] >= MINIMUM:
        return version
    # Not just "lite": the `milvus` package's embedded Milvus 2.3.5 server reports "v2.3.5-lite".
    lite = reported.lower().startswith("milvus_lite")
    what, shown = ("Milvus Lite" if lite else "the Milvus server"), ".".join(map(str, version))
    upgrade = "pip install -U milvus-lite" if lite else "upgrade the server"
    raise UnsupportedMilvusError(
        f"{what} runs version {shown}, but Lore needs Milvus {MINIMUM[0]}.{MINIMUM[1]} or newer: its "
        f"keyword search keeps BM25 sparse vectors computed by Milvus's BM25 function, which arrived in "
        f"{MINIMUM[0]}.{MINIMUM[1]}; {upgrade} (nothing was created)"
    )


def require_supported(client: Any) -> tuple[int, ...] | None:
    """Ask a connected client's server its version and refuse one older than `MINIMUM`."""
    return check_version(str(client.get_server_version()))


def check_store(uri: str, settings: Any = None) -> None:
    """Check the Milvus a new knowledge base will use, before it is created: a server is asked over a
    short-lived connection; for a Milvus Lite file the installed milvus-lite is checked (the file may be
    open in another process)."""
    if not uri or uri.endswith(".db"):
        with contextlib.suppress(metadata.PackageNotFoundError):  # opening the store says how to install it
            check_version(f"milvus_lite-{metadata.version('milvus-lite')}")
        return
    pm = import_pymilvus()
    try:
        client = pm.MilvusClient(uri, dedicated=True, **connection_kwargs(settings))
    except pm.MilvusException as exc:
        log.error("cannot open Milvus at %s: %s", uri, exc)
        raise UnavailableError(UNAVAILABLE) from exc
    try:
        require_supported(client)
    except pm.MilvusException as exc:
        log.error("milvus at %s: cannot read its version: %s", uri, exc)
        raise UnavailableError(UNAVAILABLE) from exc
    finally:
        client.close()
