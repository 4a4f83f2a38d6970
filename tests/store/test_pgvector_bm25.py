"""BM25 on the pgvector store when it reads few postings: MaxScore pruning, the kept statistics (every
live row, per version) and the counted ones (per grant) give the embedded store's hits and scores, also
after deletes, expiries and replacements."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lore.config import StoreSettings
from lore.schema import Chunk, SearchFilter
from lore.store import pgvector_bm25
from lore.store.base import StoreQuery, VectorStore, open_store
from tests.chunks import make_chunk
from tests.servers import PgVectorServer

DIM = 4
N = 600
FILTERS = {
    "none": SearchFilter(),
    "version": SearchFilter(version_seq=2),
    "tenant": SearchFilter(tenant_ids=["t1"]),
    "roles_version": SearchFilter(roles=["hr"], version_seq=3),
    "narrowed": SearchFilter(document_ids=[f"d{i}" for i in range(0, 60, 2)]),
    "combined": SearchFilter(tenant_ids=["t0"], sources=["wiki"], version_seq=2),
}


def _corpus(n: int, seed: int) -> tuple[list[Chunk], np.ndarray, list[list[str]]]:
    """Rows of Zipf-drawn words (a few very common ones) plus one word of their own (no two rows tie)."""
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, 201) ** 1.1
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks, tokens = [], []
    for i in range(n):
        first = int(rng.integers(1, 4))
        chunks.append(
            make_chunk(
                chunk_id=f"r{seed}_{i:04d}",
                document_id=f"d{i // 10}",
                chunk_index=i % 10,
                tenant_id=f"t{i % 2}",
                source=["wiki", "drive"][(i // 7) % 2],
                allowed_roles=[[], ["hr"], ["it"]][i % 3],
                valid_from_seq=first,
                valid_to_seq=first + 1 if i % 5 == 0 else 0,
            )
        )
        drawn = rng.choice(200, size=int(rng.integers(6, 20)), p=zipf / zipf.sum())
        tokens.append([f"w{j}" for j in drawn] + [f"own{seed}_{i}"])
    return chunks, vectors, tokens


def _queries(tokens: list[list[str]]) -> list[list[str]]:
    rng = np.random.default_rng(11)
    out = [["w0", "w1"], ["w0", "w0", "w3"], ["w150", "w0"]]  # common tokens alone, a repeat, a rare one
    for r in rng.integers(0, len(tokens), 25):
        own = list(dict.fromkeys(tokens[r]))
        out.append([own[j] for j in rng.choice(len(own), size=min(4, len(own)), replace=False)] + ["w0"])
    return out


def _same(pg: VectorStore, embedded: VectorStore, queries: list[list[str]], k: int) -> None:
    for name, flt in FILTERS.items():
        for tokens in queries:
            query = StoreQuery("bm25", k=k, tokens=tokens, filter=flt)
            want, got = embedded.search(query), pg.search(query)
            assert [h.chunk.chunk_id for h in got] == [h.chunk.chunk_id for h in want], (name, tokens)
            assert [h.bm25_score for h in got] == pytest.approx([h.bm25_score for h in want], rel=1e-6)


@pytest.fixture
def stores(pgvector_server: PgVectorServer, tmp_path: Path) -> tuple[VectorStore, VectorStore]:
    settings = StoreSettings(backend="pgvector", pg_url=pgvector_server.database(str(tmp_path)))
    pg = open_store("pgvector", "kb_prune", tmp_path, DIM, connection=settings)
    embedded = open_store("embedded", "kb_prune", tmp_path, DIM)
    yield pg, embedded
    pg.close()
    embedded.close()


@pytest.mark.parametrize("view_rows", [0, 10**6], ids=["grant-rows-looked-up", "grant-rows-kept"])
def test_pruning_gives_the_exact_top_k(
    stores: tuple[VectorStore, VectorStore], monkeypatch: pytest.MonkeyPatch, view_rows: int
) -> None:
    pg, embedded = stores
    chunks, vectors, tokens = _corpus(N, 0)
    for store in stores:
        for s in range(0, N, 200):
            store.upsert(chunks[s : s + 200], vectors[s : s + 200], tokens[s : s + 200])
    # A small sample (few postings, few rows) gives a weak floor: pruning must stay exact all the same.
    monkeypatch.setattr(pgvector_bm25, "SAMPLE_POSTINGS", 30)
    monkeypatch.setattr(pgvector_bm25, "SAMPLE_ROWS", 5)
    monkeypatch.setattr(pgvector_bm25, "GATHER_ROWS", 0)
    monkeypatch.setattr(pgvector_bm25, "FIRST_LOOKUPS", 1)
    monkeypatch.setattr(pgvector_bm25, "VIEW_ROWS", view_rows)  # 0: a grant's rows are joined, not kept
    skipped: list[int] = []
    real_round = pgvector_bm25._round

    def spy(cur: object, t: object, weights: dict, essential: list, *rest: object) -> dict[int, float]:
        skipped.append(len(weights) - len(essential))
        return real_round(cur, t, weights, essential, *rest)

    monkeypatch.setattr(pgvector_bm25, "_round", spy)
    queries = _queries(tokens)
    for k in (3, 10):
        _same(pg, embedded, queries, k)
    assert sum(n > 0 for n in skipped) > len(skipped) // 4  # many queries read only some tokens' postings


def test_statistics_follow_deletes_expiries_and_replacements(stores: tuple[VectorStore, VectorStore]) -> None:
    pg, embedded = stores
    chunks, vectors, tokens = _corpus(N, 0)
    queries = _queries(tokens)
    for store in stores:
        store.upsert(chunks, vectors, tokens)
    _same(pg, embedded, queries[:8], 10)  # grant statistics counted (and kept) before the writes below
    more, more_vectors, more_tokens = _corpus(200, 1)
    replaced = [make_chunk(**{**c.__dict__, "tenant_id": "t1", "valid_to_seq": 3}) for c in chunks[100:160]]
    for store in stores:
        assert store.delete([c.chunk_id for c in chunks[:50]]) == 50
        assert store.expire([c.chunk_id for c in chunks[200:260]], 2) == sum(
            c.valid_to_seq in (0, 3, 4) for c in chunks[200:260]
        )
        store.upsert(replaced, vectors[100:160], tokens[40:100])  # the same ids, other words
        store.upsert(more, more_vectors, more_tokens)
    assert pg.count() == embedded.count() == N - 50 + 200
    _same(pg, embedded, queries, 10)
