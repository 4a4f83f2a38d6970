"""End to end on the pgvector store: a KB created with `store.backend = "pgvector"`, the sample handbook
ingested through the real pipeline and embedder, searched in every mode, next to the embedded store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.lexical import tokenize
from lore.retrieve.search import SearchOptions
from lore.schema import Hit, SearchFilter
from lore.store.base import StoreQuery
from tests.conftest import EXAMPLES
from tests.servers import PgVectorServer

QUERIES = [
    "报销需要什么材料",
    "What is the refund window?",
    "LF-200 的保修期多久",
    "一线城市住宿上限是多少",
    "How many days per week can I work remotely?",
    "VPN",
]


@pytest.fixture(scope="module")
def pair(
    pgvector_server: PgVectorServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Lore]]:
    """The handbook in a pgvector KB and in an embedded KB (separate homes, the same files)."""
    home = tmp_path_factory.mktemp("pgvector_e2e")
    url = pgvector_server.database(str(home))
    lores = {
        "pgvector": Lore(load_settings(home=home / "pg", store={"backend": "pgvector", "pg_url": url})),
        "embedded": Lore(load_settings(home=home / "emb")),
    }
    for lore in lores.values():
        lore.create_kb("handbook")
        report = lore.ingest("handbook", [EXAMPLES])
        assert report.count("ingested") == 5, [(f.name, f.status, f.error) for f in report.files]
    yield lores
    for lore in lores.values():
        lore.close()


def _key(hit: Hit) -> tuple:
    return hit.chunk.file_path, hit.chunk.chunk_index, hit.chunk.text


def test_the_kb_lives_in_pgvector(pair: dict[str, Lore]) -> None:
    kb = pair["pgvector"].catalog.get_kb("handbook")
    assert kb.store_backend == "pgvector"
    assert (
        pair["pgvector"].store(kb).count()
        == pair["embedded"].store(pair["embedded"].catalog.get_kb("handbook")).count()
    )


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_top_hit_is_the_embedded_stores(pair: dict[str, Lore], mode: str) -> None:
    for query in QUERIES:
        tops = {
            name: lore.search("handbook", query, SearchOptions(mode=mode, top_k=3, filter=SearchFilter()))
            for name, lore in pair.items()
        }
        assert tops["embedded"], query
        assert _key(tops["pgvector"][0]) == _key(tops["embedded"][0]), (mode, query)


def test_bm25_scores_equal_the_embedded_stores(pair: dict[str, Lore]) -> None:
    stores = {name: lore.store(lore.catalog.get_kb("handbook")) for name, lore in pair.items()}
    for query in QUERIES:
        q = StoreQuery("bm25", k=10, tokens=tokenize(query))
        got, want = stores["pgvector"].search(q), stores["embedded"].search(q)
        assert want, query
        assert [_key(h) for h in got] == [_key(h) for h in want], query
        assert [h.bm25_score for h in got] == pytest.approx([h.bm25_score for h in want], rel=1e-6, abs=1e-6)
