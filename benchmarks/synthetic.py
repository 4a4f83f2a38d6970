"""Store latency at N synthetic chunks on each backend, next to exact numpy and bm25s baselines.

    python benchmarks/synthetic.py --n 100000 --backends embedded,milvus --queries 200 \
        --milvus-queries 20 --json-out benchmarks/out/synthetic.json --seed 0

On a shared machine set OPENBLAS_NUM_THREADS=1: threaded BLAS waits on busy cores (4 ms ticks).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from lore.config import StoreSettings
from lore.eval.metrics import percentile
from lore.schema import Chunk, Hit, SearchFilter
from lore.store.base import StoreQuery, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from procs import MilvusServer, rss_mb

DIM = 384
LATIN_WORDS, CJK_WORDS = 27_000, 3_000
CENTROIDS, NOISE, QUERY_NOISE = 1_000, 0.06, 0.03
TENANTS, DATASETS, ROLES, VERSIONS = 10, 5, 8, 5
FILTER = SearchFilter(tenant_ids=["tenant-05"], roles=["role-1", "role-4"], version_seq=3)
MODES = ("dense", "bm25", "hybrid", "f_dense", "f_hybrid")
SELECTIVITIES = (0.001, 0.02, 0.3)  # shares of rows the extra document filters let through
RRF_K = 60


@dataclass
class Corpus:
    """Synthetic chunks plus the numpy arrays the baselines filter and scan."""

    chunks: list[Chunk]
    tokens: list[list[str]]
    vectors: np.ndarray
    mask: np.ndarray  # rows passing FILTER
    frequent: list[str]


@dataclass
class Query:
    """One query: a perturbed row vector and a few of that row's words plus a frequent word."""

    vector: np.ndarray
    tokens: list[str]


