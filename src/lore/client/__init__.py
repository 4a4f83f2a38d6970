"""Python client for a `lore serve` service: `LoreClient` (blocking) and `AsyncLoreClient` (asyncio)."""

from lore.client.aio import AsyncLoreClient
from lore.client.models import (
    Answer,
    AskEvent,
    Citation,
    Document,
    FileResult,
    Hit,
    IngestResult,
    KnowledgeBase,
    LoreAPIError,
    Passage,
    SearchResult,
    Session,
    Upload,
    Version,
)
from lore.client.sync import LoreClient

__all__ = [
    "Answer",
    "AskEvent",
    "AsyncLoreClient",
    "Citation",
    "Document",
    "FileResult",
    "Hit",
    "IngestResult",
    "KnowledgeBase",
    "LoreAPIError",
    "LoreClient",
    "Passage",
    "SearchResult",
    "Session",
    "Upload",
    "Version",
]
