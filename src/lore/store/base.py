"""The `VectorStore` protocol and the backend registry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from lore.registry import Registry
from lore.schema import Chunk, Hit, SearchFilter, SearchMode
from lore.store.fusion import RRF_K


@dataclass
class StoreQuery:
    """A search request as a store sees it: the query already embedded and tokenised."""

    mode: SearchMode
    k: int
    vector: np.ndarray | None = None  # 1-d float32, L2-normalised (dense and hybrid)
    tokens: list[str] = field(default_factory=list)  # lexical tokens (bm25 and hybrid)
    filter: SearchFilter = field(default_factory=SearchFilter)
    rrf_k: int = RRF_K


class VectorStore(Protocol):
    """One collection per knowledge base: dense vectors, BM25 over tokens, scalar filters."""

    bm25_scores_are_scoped: bool
    """True when BM25 statistics count only the chunks the query's filter lets through (else the scores
    reveal other tenants' word counts and are not shown)."""

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[list[str]]) -> None:
        """Insert or replace chunks by `chunk_id` (idempotent, so a re-run after a crash is safe)."""

    def search(self, query: StoreQuery) -> list[Hit]:
        """Return at most `query.k` hits, best first, with the filter applied inside the query."""

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Fetch chunks by id (missing ids are skipped)."""

    def delete(self, chunk_ids: Sequence[str]) -> int:
        """Remove chunks by id; returns how many were removed."""

    def expire(self, chunk_ids: Sequence[str], seq: int) -> int:
        """Set `valid_to_seq = seq` on chunks so versions from `seq` on no longer see them."""

    def ids_valid_from(self, seq: int) -> list[str]:
        """Ids of every chunk whose `valid_from_seq` is `seq` (what one build wrote)."""

    def expired(self) -> list[tuple[str, int, int]]:
        """(chunk_id, valid_from_seq, valid_to_seq) of every chunk some version no longer sees."""

    def count(self, filter: SearchFilter | None = None) -> int:
        """Number of chunks matching the filter."""

    def drop(self) -> None:
        """Delete the whole collection."""

    def close(self) -> None:
        """Release files and connections."""


StoreFactory = Callable[..., VectorStore]
"""(collection name, LORE_HOME data dir, dimension, uri, connection=StoreSettings | None) -> store."""

STORES: Registry[StoreFactory] = Registry("store.backend", "lore.stores")


def register_store(name: str, factory: StoreFactory) -> None:
    """Register a backend the same way the built-in ones are."""
    STORES.register(name, factory)


def open_store(
    backend: str, collection: str, data_dir: Path, dim: int, uri: str = "", connection: object = None
) -> VectorStore:
    """Open (creating if needed) the collection `collection` on the named backend; `connection` (the
    `[store]` settings) carries a server's credentials, database and TLS."""
    factory = STORES.get(backend)
    return (
        factory(collection, data_dir, dim, uri, connection=connection)
        if connection is not None
        else factory(collection, data_dir, dim, uri)
    )