def _normalise(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def _vocabulary(rng: np.random.Generator) -> list[str]:
    """Pronounceable latin pseudo-words plus 2-character Chinese words, in random Zipf-rank order."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < LATIN_WORDS:
        words["".join(rng.choice(syllables, size=int(rng.integers(2, 5))))] = None
    cjk: dict[str, None] = {}
    while len(cjk) < CJK_WORDS:
        cjk[chr(0x4E00 + int(rng.integers(0, 20900))) + chr(0x4E00 + int(rng.integers(0, 20900)))] = None
    vocab = [*words, *cjk]
    return [vocab[i] for i in rng.permutation(len(vocab))]


def make_corpus(n: int, seed: int) -> Corpus:
    """N chunks of ~210 characters with clustered 384-d vectors and multi-tenant metadata."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    zipf = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    ids = rng.choice(len(vocab), size=(n, 60), p=zipf / zipf.sum())
    lengths = np.array([len(w) + 1 for w in vocab])[ids].cumsum(axis=1) - 1
    counts = np.maximum((lengths <= rng.integers(190, 231, size=(n, 1))).sum(axis=1), 1)
    tokens = [[vocab[j] for j in row[:c]] for row, c in zip(ids.tolist(), counts.tolist(), strict=True)]
    texts = [" ".join(t) for t in tokens]
    centroids = _normalise(rng.standard_normal((CENTROIDS, DIM), dtype=np.float32))
    vectors = centroids[rng.integers(0, CENTROIDS, n)]
    vectors += NOISE * rng.standard_normal((n, DIM), dtype=np.float32)
    vectors = _normalise(vectors)
    tenant_w = 1.0 / np.arange(1, TENANTS + 1)
    tenant = rng.choice(TENANTS, size=n, p=tenant_w / tenant_w.sum())
    dataset = rng.integers(0, DATASETS, n)
    visibility = rng.choice(["public", "internal", "restricted"], size=n, p=[0.3, 0.5, 0.2])
    n_roles = np.where(rng.random(n) < 0.5, 0, rng.integers(1, 3, n))
    roles = np.zeros((n, ROLES), dtype=bool)
    for i in np.flatnonzero(n_roles):
        roles[i, rng.choice(ROLES, size=n_roles[i], replace=False)] = True
    valid_from = rng.integers(1, VERSIONS + 1, n)
    valid_to = np.where(rng.random(n) < 0.85, 0, valid_from + rng.integers(1, 3, n))
    chunks = []
    for i in range(n):
        group = range(i - i % 4, min(i - i % 4 + 4, n))
        chunks.append(
            Chunk(
                chunk_id=f"c{i:07d}",
                text=texts[i],
                parent_id=f"p{i // 4:07d}",
                parent_text="\n".join(texts[j] for j in group),
                kb_id="bench",
                document_id=f"d{i // 20:06d}",
                file_path=f"docs/d{i // 20:06d}.md",
                file_sha256=f"{i // 20:064x}",
                chunk_index=i % 20,
                chunk_schema="synthetic-v1",
                embedding_model="synthetic-384",
                tenant_id=f"tenant-{tenant[i]:02d}",
                dataset_id=f"dataset-{dataset[i]}",
                visibility=str(visibility[i]),
                allowed_roles=[f"role-{r}" for r in np.flatnonzero(roles[i])],
                valid_from_seq=int(valid_from[i]),
                valid_to_seq=int(valid_to[i]),
            )
        )
    seq = FILTER.version_seq or 0
    want_roles = [int(r.split("-")[1]) for r in FILTER.roles or []]
    mask = tenant == int((FILTER.tenant_ids or ["tenant-0"])[0].split("-")[1])
    mask &= ~roles.any(axis=1) | roles[:, want_roles].any(axis=1)
    mask &= (valid_from <= seq) & ((valid_to == 0) | (valid_to > seq))
    return Corpus(chunks, tokens, vectors, mask, vocab[:30])


def make_queries(corpus: Corpus, n_rows: int, count: int, seed: int) -> list[Query]:
    """Queries drawn from the first `n_rows` rows, deterministic for a seed."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for r in rng.integers(0, n_rows, count):
        vec = _normalise(corpus.vectors[r] + QUERY_NOISE * rng.standard_normal(DIM, dtype=np.float32))
        own = list(dict.fromkeys(corpus.tokens[r]))
        words = [
            own[i] for i in rng.choice(len(own), size=min(len(own), int(rng.integers(3, 7))), replace=False)
        ]
        frequent = corpus.frequent[int(rng.integers(0, len(corpus.frequent)))]
        out.append(Query(vec, list(dict.fromkeys([*words, frequent]))))
    return out


def _timed(
    fn: Callable[[Query], Any], queries: Sequence[Query], warmup: Sequence[Query]
) -> tuple[dict, list]:
    for q in warmup:
        fn(q)
    lat, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        results.append(fn(q))
        lat.append((time.perf_counter() - t0) * 1000)
    stats = {"p50": percentile(lat, 50), "p95": percentile(lat, 95), "mean": float(np.mean(lat))}
    return stats, results


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
    return part[np.argsort(-scores[part], kind="stable")]


def _exact_dense(vectors: np.ndarray, idx: np.ndarray | None, q: Query, k: int) -> np.ndarray:
    """Exact top-k positions: full scan, or gather the filtered rows first."""
    if idx is None:
        return _top(vectors @ q.vector, k)
    return idx[_top(vectors[idx] @ q.vector, k)]


def _rrf(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal-rank fusion of two position rankings, in numpy."""
    ids = np.concatenate([a, b])
    w = np.concatenate([1.0 / (RRF_K + np.arange(1, len(a) + 1)), 1.0 / (RRF_K + np.arange(1, len(b) + 1))])
    uniq, inv = np.unique(ids, return_inverse=True)
    return uniq[_top(np.bincount(inv, weights=w), k)]


def _recall(found: Sequence[np.ndarray | list[int]], exact: Sequence[np.ndarray], k: int = 10) -> float:
    got = [
        len(set(map(int, f[:k])) & set(map(int, e[:k]))) / max(min(k, len(e)), 1)
        for f, e in zip(found, exact, strict=True)
    ]
    return float(np.mean(got)) if got else 0.0


def _positions(hits: list[Hit]) -> list[int]:
    return [int(h.chunk.chunk_id[1:]) for h in hits]


def bench_store(
    backend: str,
    corpus: Corpus,
    n_rows: int,
    queries: list[Query],
    warmup: list[Query],
    workdir: Path,
    batch: int,
    bm25_scores: Callable[[Query], np.ndarray] | None,
) -> dict:
    """Insert `n_rows` rows into a fresh store, reopen it, then time every search mode."""
    backend, _, index = backend.partition("/")  # "embedded/exact" or "embedded/ann": the dense index
    folder = Path(tempfile.mkdtemp(prefix=f"{backend}-", dir=workdir))
    server = MilvusServer(folder / "server").start() if backend == "milvus-server" else None
    kind, uri = ("milvus", server.uri) if server else (backend, "")
    pg = _pgserver(folder / "pgdata") if backend == "pgvector" else None  # PostgreSQL 16 + pgvector
    uri = pg.get_uri() if pg else uri
    try:
        gc.collect()
        rss0 = rss_mb()  # the store's memory: this process's growth from here (insert, then reopen)
        store = open_store(kind, "bench", folder, DIM, uri, **_index_kw(index))
        t0 = time.perf_counter()
        for s in range(0, n_rows, batch):
            e = min(s + batch, n_rows)
            store.upsert(corpus.chunks[s:e], corpus.vectors[s:e], corpus.tokens[s:e])
        store.close()
        insert_s = time.perf_counter() - t0
        if server:  # the server loads the collection from disk again, as after a restart
            server.restart()
        fresh = _fresh_open(folder, index, warmup[0].vector) if backend == "embedded" else None
        gc.collect()
        t0 = time.perf_counter()
        store = open_store(kind, "bench", folder, DIM, uri, **_index_kw(index))
        store.search(StoreQuery("dense", 10, vector=warmup[0].vector))  # first search loads the index
        load_s = time.perf_counter() - t0
        memory = {"client_mb": rss_mb() - rss0, "server_mb": server.rss_mb() if server else 0.0}
        runs = {
            "dense": lambda q: store.search(StoreQuery("dense", 10, vector=q.vector)),
            "bm25": lambda q: store.search(StoreQuery("bm25", 10, tokens=q.tokens)),
            "hybrid": lambda q: store.search(StoreQuery("hybrid", 50, vector=q.vector, tokens=q.tokens)),
            "f_dense": lambda q: store.search(StoreQuery("dense", 10, vector=q.vector, filter=FILTER)),
            "f_hybrid": lambda q: store.search(StoreQuery("hybrid", 50, q.vector, q.tokens, filter=FILTER)),
        }
        modes, found = {}, {}
        for name, fn in runs.items():
            modes[name], hits = _timed(fn, queries, warmup)
            found[name] = [_positions(h) for h in hits]
            print(f"  {backend} {name}: p50 {modes[name]['p50']:.1f} ms", flush=True)
        selective = _selectivity_runs(store, corpus.vectors[:n_rows], queries, warmup)
        memory["client_mb"] = max(memory["client_mb"], rss_mb() - rss0)
        memory["server_mb"] = max(memory["server_mb"], server.rss_mb() if server else 0.0)
        store.close()
    finally:
        if server:
            server.stop()
        if pg:
            pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    vectors, mask = corpus.vectors[:n_rows], corpus.mask[:n_rows]
    idx = np.flatnonzero(mask)
    result = {
        "n": n_rows,
        "queries": len(queries),
        "insert_s": insert_s,
        "insert_rows_per_s": n_rows / insert_s,
        "load_s": load_s,
        "memory": memory,
        "fresh_open": fresh,
        "selectivity": float(mask.mean()),
        "modes": modes,
        "dense_recall@10": _recall(found["dense"], [_exact_dense(vectors, None, q, 10) for q in queries]),
        "filtered_recall@10": _recall(found["f_dense"], [_exact_dense(vectors, idx, q, 10) for q in queries]),
        "filter_violations": sum(
            not mask[p] for name in ("f_dense", "f_hybrid") for r in found[name] for p in r
        ),
        "bm25_recall@10_vs_bm25s": None,
        "selective_dense": selective,
    }
    if bm25_scores is not None:  # tie-aware: a hit counts if bm25s scores it at least as high as its 10th
        ok = []
        for q, got in zip(queries, found["bm25"], strict=True):
            full = bm25_scores(q)
            ref = np.sort(full)[::-1][:10]
            ref = ref[ref > 0]
            ok.append(sum(full[p] >= ref[-1] * (1 - 1e-5) for p in got[:10]) / max(len(ref), 1))
        result["bm25_recall@10_vs_bm25s"] = float(np.mean(ok))
    return result


def _index_kw(index: str) -> dict:
    """The embedded store's dense index: `exact` scans every row; `ann` (the default settings) a graph."""
    if not index:
        return {}
    return {"connection": StoreSettings(ann_min_rows=2**62) if index == "exact" else StoreSettings()}


def _fresh_open(folder: Path, index: str, vector: np.ndarray) -> dict:
    """Open the store in a new process, as a restarted server does, and answer 20 dense queries: seconds to
    the first answer and that process's memory from /proc (peak, and resident: its own and mapped files)."""
    code = (
        "import sys, time, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from synthetic import DIM, _index_kw\n"
        "from lore.store.base import StoreQuery, open_store\n"
        "v = np.frombuffer(bytes.fromhex(sys.argv[4]), np.float32)\n"
        "t0 = time.perf_counter()\n"
        "s = open_store('embedded', 'bench', sys.argv[2], DIM, '', **_index_kw(sys.argv[3]))\n"
        "s.search(StoreQuery('dense', 10, vector=v))\n"
        "took = time.perf_counter() - t0\n"
        "rng = np.random.default_rng(1)\n"
        "for _ in range(20):\n"
        "    w = (v + rng.normal(0, 0.05, v.shape)).astype(np.float32)\n"
        "    s.search(StoreQuery('dense', 10, vector=w))\n"
        "status = open('/proc/self/status').read().splitlines()\n"
        "mem = dict(line.split(':', 1) for line in status if line.startswith(('Vm', 'Rss')))\n"
        "print(took, *(int(mem[k].split()[0]) / 1024 for k in ('VmHWM', 'RssAnon', 'RssFile')))\n"
        "s.close()\n"
    )
    args = [
        str(Path(__file__).resolve().parent),
        str(folder),
        index,
        vector.astype(np.float32).tobytes().hex(),
    ]
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    seconds, peak, anon, mapped = map(float, out.stdout.split()[-4:])
    print(
        f"  fresh process: open + first query {seconds:.2f} s; peak RSS {peak:.0f} MB "
        f"(after 20 queries: {anon:.0f} MB its own, {mapped:.0f} MB of mapped files)",
        flush=True,
    )
    return {"open_s": seconds, "peak_rss_mb": peak, "rss_anon_mb": anon, "rss_file_mb": mapped}


def _selectivity_runs(store: Any, vectors: np.ndarray, queries: list[Query], warmup: list[Query]) -> dict:
    """Dense top-10 under document filters letting ~0.1%, 2% and 30% of the rows through: latency,
    recall@10 against an exact scan of the allowed rows, and hits outside the filter."""
    rng, docs = np.random.default_rng(7), (len(vectors) + 19) // 20  # 20 rows per document
    out = {}
    for share in SELECTIVITIES:
        chosen = rng.choice(docs, size=max(1, round(docs * share)), replace=False)
        flt = SearchFilter(document_ids=[f"d{d:06d}" for d in chosen])
        mask = np.isin(np.arange(len(vectors)) // 20, chosen)

        def run(q: Query, flt: SearchFilter = flt) -> list[Hit]:
            return store.search(StoreQuery("dense", 10, vector=q.vector, filter=flt))

        stats, hits = _timed(run, queries, warmup)
        found, idx = [_positions(h) for h in hits], np.flatnonzero(mask)
        out[f"{share:.1%}"] = {
            "rows": len(idx),
            **stats,
            "recall@10": _recall(found, [_exact_dense(vectors, idx, q, 10) for q in queries]),
            "violations": sum(not mask[p] for r in found for p in r),
        }
        print(f"  filtered dense at {share:.1%}: p50 {stats['p50']:.1f} ms", flush=True)
    return out


def _pgserver(data_dir: Path) -> Any:
    """A PostgreSQL server with pgvector from the `pgserver` package (a dev dependency)."""
    import pgserver

    return pgserver.get_server(data_dir, cleanup_mode="stop")


def bench_baselines(corpus: Corpus, queries: list[Query], warmup: list[Query]) -> tuple[dict, Any]:
    """Exact numpy dense scans, a bm25s index over the same tokens, and their RRF fusion."""
    import bm25s  # dev-only dependency, so imported here

    vectors, idx = corpus.vectors, np.flatnonzero(corpus.mask)
    weights = corpus.mask.astype(np.float32)
    gc.collect()
    rss0, t0 = rss_mb(), time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75)  # same constants as Lore's BM25
    retriever.index(corpus.tokens, show_progress=False)
    build_s = time.perf_counter() - t0
    gc.collect()
    bm25s_mb = rss_mb() - rss0

    def lexical(q: Query, k: int, mask: np.ndarray | None = None) -> np.ndarray:
        docs, scores = retriever.retrieve([q.tokens], k=k, show_progress=False, weight_mask=mask)
        return docs[0][scores[0] > 0]

    runs = {
        "dense": lambda q: _exact_dense(vectors, None, q, 10),
        "f_dense": lambda q: _exact_dense(vectors, idx, q, 10),
        "bm25": lambda q: lexical(q, 10),
        "hybrid": lambda q: _rrf(_exact_dense(vectors, None, q, 50), lexical(q, 50), 50),
        "f_hybrid": lambda q: _rrf(_exact_dense(vectors, idx, q, 50), lexical(q, 50, weights), 50),
    }
    modes = {name: _timed(fn, queries, warmup)[0] for name, fn in runs.items()}
    out = {
        "numpy_exact": {
            "dense": modes["dense"],
            "f_dense": modes["f_dense"],
            "memory_mb": vectors.nbytes / 2**20,
        },
        "bm25s": {
            "bm25": modes["bm25"],
            "build_s": build_s,
            "rows_per_s": len(corpus.chunks) / build_s,
            "memory_mb": bm25s_mb,
        },
        "numpy_bm25s_rrf": {"hybrid": modes["hybrid"], "f_hybrid": modes["f_hybrid"]},
    }
    return out, retriever


def run_synthetic(
    n: int,
    backends: list[str],
    queries: int,
    out_dir: Path,
    seed: int = 0,
    *,
    milvus_n: int | None = None,
    milvus_queries: int | None = 20,
    warmup: int = 5,
    batch: int = 5000,
    index: str = "ann",
) -> dict:
    """Run the whole benchmark, print its table and return the report (stores live under `out_dir`)."""
    t0 = time.perf_counter()
    corpus = make_corpus(n, seed)
    print(
        f"generated {n} chunks in {time.perf_counter() - t0:.1f} s; selectivity {corpus.mask.mean():.4f}",
        flush=True,
    )
    all_q = make_queries(corpus, n, warmup + queries, seed)
    baselines, retriever = bench_baselines(corpus, all_q[warmup:], all_q[:warmup])
    report: dict[str, Any] = {
        "n": n,
        "seed": seed,
        "queries": queries,
        "selectivity": float(corpus.mask.mean()),
        "filter": FILTER.__dict__,
        "backends": {},
        "baselines": baselines,
        "machine": _machine(),
    }
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    indexes = index.split(",")  # the embedded store once per dense index asked for
    backends = [
        f"{b}/{i}" if b == "embedded" else b for b in backends for i in (indexes if b == "embedded" else [""])
    ]
    for backend in backends:
        rows = min(n, milvus_n or n) if backend.startswith("milvus") else n
        count = min(queries, milvus_queries or queries) if backend.startswith("milvus") else queries
        qs = make_queries(corpus, rows, warmup + count, seed) if rows != n else all_q[: warmup + count]

        def scores(q: Query) -> np.ndarray:
            return retriever.get_scores(q.tokens)

        print(f"{backend}: inserting {rows} rows, {count} queries per mode", flush=True)
        report["backends"][backend] = bench_store(
            backend,
            corpus,
            rows,
            qs[warmup:],
            qs[:warmup],
            Path(out_dir),
            batch,
            scores if rows == n else None,
        )
    embedded = [b for name, b in report["backends"].items() if name.startswith("embedded")]
    emb, rrf_base = (embedded or [None])[-1], baselines["numpy_bm25s_rrf"]["hybrid"]["p50"]
    if emb:
        parts = baselines["numpy_exact"]["dense"]["p50"] + baselines["bm25s"]["bm25"]["p50"]
        report["ratios"] = {
            "embedded_hybrid_p50_over_rrf_baseline_p50": emb["modes"]["hybrid"]["p50"] / rrf_base,
            "embedded_hybrid_p50_over_dense_plus_bm25s_p50": emb["modes"]["hybrid"]["p50"] / parts,
        }
    print_table(report)
    return report


def _machine() -> dict:
    """CPU count, load and BLAS thread settings: multi-threaded BLAS on a busy box inflates latency."""
    env = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0], **env}


