"""The pgvector store at N synthetic chunks in one run: insert rate, HNSW build, dense / BM25 / hybrid
latency, dense recall@10 against an exact scan, the benchmark's grant filter (tenant, roles, version), and
filtered dense and hybrid search at three selectivities (about 0.1 %, 2 % and 30 % of the rows) with filter
violations and recall@10.

    nice -n 10 python benchmarks/pgvector_filters.py --n 100000 --queries 100 [--json-out F]

Uses the corpus of benchmarks/synthetic.py and a PostgreSQL 16 + pgvector server from `pgserver`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from lore.schema import SearchFilter
from lore.store.base import StoreQuery, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import (
    DIM,
    FILTER,
    _exact_dense,
    _pgserver,
    _positions,
    _recall,
    _timed,
    make_corpus,
    make_queries,
)


def filters(n: int) -> dict[str, SearchFilter]:
    """Filters by selectivity on the synthetic corpus: tenants are Zipf-weighted, datasets uniform."""
    docs = (n + 19) // 20  # 20 rows per document
    picked = max(1, round(docs * 0.001))
    return {
        "0.1%": SearchFilter(document_ids=[f"d{i:06d}" for i in range(0, docs, docs // picked)][:picked]),
        "2%": SearchFilter(tenant_ids=["tenant-02"], dataset_ids=["dataset-0"]),
        "30%": SearchFilter(tenant_ids=["tenant-00"]),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--json-out", default="")
    p.add_argument("--ef-sweep", default="", help="hnsw.ef_search values to time unfiltered, e.g. 40,100,400")
    a = p.parse_args()
    corpus = make_corpus(a.n, 0)
    qs = make_queries(corpus, a.n, a.queries + 5, 0)
    warm, qs = qs[:5], qs[5:]
    folder = Path(tempfile.mkdtemp(prefix="pgvector-filters-"))
    server = _pgserver(folder / "pgdata")
    report: dict = {"n": a.n, "queries": len(qs), "load_start": os.getloadavg()}
    try:
        store = open_store("pgvector", "bench", folder, DIM, server.get_uri())
        t0 = time.perf_counter()
        for s in range(0, a.n, a.batch):
            store.upsert(
                corpus.chunks[s : s + a.batch],
                corpus.vectors[s : s + a.batch],
                corpus.tokens[s : s + a.batch],
            )
            print(f"  {s + a.batch} rows, {time.perf_counter() - t0:.0f} s", end="\r", flush=True)
        report["insert_s"] = time.perf_counter() - t0
        report["insert_rows_per_s"] = a.n / report["insert_s"]
        t0 = time.perf_counter()
        store.search(StoreQuery("dense", 10, vector=warm[0].vector))  # builds the HNSW index
        report["index_build_s"] = time.perf_counter() - t0
        report["database_mb"] = _database_mb(server.get_uri())
        print(
            f"inserted {a.n} rows in {report['insert_s']:.0f} s ({report['insert_rows_per_s']:.0f} rows/s), "
            f"index {report['index_build_s']:.0f} s, database {report['database_mb']:.0f} MB",
            flush=True,
        )
        report["unfiltered"] = _unfiltered(store, corpus, qs, warm)
        report["ef_sweep"] = _ef_sweep(store, corpus, qs, warm, [int(v) for v in a.ef_sweep.split(",") if v])
        for name, flt in {"grant (tenant, roles, version)": FILTER, **filters(a.n)}.items():
            report[name] = _filtered(store, corpus, qs, warm, flt)
            r = report[name]
            print(
                f"{name:>5} (actual {r['selectivity']:.3%}): dense k10 p50/p95 {r['dense_k10']['p50']:.1f}/"
                f"{r['dense_k10']['p95']:.1f} ms, hybrid k50 {r['hybrid_k50']['p50']:.1f}/"
                f"{r['hybrid_k50']['p95']:.1f} ms, violations {r['violations']}, "
                f"recall@10 {r['recall@10']:.3f}",
                flush=True,
            )
        report["reopen"] = _reopen(store, folder, server.get_uri(), warm)
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    report["load_end"] = os.getloadavg()
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(report, indent=2), encoding="utf-8")


def _unfiltered(store: object, corpus: object, qs: list, warm: list) -> dict:
    runs = {
        "dense_k10": lambda q: store.search(StoreQuery("dense", 10, vector=q.vector)),
        "bm25_k10": lambda q: store.search(StoreQuery("bm25", 10, tokens=q.tokens)),
        "hybrid_k50": lambda q: store.search(StoreQuery("hybrid", 50, vector=q.vector, tokens=q.tokens)),
    }
    out: dict = {}
    for name, fn in runs.items():
        out[name], hits = _timed(fn, qs, warm)
        if name == "dense_k10":
            found = [_positions(h) for h in hits]
            out["dense_recall@10"] = _recall(found, [_exact_dense(corpus.vectors, None, q, 10) for q in qs])
        print(f"unfiltered {name}: p50/p95 {out[name]['p50']:.1f}/{out[name]['p95']:.1f} ms", flush=True)
    print(f"unfiltered dense recall@10 {out['dense_recall@10']:.3f}", flush=True)
    return out


def _ef_sweep(store: Any, corpus: Any, qs: list, warm: list, values: list[int]) -> dict:
    """Dense and hybrid latency and dense recall@10 at each `hnsw.ef_search`; the default is restored."""
    default, out = store.settings, {}
    exact = [_exact_dense(corpus.vectors, None, q, 10) for q in qs]
    for ef in values:
        store.settings = default.model_copy(update={"pg_ef_search": ef})
        dense, hits = _timed(lambda q: store.search(StoreQuery("dense", 10, vector=q.vector)), qs, warm)
        hybrid, _ = _timed(lambda q: store.search(StoreQuery("hybrid", 50, q.vector, q.tokens)), qs, warm)
        recall = _recall([_positions(h) for h in hits], exact)
        out[ef] = {"dense_k10": dense, "hybrid_k50": hybrid, "dense_recall@10": recall}
        print(
            f"ef_search {ef}: dense k10 p50/p95 {dense['p50']:.1f}/{dense['p95']:.1f} ms, hybrid k50 "
            f"{hybrid['p50']:.1f}/{hybrid['p95']:.1f} ms, dense recall@10 {recall:.3f}",
            flush=True,
        )
    store.settings = default
    return out


def _reopen(store: Any, folder: Path, uri: str, warm: list) -> dict:
    """Seconds to open the store again and answer a first hybrid query; the server's memory (PSS)."""
    store.close()
    t0 = time.perf_counter()
    again = open_store("pgvector", "bench", folder, DIM, uri)
    q = warm[1]
    again.search(StoreQuery("hybrid", 50, q.vector, q.tokens))
    out = {"first_query_s": time.perf_counter() - t0, "server_pss_mb": _server_pss_mb()}
    print(f"reopen + first hybrid {out['first_query_s']:.2f} s, server PSS {out['server_pss_mb']:.0f} MB")
    again.close()
    return out


