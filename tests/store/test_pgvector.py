"""The pgvector store beyond the shared contract: BM25 scores equal to the embedded store's (same formula,
same per-caller statistics), the HNSW path past `pg_exact_rows`, bound filter values, settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest

from lore.config import StoreSettings
from lore.errors import ConfigError, UnavailableError
from lore.schema import Chunk, SearchFilter
from lore.store.base import StoreQuery, VectorStore, open_store
from lore.store.pgvector import resolve_url
from tests.chunks import make_chunk
from tests.servers import PgVectorServer, free_port
from tests.store.test_contract import CHUNKS, DIM, FILTERS, TOKENS, VECTORS


def _pg(server: PgVectorServer, path: Path, **settings: object) -> StoreSettings:
    return StoreSettings(backend="pgvector", pg_url=server.database(str(path)), **settings)


def _pair(server: PgVectorServer, tmp_path: Path) -> tuple[VectorStore, VectorStore]:
    pg = open_store("pgvector", "kb_bm25", tmp_path, DIM, connection=_pg(server, tmp_path))
    embedded = open_store("embedded", "kb_bm25", tmp_path, DIM)
    for store in (pg, embedded):
        store.upsert(CHUNKS, VECTORS, TOKENS)
    return pg, embedded


@pytest.mark.parametrize("name", ["none", "tenant", "roles", "version_3", "documents", "source", "combined"])
def test_bm25_scores_equal_the_embedded_store(
    pgvector_server: PgVectorServer, tmp_path: Path, name: str
) -> None:
    pg, embedded = _pair(pgvector_server, tmp_path)
    try:
        for tokens in (["公司", "员工", "travel"], ["发票", "报销", "报销", "polici"], ["系统"]):
            query = StoreQuery("bm25", k=30, tokens=tokens, filter=FILTERS[name])
            want, got = embedded.search(query), pg.search(query)
            assert want, "the corpus must hold these tokens"
            assert [h.chunk.chunk_id for h in got] == [h.chunk.chunk_id for h in want]
            assert [h.bm25_score for h in got] == pytest.approx([h.bm25_score for h in want], rel=1e-6)
    finally:
        pg.close()
        embedded.close()


def test_statistics_are_the_callers_not_a_requests_narrowing(
    pgvector_server: PgVectorServer, tmp_path: Path
) -> None:
    pg, embedded = _pair(pgvector_server, tmp_path)
    try:
        tokens = ["公司", "employe"]
        scores = {}
        for name, flt in {
            "all": SearchFilter(),
            "tenant": SearchFilter(tenant_ids=["acme"]),
            "narrowed": SearchFilter(document_ids=["doc2"]),
        }.items():
            scores[name] = {
                h.chunk.chunk_id: h.bm25_score
                for h in pg.search(StoreQuery("bm25", 30, tokens=tokens, filter=flt))
            }
        shared = set(scores["all"]) & set(scores["tenant"])
        assert shared and any(scores["all"][c] != pytest.approx(scores["tenant"][c]) for c in shared)
        assert scores["narrowed"] and all(
            scores["narrowed"][c] == pytest.approx(scores["all"][c]) for c in scores["narrowed"]
        )
    finally:
        pg.close()
        embedded.close()


def _many(n: int) -> tuple[list[Chunk], np.ndarray, list[list[str]]]:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [
        make_chunk(chunk_id=f"m{i:04d}", document_id=f"doc{i // 10}", chunk_index=i % 10) for i in range(n)
    ]
    return chunks, vectors, [[f"w{i % 7}", f"v{i % 13}"] for i in range(n)]


def _index_exists(url: str) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT to_regclass('kb_many_hnsw')").fetchone()[0] is not None


def test_hnsw_index_is_built_by_the_first_search_past_exact_rows(
    pgvector_server: PgVectorServer, tmp_path: Path
) -> None:
    settings = _pg(pgvector_server, tmp_path, pg_exact_rows=100, pg_ef_search=40)
    store = open_store("pgvector", "kb_many", tmp_path, DIM, connection=settings)
    chunks, vectors, tokens = _many(1500)
    store.upsert(chunks, vectors, tokens)
    assert not _index_exists(settings.pg_url)  # a bulk load does not maintain the graph row by row
    found = []
    for qi in range(20):
        hits = store.search(StoreQuery("dense", k=10, vector=vectors[qi]))
        exact = np.argsort(-(vectors @ vectors[qi]), kind="stable")[:10]
        assert len(hits) == 10 and hits[0].chunk.chunk_id == chunks[qi].chunk_id
        found.append(len({h.chunk.chunk_id for h in hits} & {chunks[i].chunk_id for i in exact}) / 10)
    assert _index_exists(settings.pg_url)
    assert np.mean(found) >= 0.9
    # A filter keeping 10 of 1500 rows: every one of them comes back, in exact order.
    flt = SearchFilter(document_ids=["doc7"])
    hits = store.search(StoreQuery("dense", k=20, vector=vectors[0], filter=flt))
    keep = [i for i, c in enumerate(chunks) if c.document_id == "doc7"]
    want = [chunks[i].chunk_id for i in sorted(keep, key=lambda i: -float(vectors[i] @ vectors[0]))]
    assert [h.chunk.chunk_id for h in hits] == want
    more, more_vectors, more_tokens = _many(1510)
    store.upsert(more[1500:], more_vectors[1500:], more_tokens[1500:])  # added to the built index
    assert store.search(StoreQuery("dense", k=1, vector=more_vectors[1505]))[0].chunk.chunk_id == "m1505"
    store.close()


def test_filter_values_are_bound_not_spliced(pgvector_server: PgVectorServer, tmp_path: Path) -> None:
    store = open_store("pgvector", "kb_bound", tmp_path, DIM, connection=_pg(pgvector_server, tmp_path))
    store.upsert(CHUNKS, VECTORS, TOKENS)
    open_to_all = sum(not c.allowed_roles for c in CHUNKS)
    try:
        for value in ["acme' OR '1'='1", "x'); DROP TABLE kb_bound_chunks; --", "%", "\\", "{a,b}"]:
            for flt in (SearchFilter(tenant_ids=[value]), SearchFilter(sources=["wiki", value])):
                assert store.count(flt) == sum(flt.matches(c) for c in CHUNKS)
                hits = store.search(StoreQuery("bm25", k=50, tokens=["公司", "员工"], filter=flt))
                assert all(flt.matches(h.chunk) for h in hits)
            assert store.count(SearchFilter(roles=[value])) == open_to_all
        assert store.count() == len(CHUNKS)
    finally:
        store.close()


def test_a_collection_in_the_older_layout_is_named_not_misread(
    pgvector_server: PgVectorServer, tmp_path: Path
) -> None:
    settings = _pg(pgvector_server, tmp_path)
    with psycopg.connect(settings.pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kb_old_chunks (chunk_id text PRIMARY KEY, text text NOT NULL)")
    store = open_store("pgvector", "kb_old", tmp_path, DIM, connection=settings)
    with pytest.raises(ConfigError, match="kb_old.*older layout"):
        store.count()
    store.close()


def test_the_url_comes_from_pg_url_else_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = StoreSettings(pg_url="postgresql+psycopg://lore@db.internal:5433/kb")
    assert resolve_url(settings) == "postgresql://lore@db.internal:5433/kb"
    monkeypatch.setenv("LORE_CATALOG_URL", "postgresql+psycopg://cat@pg/catalog")
    assert resolve_url(StoreSettings()) == "postgresql://cat@pg/catalog"
    monkeypatch.setenv("LORE_CATALOG_URL", "sqlite:////srv/secret/catalog.db")
    with pytest.raises(ConfigError, match="PostgreSQL") as err:
        resolve_url(StoreSettings())
    assert "secret" not in str(err.value)


def test_a_database_that_is_down_is_unavailable(tmp_path: Path) -> None:
    settings = StoreSettings(pg_url=f"postgresql://postgres@127.0.0.1:{free_port()}/none", timeout_s=2)
    store = open_store("pgvector", "kb_down", tmp_path, DIM, connection=settings)
    with pytest.raises(UnavailableError) as err:
        store.count()
    assert "127.0.0.1" not in str(err.value)