def _pair(stats: dict | None) -> str:
    return f"{stats['p50']:.1f} / {stats['p95']:.1f}" if stats else "-"


def print_table(report: dict) -> None:
    """One row per backend and per baseline; latencies as p50 / p95 in ms; memory as RSS growth in MB
    (this process + a server's processes)."""
    table = Table(
        title=f"Store latency, synthetic chunks (ms p50 / p95), filter selectivity "
        f"{report['selectivity']:.2%}"
    )
    cols = ("backend", "N", "Q", "insert rows/s", "open/load s", "RSS MB", "dense k10", "bm25 k10")
    cols += ("hybrid k50", "filt dense k10", "filt hybrid k50", "filt recall@10", "dense recall@10")
    for col in cols:
        table.add_column(col, justify="left" if col == "backend" else "right")
    for name, b in report["backends"].items():
        m, mem = b["modes"], b["memory"]
        table.add_row(
            name,
            str(b["n"]),
            str(b["queries"]),
            f"{b['insert_rows_per_s']:,.0f}",
            f"{b['load_s']:.2f}",
            f"{mem['client_mb']:,.0f}" + (f" + {mem['server_mb']:,.0f}" if mem["server_mb"] else ""),
            *(_pair(m[k]) for k in MODES),
            f"{b['filtered_recall@10']:.3f}",
            f"{b['dense_recall@10']:.3f}",
        )
    base, n, q, no = report["baselines"], str(report["n"]), str(report["queries"]), "-"
    exact, lex, rrf = base["numpy_exact"], base["bm25s"], base["numpy_bm25s_rrf"]
    table.add_row("numpy exact", n, q, no, no, f"{exact['memory_mb']:,.0f}", _pair(exact["dense"]), no, no,
                  _pair(exact["f_dense"]), no, "1.000", "1.000")  # fmt: skip
    lex_rate, lex_build, lex_mb = (
        f"{lex['rows_per_s']:,.0f}",
        f"{lex['build_s']:.2f}",
        f"{lex['memory_mb']:,.0f}",
    )
    table.add_row("bm25s", n, q, lex_rate, lex_build, lex_mb,
                  no, _pair(lex["bm25"]), no, no, no, no, no)  # fmt: skip
    table.add_row("numpy+bm25s RRF", n, q, no, no, no, no, no, _pair(rrf["hybrid"]), no,
                  _pair(rrf["f_hybrid"]), no, no)  # fmt: skip
    console = Console(width=200)
    console.print(table)
    for name, b in report["backends"].items():
        console.print(
            f"{name}: N={b['n']}, selectivity {b['selectivity']:.2%}, insert {b['insert_s']:.1f} s, "
            f"filter violations {b['filter_violations']}, "
            f"bm25 recall@10 vs bm25s (tie-aware) {b['bm25_recall@10_vs_bm25s']}"
        )
        for share, r in b.get("selective_dense", {}).items():
            console.print(
                f"  {name} dense k10 filtered to {share} ({r['rows']} rows): "
                f"{r['p50']:.1f} / {r['p95']:.1f} ms, recall@10 {r['recall@10']:.3f}, "
                f"violations {r['violations']}"
            )
    console.print(f"machine: {report['machine']}")
    for key, value in report.get("ratios", {}).items():
        console.print(f"{key}: {value:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="chunks in the corpus")
    p.add_argument("--backends", default="embedded,milvus", help="embedded, milvus, milvus-server, pgvector")
    p.add_argument("--queries", type=int, default=200, help="timed queries per mode")
    p.add_argument("--milvus-n", type=int, default=0, help="cap the rows inserted into milvus (0 = N)")
    p.add_argument("--milvus-queries", type=int, default=20, help="cap the timed queries on milvus (0 = all)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=5000, help="rows per upsert")
    p.add_argument(
        "--out-dir", default="benchmarks/out/synthetic-stores", help="where the temporary stores live"
    )
    p.add_argument("--json-out", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index", default="ann", help="embedded store's dense index: exact, ann or exact,ann")
    a = p.parse_args()
    report = run_synthetic(
        a.n,
        [b for b in a.backends.split(",") if b],
        a.queries,
        Path(a.out_dir),
        a.seed,
        milvus_n=a.milvus_n or None,
        milvus_queries=a.milvus_queries or None,
        warmup=a.warmup,
        batch=a.batch,
        index=a.index,
    )
    if a.json_out:
        Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json_out).write_text(json.dumps(report, indent=2, default=float), encoding="utf-8")


if __name__ == "__main__":
    main()
