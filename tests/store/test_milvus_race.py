"""Two processes (replicas) opening a new Milvus KB at the same moment: the one that loses the race to
create the collection uses the winner's instead of failing."""

from __future__ import annotations

from pathlib import Path

from lore.lexical.tokenize import tokenize
from lore.store import StoreQuery
from lore.store.milvus import MilvusStore
from tests.chunks import BASE
from tests.store.shared import DIM, unit_vectors


def test_creating_a_collection_another_store_created_is_success(tmp_path: Path) -> None:
    winner = MilvusStore("race_kb", tmp_path, DIM)
    loser = MilvusStore("race_kb", tmp_path, DIM)  # it opens what the winner made
    try:
        # The loser's step after it saw no collection: create collection, indexes and stamp again.
        loser._create()
        loser.upsert([BASE], unit_vectors(1), [tokenize(BASE.text)])
        hits = winner.search(StoreQuery("bm25", 3, tokens=tokenize(BASE.text)))
        assert [h.chunk.chunk_id for h in hits] == [BASE.chunk_id]
    finally:
        loser.close()
        winner.close()
