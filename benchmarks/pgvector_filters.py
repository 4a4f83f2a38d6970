"""The pgvector store at N synthetic chunks: filtered dense and hybrid search at three filter selectivities
(about 0.1 %, 2 % and 30 % of the rows), with filter violations and recall@10 against an exact scan.

    nice -n 10 python benchmarks/pgvector_filters.py --n 100000 --queries 100 [--json-out F]

Uses the corpus of benchmarks/synthetic.py and a PostgreSQL 16 + pgvector server from `pgserver`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from lore.schema import SearchFilter
from lore.store.base import StoreQuery, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import DIM, _exact_dense, _pgserver, _positions, _recall, _timed, make_corpus, make_queries

FILTERS = {  # selectivities on the synthetic corpus: tenants are Zipf-weighted, datasets uniform
    "0.1%": SearchFilter(document_ids=[f"d{i:06d}" for i in range(0, 500, 100)]),  # 5 documents x 20 rows
    "2%": SearchFilter(tenant_ids=["tenant-02"], dataset_ids=["dataset-0"]),
    "30%": SearchFilter(tenant_ids=["tenant-00"]),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--json-out", default="")
    a = p.parse_args()
    corpus = make_corpus(a.n, 0)
    qs = make_queries(corpus, a.n, a.queries + 5, 0)
    warm, qs = qs[:5], qs[5:]
    folder = Path(tempfile.mkdtemp(prefix="pgvector-filters-"))
    server = _pgserver(folder / "pgdata")
    report: dict = {"n": a.n, "queries": len(qs)}
    try:
        store = open_store("pgvector", "bench", folder, DIM, server.get_uri())
        t0 = time.perf_counter()
        for s in range(0, a.n, a.batch):
            store.upsert(
                corpus.chunks[s : s + a.batch],
                corpus.vectors[s : s + a.batch],
                corpus.tokens[s : s + a.batch],
            )
        report["insert_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.search(StoreQuery("dense", 10, vector=warm[0].vector))  # builds the HNSW index
        report["index_build_s"] = time.perf_counter() - t0
        print(f"inserted {a.n} rows in {report['insert_s']:.0f} s, index {report['index_build_s']:.0f} s")
        for name, flt in FILTERS.items():
            mask = np.array([flt.matches(c) for c in corpus.chunks])
            idx = np.flatnonzero(mask)
            dense_stats, dense_hits = _timed(
                lambda q, f=flt: store.search(StoreQuery("dense", 10, vector=q.vector, filter=f)), qs, warm
            )
            hybrid_stats, hybrid_hits = _timed(
                lambda q, f=flt: store.search(StoreQuery("hybrid", 50, q.vector, q.tokens, filter=f)),
                qs,
                warm,
            )
            found = [_positions(h) for h in dense_hits]
            violations = sum(
                not mask[p] for hits in (dense_hits, hybrid_hits) for h in hits for p in _positions(h)
            )
            report[name] = {
                "selectivity": float(mask.mean()),
                "dense_k10": dense_stats,
                "hybrid_k50": hybrid_stats,
                "violations": int(violations),
                "recall@10": _recall(found, [_exact_dense(corpus.vectors, idx, q, 10) for q in qs]),
            }
            r = report[name]
            print(
                f"{name:>5} (actual {r['selectivity']:.3%}): dense k10 p50/p95 {dense_stats['p50']:.1f}/"
                f"{dense_stats['p95']:.1f} ms, "
                f"hybrid k50 {hybrid_stats['p50']:.1f}/{hybrid_stats['p95']:.1f} ms, "
                f"violations {r['violations']}, recall@10 {r['recall@10']:.3f}",
                flush=True,
            )
        store.close()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