def _server_pss_mb() -> float:
    """Proportional set size of every postgres process (shared buffers counted once)."""
    total = 0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip().startswith("postgres"):
                for line in (proc / "smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _filtered(store: object, corpus: object, qs: list, warm: list, flt: SearchFilter) -> dict:
    mask = np.array([flt.matches(c) for c in corpus.chunks])
    idx = np.flatnonzero(mask)
    dense_stats, dense_hits = _timed(
        lambda q: store.search(StoreQuery("dense", 10, vector=q.vector, filter=flt)), qs, warm
    )
    hybrid_stats, hybrid_hits = _timed(
        lambda q: store.search(StoreQuery("hybrid", 50, q.vector, q.tokens, filter=flt)), qs, warm
    )
    found = [_positions(h) for h in dense_hits]
    violations = sum(not mask[p] for hits in (dense_hits, hybrid_hits) for h in hits for p in _positions(h))
    return {
        "selectivity": float(mask.mean()),
        "dense_k10": dense_stats,
        "hybrid_k50": hybrid_stats,
        "violations": int(violations),
        "recall@10": _recall(found, [_exact_dense(corpus.vectors, idx, q, 10) for q in qs]),
    }


def _database_mb(uri: str) -> float:
    import psycopg

    with psycopg.connect(uri) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20


if __name__ == "__main__":
    main()
